"""How `QdrantServerStore` talks to a Qdrant server: every call under a deadline, transient failures of idempotent
calls retried, all transport and server errors mapped to `BackendUnavailable` (`ServerCalls`); and the
collection of one embedding model: its name, its creation, the model it records and its payload indexes
(`ensure_collection`).

Needs Qdrant >= 1.16 (collection metadata and conditional upserts).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, TypeVar

import anyio
import grpc  # type: ignore[import-untyped]
import httpx
from qdrant_client import AsyncQdrantClient
from qdrant_client import models as qm
from qdrant_client.common.client_exceptions import QdrantException
from qdrant_client.http.exceptions import ApiException, ResponseHandlingException, UnexpectedResponse
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from memory.errors import BackendUnavailable, StoreConfigMismatch
from memory.stores.common import DENSE, SPARSE
from memory.stores.payload import FLOAT_FIELDS, KEYWORD_FIELDS, TENANT_FIELD

APP = "hindsight"
DEFAULT_TIMEOUT = 5.0
RETRY_ATTEMPTS = 3
T = TypeVar("T")

_PREFIX_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
_NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,254}")
_RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504})
_RETRYABLE_GRPC = frozenset({"UNAVAILABLE", "DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED", "ABORTED"})
# Everything a client call can fail with when the server is down, slow, overloaded or refuses the request.
_BACKEND_ERRORS: tuple[type[BaseException], ...] = (
    ApiException,
    QdrantException,
    httpx.HTTPError,
    grpc.RpcError,
    OSError,
    TimeoutError,
)


def collection_name(prefix: str, model_id: str, dimension: int) -> str:
    """`<prefix>_<model slug>_<dimension>d`, e.g. `hindsight_wordllama_l2_supercat_256_256d`.

    The slug lowercases the model id and squeezes every other run of characters into `_`, so two ids can share
    a name ("BAAI/bge" and "baai-bge"); the model id recorded in the collection tells them apart at open.
    """
    if not _PREFIX_PATTERN.fullmatch(prefix):
        raise ValueError("collection prefix must match [A-Za-z0-9][A-Za-z0-9_-]{0,63}")
    if dimension < 1:
        raise ValueError("dimension must be positive")
    slug = re.sub(r"[^a-z0-9]+", "_", model_id.lower()).strip("_")[:160] or "model"
    return f"{prefix}_{slug}_{dimension}d"


def check_collection_name(name: str) -> str:
    if not _NAME_PATTERN.fullmatch(name):
        raise ValueError("collection name must match [A-Za-z0-9][A-Za-z0-9_.-]{0,254}")
    return name


def _is_transient(exc: BaseException) -> bool:
    """Worth another attempt: the server was unreachable, slow or overloaded, not a refused request."""
    if isinstance(exc, UnexpectedResponse):
        return exc.status_code in _RETRYABLE_STATUS
    if isinstance(exc, grpc.RpcError):
        code = exc.code() if callable(getattr(exc, "code", None)) else None
        return getattr(code, "name", None) in _RETRYABLE_GRPC
    return isinstance(exc, ResponseHandlingException | QdrantException | httpx.TransportError | OSError | TimeoutError)


class ServerCalls:
    """Runs the calls of one client: each attempt under `timeout` seconds, idempotent ones retried."""

    def __init__(self, client: AsyncQdrantClient, timeout: float) -> None:
        self.client = client
        self._timeout = timeout
        self._closed = False

    async def __call__(self, fn: Callable[[], Awaitable[T]], *, idempotent: bool = True) -> T:
        """Run one client call under a deadline; retry transient failures of idempotent calls."""
        if self._closed:
            raise BackendUnavailable("vector store is closed")
        try:
            async for attempt in AsyncRetrying(
                stop=stop_after_attempt(RETRY_ATTEMPTS if idempotent else 1),
                wait=wait_exponential_jitter(initial=0.05, max=0.5, jitter=0.05),
                retry=retry_if_exception(_is_transient),
                reraise=True,
            ):
                with attempt:
                    with anyio.fail_after(self._timeout):
                        return await fn()
        except _BACKEND_ERRORS as exc:
            raise BackendUnavailable(f"vector store error: {type(exc).__name__}") from exc
        raise AssertionError("unreachable: tenacity either returns or reraises")

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            await self.client.close()


async def ensure_collection(calls: ServerCalls, name: str, model_id: str, dimension: int) -> None:
    """Create the collection if it is missing, refuse one built for another model, add missing indexes."""
    client = calls.client
    if not await calls(lambda: client.collection_exists(name)):
        try:
            await calls(
                lambda: client.create_collection(
                    name,
                    vectors_config={DENSE: qm.VectorParams(size=dimension, distance=qm.Distance.COSINE)},
                    sparse_vectors_config={SPARSE: qm.SparseVectorParams(modifier=qm.Modifier.IDF)},
                    metadata={
                        "app": APP,
                        "embedding_model": model_id,
                        "dimension": dimension,
                        "dense_vector": DENSE,
                        "sparse_vector": SPARSE,
                    },
                ),
                idempotent=False,
            )
        except BackendUnavailable:
            # another replica may have created it between our check and our create
            if not await calls(lambda: client.collection_exists(name)):
                raise
    info = await calls(lambda: client.get_collection(name))
    _check_config(name, info, model_id, dimension)
    existing = set(info.payload_schema or {})
    wanted: list[tuple[str, Any]] = [
        (TENANT_FIELD, qm.KeywordIndexParams(type=qm.KeywordIndexType.KEYWORD, is_tenant=True)),
        *((field, qm.PayloadSchemaType.KEYWORD) for field in KEYWORD_FIELDS),
        *((field, qm.PayloadSchemaType.FLOAT) for field in FLOAT_FIELDS),
    ]
    for field, schema in wanted:
        if field not in existing:
            await calls(partial(client.create_payload_index, name, field, schema))


def _check_config(name: str, info: qm.CollectionInfo, model_id: str, dimension: int) -> None:
    metadata = info.config.metadata or {}
    if metadata.get("app") != APP:
        raise StoreConfigMismatch(
            f"collection {name} exists but records no hindsight embedding model "
            "(created by something else, or a Qdrant server older than 1.16); use another collection"
        )
    vectors = info.config.params.vectors
    dense = vectors.get(DENSE) if isinstance(vectors, dict) else None
    stored_model, stored_dimension = metadata.get("embedding_model"), metadata.get("dimension")
    if stored_model != model_id or stored_dimension != dimension or dense is None or dense.size != dimension:
        raise StoreConfigMismatch(
            f"collection {name} was built with {stored_model} ({stored_dimension}-d) but the "
            f"configured embedder is {model_id} ({dimension}-d); use the same model or another collection"
        )

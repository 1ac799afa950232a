"""`RemoteEmbedder`: any OpenAI-compatible `/v1/embeddings` API (a hosted model, a local inference server).

Texts go in batches; each request has a timeout and is retried with exponential backoff and jitter on connection
errors, timeouts, 408, 409, 429 and 5xx (`memory.clients.openai_api`; embedding is idempotent). Anything else, or
retries running out, is a retryable `BackendUnavailable` for the caller. The vector size is learnt from the
first answer unless configured.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import httpx2

from memory.clients.openai_api import endpoint, http_client, post_json, retrying
from memory.errors import BackendUnavailable, InvalidArgument

API = "embedding API"


@dataclass(frozen=True, slots=True)
class RemoteEmbedderConfig:
    base_url: str
    model: str
    api_key: str | None = None
    dimension: int | None = None
    batch_size: int = 64
    timeout_seconds: float = 10.0
    attempts: int = 3
    query_prefix: str = ""
    document_prefix: str = ""


class RemoteEmbedder:
    def __init__(self, config: RemoteEmbedderConfig, client: httpx2.AsyncClient | None = None) -> None:
        self._url = endpoint(config.base_url, "/embeddings", "remote embedder")
        if config.batch_size < 1 or config.attempts < 1:
            raise InvalidArgument("batch_size and attempts must be at least 1")
        self.config = config
        self._client = client or http_client(config.api_key, config.timeout_seconds)
        self._dimension = config.dimension

    @property
    def model_id(self) -> str:
        return f"remote:{self.config.model}"

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            raise BackendUnavailable("the remote embedder's dimension is not known yet; call probe() first")
        return self._dimension

    async def probe(self) -> None:
        """Learn the vector size with one request (at startup), so the store can check it."""
        if self._dimension is None:
            await self.embed_query("dimension probe")

    async def _post(self, texts: list[str]) -> list[list[float]]:
        answer = await post_json(self._client, self._url, {"model": self.config.model, "input": texts}, API)
        try:
            data: list[dict[str, Any]] = sorted(answer["data"], key=lambda item: item["index"])
            vectors = [[float(x) for x in item["embedding"]] for item in data]
        except (ValueError, KeyError, TypeError) as exc:
            raise BackendUnavailable(f"{API} answered an unexpected body") from exc
        if len(vectors) != len(texts):
            raise BackendUnavailable(f"{API} answered a different number of vectors")
        return vectors

    async def _embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.config.batch_size):
            batch = list(texts[start : start + self.config.batch_size])
            vectors += await retrying(partial(self._post, batch), self.config.attempts, API, initial=0.05, maximum=1.0)
        for vector in vectors:
            if self._dimension is None:
                self._dimension = len(vector)
            elif len(vector) != self._dimension:
                raise BackendUnavailable(f"{API} answered {len(vector)}-d vectors, expected {self._dimension}")
        return vectors

    async def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return await self._embed([self.config.document_prefix + t for t in texts]) if texts else []

    async def embed_query(self, text: str) -> list[float]:
        return (await self._embed([self.config.query_prefix + text]))[0]

    async def close(self) -> None:
        await self._client.aclose()

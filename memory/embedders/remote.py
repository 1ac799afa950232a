"""`RemoteEmbedder`: any OpenAI-compatible `/v1/embeddings` API (a hosted model, a local inference server).

Texts go in batches; each request has a timeout and is retried with exponential backoff and jitter on
connection errors, timeouts, 429 and 5xx (embedding is idempotent). Anything else, or retries running out, is a
retryable `BackendUnavailable` for the caller. The vector size is learnt from the first answer unless configured.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx2
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from memory.errors import BackendUnavailable, InvalidArgument

RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})


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


class _Retryable(Exception):
    pass


class RemoteEmbedder:
    def __init__(self, config: RemoteEmbedderConfig, client: httpx2.AsyncClient | None = None) -> None:
        if not config.base_url.startswith(("http://", "https://")):
            raise InvalidArgument("the remote embedder URL must be http(s)://...")
        if config.batch_size < 1 or config.attempts < 1:
            raise InvalidArgument("batch_size and attempts must be at least 1")
        self.config = config
        headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
        self._client = client or httpx2.AsyncClient(headers=headers, timeout=config.timeout_seconds)
        self._url = config.base_url.rstrip("/") + ("" if config.base_url.rstrip("/").endswith("/v1") else "/v1")
        self._url += "/embeddings"
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
        body = {"model": self.config.model, "input": texts}
        try:
            response = await self._client.post(self._url, json=body)
        except (httpx2.TimeoutException, httpx2.TransportError) as exc:
            raise _Retryable(type(exc).__name__) from exc
        if response.status_code in RETRY_STATUS:
            raise _Retryable(f"HTTP {response.status_code}")
        if response.status_code != 200:
            raise BackendUnavailable(f"embedding API answered HTTP {response.status_code}")
        try:
            data: list[dict[str, Any]] = sorted(response.json()["data"], key=lambda item: item["index"])
            vectors = [[float(x) for x in item["embedding"]] for item in data]
        except (ValueError, KeyError, TypeError) as exc:
            raise BackendUnavailable("embedding API answered an unexpected body") from exc
        if len(vectors) != len(texts):
            raise BackendUnavailable("embedding API answered a different number of vectors")
        return vectors

    async def _embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.config.batch_size):
            batch = list(texts[start : start + self.config.batch_size])
            try:
                async for attempt in AsyncRetrying(
                    stop=stop_after_attempt(self.config.attempts),
                    wait=wait_exponential_jitter(initial=0.05, max=1.0),
                    retry=retry_if_exception(lambda exc: isinstance(exc, _Retryable)),
                    reraise=True,
                ):
                    with attempt:
                        vectors += await self._post(batch)
            except _Retryable as exc:
                raise BackendUnavailable(f"embedding API unavailable: {exc}") from exc
        for vector in vectors:
            if self._dimension is None:
                self._dimension = len(vector)
            elif len(vector) != self._dimension:
                raise BackendUnavailable(f"embedding API answered {len(vector)}-d vectors, expected {self._dimension}")
        return vectors

    async def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return await self._embed([self.config.document_prefix + t for t in texts]) if texts else []

    async def embed_query(self, text: str) -> list[float]:
        return (await self._embed([self.config.query_prefix + text]))[0]

    async def close(self) -> None:
        await self._client.aclose()

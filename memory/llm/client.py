"""`ChatClient`: one OpenAI-compatible `/v1/chat/completions` API (base URL, model, optional key), shared by every
use of the optional LLM (`summaries`, `importance`).

It owns the HTTP connection pool, the request timeout and the retries: connection errors, timeouts, 408, 429 and
5xx are retried with jittered exponential backoff; any failure, including an empty or malformed answer, raises
`BackendUnavailable`, so callers have one error to fall back on.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import TracebackType

import httpx2
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_exponential_jitter

from memory.errors import BackendUnavailable, InvalidArgument

RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})


@dataclass(frozen=True, slots=True)
class ChatConfig:
    base_url: str
    model: str
    api_key: str | None = None
    timeout_seconds: float = 30.0
    attempts: int = 3  # per call, unless the call says otherwise
    max_tokens: int = 200  # per answer, unless the call says otherwise


class _Retryable(Exception):
    pass


class ChatClient:
    def __init__(self, config: ChatConfig, client: httpx2.AsyncClient | None = None) -> None:
        if not config.base_url.startswith(("http://", "https://")):
            raise InvalidArgument("the LLM URL must be http(s)://...")
        self.config = config
        headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
        self._client = client or httpx2.AsyncClient(headers=headers, timeout=config.timeout_seconds)
        base = config.base_url.rstrip("/")
        self._url = base + ("" if base.endswith("/v1") else "/v1") + "/chat/completions"

    async def complete(
        self, system: str, user: str, *, max_tokens: int | None = None, attempts: int | None = None
    ) -> str:
        """The model's answer (stripped, never empty) to one system + user message, at temperature 0."""
        body = {
            "model": self.config.model,
            "max_tokens": max_tokens or self.config.max_tokens,
            "temperature": 0,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
        }
        try:
            async for attempt in AsyncRetrying(
                stop=stop_after_attempt(attempts or self.config.attempts),
                wait=wait_exponential_jitter(initial=0.1, max=2.0),
                retry=retry_if_exception_type(_Retryable),
                reraise=True,
            ):
                with attempt:
                    return await self._post(body)
        except _Retryable as exc:
            raise BackendUnavailable(f"LLM API unavailable: {exc}") from exc
        raise BackendUnavailable("LLM API gave no answer")  # pragma: no cover - the loop returns or raises

    async def _post(self, body: dict[str, object]) -> str:
        try:
            response = await self._client.post(self._url, json=body)
        except (httpx2.TimeoutException, httpx2.TransportError) as exc:
            raise _Retryable(type(exc).__name__) from exc
        if response.status_code in RETRY_STATUS:
            raise _Retryable(f"HTTP {response.status_code}")
        if response.status_code != 200:
            raise BackendUnavailable(f"LLM API answered HTTP {response.status_code}")
        try:
            content = response.json()["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise BackendUnavailable("LLM API answered an unexpected body") from exc
        text = content.strip() if isinstance(content, str) else ""
        if not text:
            raise BackendUnavailable("LLM API answered an empty message")
        return text

    async def close(self) -> None:
        await self._client.aclose()

    async def __aenter__(self) -> ChatClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

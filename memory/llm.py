"""`ChatSummarizer`: optional summaries from an LLM behind an OpenAI-compatible `/v1/chat/completions` API.

Used by consolidation when configured (`HINDSIGHT_LLM_URL`, `_MODEL`, `_API_KEY`). Requests time out and are
retried with backoff on connection errors, 429 and 5xx; any failure raises `BackendUnavailable`, and callers
fall back to the extractive summary, so consolidation never depends on the LLM being up.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import httpx2
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from memory.errors import BackendUnavailable, InvalidArgument

SYSTEM_PROMPT = (
    "You consolidate an assistant's memories. Given related statements about a user or their work, write one "
    "short, self-contained fact or preference that captures what they have in common. Keep names, numbers and "
    "dates. Answer with the statement only."
)
RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})


@dataclass(frozen=True, slots=True)
class ChatConfig:
    base_url: str
    model: str
    api_key: str | None = None
    timeout_seconds: float = 30.0
    attempts: int = 3
    max_tokens: int = 200


class _Retryable(Exception):
    pass


class ChatSummarizer:
    def __init__(self, config: ChatConfig, client: httpx2.AsyncClient | None = None) -> None:
        if not config.base_url.startswith(("http://", "https://")):
            raise InvalidArgument("the LLM URL must be http(s)://...")
        self.config = config
        headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
        self._client = client or httpx2.AsyncClient(headers=headers, timeout=config.timeout_seconds)
        base = config.base_url.rstrip("/")
        self._url = base + ("" if base.endswith("/v1") else "/v1") + "/chat/completions"

    async def summarise(self, statements: Sequence[str]) -> str:
        """One consolidated statement for `statements`."""
        body = {
            "model": self.config.model,
            "max_tokens": self.config.max_tokens,
            "temperature": 0,
            "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": "\n".join(f"- {s}" for s in statements)},
            ],
        }
        try:
            async for attempt in AsyncRetrying(
                stop=stop_after_attempt(self.config.attempts),
                wait=wait_exponential_jitter(initial=0.1, max=2.0),
                retry=retry_if_exception(lambda exc: isinstance(exc, _Retryable)),
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
            text = str(response.json()["choices"][0]["message"]["content"]).strip()
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise BackendUnavailable("LLM API answered an unexpected body") from exc
        if not text:
            raise BackendUnavailable("LLM API answered an empty summary")
        return text

    async def close(self) -> None:
        await self._client.aclose()

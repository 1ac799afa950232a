"""`ChatClient`: one OpenAI-compatible `/v1/chat/completions` API (base URL, model, optional key), shared by every
use of the optional LLM (`summaries`, `importance`).

It owns the HTTP connection pool and the request timeout; retries follow `memory.clients.openai_api`. Any failure,
including an empty or malformed answer, raises `BackendUnavailable`, so callers have one error to fall back on.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import TracebackType

import httpx2

from memory.clients.openai_api import endpoint, http_client, post_json, retrying
from memory.errors import BackendUnavailable

API = "LLM API"


@dataclass(frozen=True, slots=True)
class ChatConfig:
    base_url: str
    model: str
    api_key: str | None = None
    timeout_seconds: float = 30.0
    attempts: int = 3  # per call, unless the call says otherwise
    max_tokens: int = 200  # per answer, unless the call says otherwise


class ChatClient:
    def __init__(self, config: ChatConfig, client: httpx2.AsyncClient | None = None) -> None:
        self._url = endpoint(config.base_url, "/chat/completions", "LLM")
        self.config = config
        self._client = client or http_client(config.api_key, config.timeout_seconds)

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
        answer = await retrying(
            lambda: post_json(self._client, self._url, body, API), attempts or self.config.attempts, API
        )
        try:
            content = answer["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError) as exc:
            raise BackendUnavailable(f"{API} answered an unexpected body") from exc
        text = content.strip() if isinstance(content, str) else ""
        if not text:
            raise BackendUnavailable(f"{API} answered an empty message")
        return text

    async def close(self) -> None:
        await self._client.aclose()

    async def __aenter__(self) -> ChatClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

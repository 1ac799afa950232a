"""Calls to OpenAI-compatible HTTP APIs (the remote embedder's `/v1/embeddings`, the optional LLM's
`/v1/chat/completions`): the endpoint and client setup, one JSON POST with its failure classified, and the retry
loop around it.

Connection errors, timeouts, 408, 409, 429 and 5xx are retried with jittered exponential backoff; any other
answer fails at once. Every failure ends as `BackendUnavailable`, which callers turn into a retryable error or a
fallback.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import httpx2
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_exponential_jitter

from memory import cpu_meter
from memory.errors import BackendUnavailable, InvalidArgument

RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
T = TypeVar("T")


class Retryable(Exception):
    """A failure worth another attempt (raised by `post_json`, consumed by `retrying`)."""


def endpoint(base_url: str, path: str, api: str) -> str:
    """`base_url` (with or without its `/v1`) joined with an API path such as "/embeddings"."""
    if not base_url.startswith(("http://", "https://")):
        raise InvalidArgument(f"the {api} URL must be http(s)://...")
    base = base_url.rstrip("/")
    return base + ("" if base.endswith("/v1") else "/v1") + path


def http_client(api_key: str | None, timeout_seconds: float) -> httpx2.AsyncClient:
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    return httpx2.AsyncClient(headers=headers, timeout=timeout_seconds)


async def post_json(client: httpx2.AsyncClient, url: str, body: dict[str, Any], api: str) -> Any:
    """The decoded JSON answer of one POST; `Retryable` or `BackendUnavailable` when there is none."""
    try:
        async with cpu_meter.waiting_elsewhere():  # no CPU of ours meanwhile: the tenant's turn goes to another call
            response = await client.post(url, json=body)
    except (httpx2.TimeoutException, httpx2.TransportError) as exc:
        raise Retryable(type(exc).__name__) from exc
    if response.status_code in RETRY_STATUS:
        raise Retryable(f"HTTP {response.status_code}")
    if response.status_code != 200:
        raise BackendUnavailable(f"{api} answered HTTP {response.status_code}")
    try:
        return response.json()
    except ValueError as exc:
        raise BackendUnavailable(f"{api} answered an unexpected body") from exc


async def retrying(
    call: Callable[[], Awaitable[T]], attempts: int, api: str, *, initial: float = 0.1, maximum: float = 2.0
) -> T:
    """`call()`, retried on `Retryable` up to `attempts` times in all."""
    try:
        async for attempt in AsyncRetrying(
            stop=stop_after_attempt(attempts),
            wait=wait_exponential_jitter(initial=initial, max=maximum),
            retry=retry_if_exception_type(Retryable),
            reraise=True,
        ):
            with attempt:
                return await call()
    except Retryable as exc:
        raise BackendUnavailable(f"{api} unavailable: {exc}") from exc
    raise BackendUnavailable(f"{api} gave no answer")  # pragma: no cover - the loop returns or raises

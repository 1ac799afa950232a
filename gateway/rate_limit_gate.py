"""Rate limiting in front of `/mcp`: token buckets per subject and per tenant, reads and writes separately.

The gate reads the JSON-RPC body once (and replays it to the MCP app), classifies the call as a read or a write
(`tools/call` of a mutating tool is a write; everything else is a read), and takes one token from the caller's
subject bucket and tenant bucket atomically. Over the limit: HTTP 429 with `Retry-After`. When the limiter's
backend is down it fails open (the default, logged) or answers 503 with `Retry-After`, as configured. The gate
also carries the `Idempotency-Key` header to the tools.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable

import pydantic_core
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.request_context import idempotency_key_header
from memory.errors import BackendUnavailable
from ops.config import Settings, TenantLimits
from tenancy import Principal, principal_from_access_token
from tenancy.limits import Bucket, RateLimiter, tenant_prefix

logger = logging.getLogger("hindsight.ratelimit")

MUTATING_TOOLS = frozenset(
    {
        "write_memory",
        "forget_memory",
        "restore_memory",
        "record_turn",
        "update_working_memory",
        "import_memories",
        "purge_namespace",
        "consolidate",
    }
)


def classify(body: bytes) -> str:
    """'write' for a call of a mutating tool, else 'read'. The body is parsed by the very parser the MCP app
    uses (pydantic-core's, with its nesting limit), so a body it refuses (malformed, or nested deeper than it
    allows) counts as a read here and gets the app's JSON-RPC parse error (HTTP 400), never a RecursionError."""
    try:
        message = pydantic_core.from_json(body)
    except ValueError:
        return "read"
    messages = message if isinstance(message, list) else [message]
    for item in messages:
        if isinstance(item, dict) and item.get("method") == "tools/call":
            params = item.get("params")
            if isinstance(params, dict) and params.get("name") in MUTATING_TOOLS:
                return "write"
    return "read"


def buckets_for(principal: Principal, kind: str, settings: Settings) -> list[Bucket]:
    limits: TenantLimits = settings.rate_limit_tenants.get(principal.tenant, settings.rate_limit_default)
    per_minute = {
        ("subject", "read"): limits.subject_read_per_minute,
        ("subject", "write"): limits.subject_write_per_minute,
        ("tenant", "read"): limits.tenant_read_per_minute,
        ("tenant", "write"): limits.tenant_write_per_minute,
    }
    prefix = f"{tenant_prefix(principal.tenant)}:rl"
    result = []
    for level, key in (("subject", f"{prefix}:s:{principal.subject}:{kind}"), ("tenant", f"{prefix}:t:{kind}")):
        rate = per_minute[(level, kind)] / 60.0
        result.append(Bucket(key, max(1.0, rate * limits.burst_seconds), rate))
    return result


async def _respond(send: Send, status: int, retry_after: float, code: str, message: str) -> None:
    body = json.dumps({"error": code, "error_description": message}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"retry-after", str(max(1, math.ceil(retry_after))).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class RateLimitGate:
    def __init__(
        self,
        app: ASGIApp,
        settings: Settings,
        limiter: Callable[[], RateLimiter | None],
        on_reject: Callable[[str], None] | None = None,
    ) -> None:
        self.app = app
        self.settings = settings
        self.limiter = limiter
        self.on_reject = on_reject

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope.get("headers") or [])
        token = idempotency_key_header.set(
            headers[b"idempotency-key"].decode("latin-1") if b"idempotency-key" in headers else None
        )
        try:
            await self._call(scope, receive, send)
        finally:
            idempotency_key_header.reset(token)

    async def _call(self, scope: Scope, receive: Receive, send: Send) -> None:
        user = scope.get("user")
        limiter = self.limiter()
        if scope.get("method") != "POST" or not isinstance(user, AuthenticatedUser) or limiter is None:
            await self.app(scope, receive, send)
            return
        body, replay = await self._buffer(receive)
        if body is None:
            await _respond(send, 413, 1, "request_too_large", "the request body is over the size limit")
            return
        principal = principal_from_access_token(user.access_token)
        kind = classify(body)
        try:
            decision = await limiter.acquire(buckets_for(principal, kind, self.settings))
        except BackendUnavailable as exc:
            if self.settings.rate_limit_fail_open:
                logger.warning("rate limiter unavailable, failing open: %s", exc.message)
                await self.app(scope, replay, send)
            else:
                await _respond(send, 503, 5, "backend_unavailable", "rate limiter unavailable; retry shortly")
            return
        if not decision.allowed:
            if self.on_reject is not None:
                self.on_reject(kind)
            await _respond(
                send, 429, decision.retry_after_seconds, "rate_limited", f"too many {kind} requests; slow down"
            )
            return
        await self.app(scope, replay, send)

    async def _buffer(self, receive: Receive) -> tuple[bytes | None, Receive]:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.settings.max_request_bytes:
                return None, receive
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return body, replay

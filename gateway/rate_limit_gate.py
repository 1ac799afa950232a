"""The gate every authenticated `POST /mcp` passes before the MCP app: body size, readiness and rate limits.

The gate refuses a body over `max_request_bytes` (413) without parsing it: a `Content-Length` over the limit is
refused before a byte is read, a streamed body as soon as it grows over the limit. It answers 503 while the
gateway has no runtime (starting or stopping). Then, when rate limits are on, it parses the JSON-RPC body once
(and replays it to the MCP app), classifies the call as a read or a write (`tools/call` of a mutating tool is a
write; everything else is a read), and takes one token from the caller's subject bucket and tenant bucket
atomically. Over the limit: 429 with `Retry-After`, counted through `on_reject`. When the limiter's backend is
down it fails open (the default, logged) or answers 503 with `Retry-After`, as configured. Every refusal is a
`gateway.errors.rejection` whose `id` is the request's (null for a batch, a body that is not JSON, or a body
not read). The gate also carries the `Idempotency-Key` header to the tools.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import pydantic_core
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.errors import RequestId, rejection
from gateway.request_context import idempotency_key_header
from gateway.runtime import Runtime
from memory.errors import BackendUnavailable
from ops.config import Settings, TenantLimits
from tenancy import Principal, principal_from_access_token
from tenancy.limits import Bucket, tenant_prefix

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


@dataclass(frozen=True, slots=True)
class CallFacts:
    """What the gate reads of a JSON-RPC body: read or write, the request's id, the tool a `tools/call` names."""

    kind: str
    request_id: RequestId | None = None
    tool: str | None = None


def read_call(body: bytes) -> CallFacts:
    """Parse the body once, by the very parser the MCP app uses (pydantic-core's, with its nesting limit), so a
    body it refuses (malformed, or nested deeper than it allows) counts as a read without id here and gets the
    app's JSON-RPC parse error (HTTP 400), never a RecursionError. A batch is a write if any of its messages is;
    it has no one id and no one tool."""
    try:
        message = pydantic_core.from_json(body)
    except ValueError:
        return CallFacts("read")
    if isinstance(message, list):
        kind = "write" if any(_tool_of(item) in MUTATING_TOOLS for item in message) else "read"
        return CallFacts(kind)
    tool = _tool_of(message)
    request_id = message.get("id") if isinstance(message, dict) else None
    if isinstance(request_id, bool) or not isinstance(request_id, str | int):
        request_id = None
    return CallFacts("write" if tool in MUTATING_TOOLS else "read", request_id, tool)


def _tool_of(message: object) -> str | None:
    if isinstance(message, dict) and message.get("method") == "tools/call":
        params = message.get("params")
        if isinstance(params, dict) and isinstance(name := params.get("name"), str):
            return name
    return None


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


RejectionObserver = Callable[[CallFacts, Principal], None]


class RateLimitGate:
    """See the module docstring. `runtime` gives the running runtime (None while starting or stopping);
    `on_reject` hears of every 429 with what the gate read of the call and who made it."""

    def __init__(
        self,
        app: ASGIApp,
        settings: Settings,
        runtime: Callable[[], Runtime | None],
        on_reject: RejectionObserver | None = None,
    ) -> None:
        self.app = app
        self.settings = settings
        self.runtime = runtime
        self.on_reject = on_reject

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope.get("headers") or [])
        token = idempotency_key_header.set(
            headers[b"idempotency-key"].decode("latin-1") if b"idempotency-key" in headers else None
        )
        try:
            await self._call(scope, receive, send, headers)
        finally:
            idempotency_key_header.reset(token)

    async def _call(self, scope: Scope, receive: Receive, send: Send, headers: dict[bytes, bytes]) -> None:
        user = scope.get("user")
        if scope.get("method") != "POST" or not isinstance(user, AuthenticatedUser):
            await self.app(scope, receive, send)
            return
        body, replay = await self._buffer(receive, headers)
        if body is None:
            refusal = rejection("request_too_large", "the request body is over the size limit")
            await refusal(scope, receive, send)
            return
        runtime = self.runtime()
        if runtime is None:
            refusal = rejection(
                "backend_unavailable",
                "the gateway is starting or stopping; retry shortly",
                request_id=read_call(body).request_id,
            )
            await refusal(scope, replay, send)
            return
        limiter = runtime.rate_limiter
        if limiter is None:
            await self.app(scope, replay, send)
            return
        facts = read_call(body)
        principal = principal_from_access_token(user.access_token)
        try:
            decision = await limiter.acquire(buckets_for(principal, facts.kind, self.settings))
        except BackendUnavailable as exc:
            if self.settings.rate_limit_fail_open:
                logger.warning("rate limiter unavailable, failing open: %s", exc.message)
                await self.app(scope, replay, send)
            else:
                refusal = rejection(
                    "backend_unavailable", "rate limiter unavailable; retry shortly", request_id=facts.request_id
                )
                await refusal(scope, replay, send)
            return
        if not decision.allowed:
            if self.on_reject is not None:
                self.on_reject(facts, principal)
            refusal = rejection(
                "rate_limited",
                f"too many {facts.kind} requests; slow down",
                request_id=facts.request_id,
                retry_after_seconds=decision.retry_after_seconds,
            )
            await refusal(scope, replay, send)
            return
        await self.app(scope, replay, send)

    async def _buffer(self, receive: Receive, headers: dict[bytes, bytes]) -> tuple[bytes | None, Receive]:
        """The whole body and a `receive` that replays it, or None as soon as the body is known to be over the
        limit: from `Content-Length` before reading anything, else once the chunks read so far exceed it."""
        limit = self.settings.max_request_bytes
        declared = headers.get(b"content-length", b"")
        if declared.isdigit() and int(declared) > limit:
            return None, receive
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
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

"""The gate every authenticated `POST /mcp` passes before the MCP app: body size, readiness and rate limits.

The gate refuses a body over `max_request_bytes` (413) without parsing it: a `Content-Length` over the limit is
refused before a byte is read, a streamed body as soon as it grows over the limit. It answers 503 while the
gateway has no runtime (starting or stopping). It parses the JSON-RPC body once (and replays it to the MCP app),
leaving what it read in the request scope (`CALL_FACTS`) for `InvalidRequestGuard`, between it and the MCP app.
Then, when rate limits are on, it classifies the body:

- a `tools/call` of a mutating tool (one whose annotations are not `readOnlyHint`) is a *write*, any other
  `tools/call` a *read*: one token from the caller's
  subject bucket and tenant bucket of that kind, atomically; a batch (`write_memories`) costs one token per
  item (`units`), and one larger than a bucket's burst is let through from a full bucket, leaving it in debt;
- any other JSON-RPC message (`initialize`, `server/discover`, `tools/list`, `ping`, notifications, responses)
  is *protocol*: one token from the subject's protocol bucket, a generous one of its own, so reconnecting
  clients never spend the tokens of tool calls;
- a body that is no JSON-RPC message (not JSON, a bare value) is a read; a batch is a write if any of its
  messages is, a read if any is a `tools/call`, else protocol.

A write that replays a stored answer takes a read token instead of a write token: before taking a token for a
mutating `tools/call` that carries a request id (its `request_id` argument or the `Idempotency-Key` header) the
gate asks the idempotency store, read-only, whether that tenant + subject + tool + id has an answer stored; if
so the call goes on as a read, and the tool answers the stored response (or, if the arguments differ,
`idempotency_conflict`: nothing is written either way). That is one extra store lookup, made only for mutating
calls with a request id, so a retry never needs, nor uses up, the write bucket; replays stay bounded by the
read buckets. (An answer whose retention ends between this look and the tool's own is written again on a read
token: at most once per request id, a day after the first.)

A tool call must also find its subject's and tenant's CPU budgets out of debt (`gateway.web.fairness`: each call is
charged the CPU time it spent once done), checked before its call tokens are taken.

Over the limit: 429 with `Retry-After`, counted through `on_reject`. When the limiter's backend is down it fails
open (the default, logged) or answers 503 with `Retry-After`, as configured; failing open, it waits for Redis
at most `redis_fail_open_timeout_seconds` (as does the stored-answer lookup), and not at all while the Redis
circuit breaker is open, nor once another such call of the request got no answer (`ops.redis_client`). Every
refusal is a `gateway.errors.rejection` whose `id` is the request's (null for a batch, a body that is not JSON,
or a body not read). The gate also carries the `Idempotency-Key` header to the tools.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace
from typing import Literal

import pydantic_core
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.errors import RequestId, rejection
from gateway.services.runtime import Runtime
from gateway.tools.idempotent import idempotency_key
from gateway.web.fairness import admit
from gateway.web.request_context import idempotency_key_header
from memory.errors import BackendUnavailable, InvalidArgument
from ops.config import Settings, TenantLimits
from ops.redis_client import one_request, redis_deadline
from tenancy import Principal, principal_from_access_token
from tenancy.limits import Bucket, RateDecision, tenant_prefix

logger = logging.getLogger("hindsight.ratelimit")

CALL_FACTS = "hindsight.call_facts"  # request scope key: the gate's `CallFacts` of the body, for InvalidRequestGuard
IsMutating = Callable[[str], bool]  # whether a tool changes anything: its annotations (GatewayMCPServer)
# how many tokens a call of a tool with these arguments costs: 1, or a batch's items (GatewayMCPServer.call_units)
CallUnits = Callable[[str, object], int]

CallKind = Literal["read", "write", "protocol"]


@dataclass(frozen=True, slots=True)
class CallFacts:
    """What the gate reads of a JSON-RPC body: its kind (which buckets it costs), the request's id, the tool a
    `tools/call` names and that call's `request_id` argument (as sent: the tool checks it)."""

    kind: CallKind
    request_id: RequestId | None = None
    tool: str | None = None
    request_id_argument: object = None
    arguments: object = None  # the `tools/call`'s arguments as sent (a batch's size is read from them)
    invalid_id: str | None = None  # what a request's unusable `id` is ("NaN", "an object"); None when usable


def read_call(body: bytes, mutating: IsMutating) -> CallFacts:
    """Parse the body once, by the very parser the MCP app uses (pydantic-core's, with its nesting limit), so a
    body it refuses (malformed, or nested deeper than it allows) counts as a read without id here and gets the
    app's JSON-RPC parse error (HTTP 400), never a RecursionError. A batch has no one id and no one tool."""
    try:
        message = pydantic_core.from_json(body)
    except ValueError:
        return CallFacts("read")
    if isinstance(message, list):
        return CallFacts(_batch_kind(message, mutating))
    if not isinstance(message, dict):
        return CallFacts("read")
    if "id" in message and isinstance(message.get("method"), str):
        invalid = _unusable_id(message["id"])
        if invalid is not None:
            return CallFacts("read", invalid_id=invalid)
    request_id = message.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, str | int):
        request_id = None
    if not _is_tool_call(message):
        return CallFacts("protocol" if _is_message(message) else "read", request_id)
    tool = _tool_of(message)
    params = message.get("params")
    arguments = params.get("arguments") if isinstance(params, dict) else None
    argument = arguments.get("request_id") if isinstance(arguments, dict) else None
    kind: CallKind = "write" if tool is not None and mutating(tool) else "read"
    return CallFacts(kind, request_id, tool, argument, arguments)


def _unusable_id(value: object) -> str | None:
    """What a request's `id` is when it is neither a string nor an integer (JSON-RPC 2.0 allows a number without
    a fraction, MCP no null); None when it is usable."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int):
        return None
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, float):
        return repr(value).replace("inf", "Infinity") if math.isinf(value) else f"the number {value!r}"
    return {type(None): "null", dict: "an object", list: "an array"}.get(type(value), type(value).__name__)


def _batch_kind(messages: list[object], mutating: IsMutating) -> CallKind:
    if any(mutating(tool) for item in messages if (tool := _tool_of(item)) is not None):
        return "write"
    if not messages or any(_is_tool_call(item) or not _is_message(item) for item in messages):
        return "read"
    return "protocol"


def _is_tool_call(message: object) -> bool:
    return isinstance(message, dict) and message.get("method") == "tools/call"


def _is_message(message: object) -> bool:
    """A JSON-RPC request or notification (a string `method`), or a response (`result` or `error`)."""
    if not isinstance(message, dict):
        return False
    if "method" in message:
        return isinstance(message["method"], str)
    return "result" in message or "error" in message


def _tool_of(message: object) -> str | None:
    if isinstance(message, dict) and message.get("method") == "tools/call":
        params = message.get("params")
        if isinstance(params, dict) and isinstance(name := params.get("name"), str):
            return name
    return None


def buckets_for(principal: Principal, kind: CallKind, settings: Settings) -> list[Bucket]:
    """The buckets a call of `kind` takes a token from. All keys carry the tenant's hash tag (one Redis Cluster
    slot): `hs:{tenant}:rl:s:<subject>:<kind>` per subject, `hs:{tenant}:rl:t:<kind>` per tenant (tool calls
    only: protocol messages are limited per subject)."""
    limits: TenantLimits = settings.rate_limits.rate_limit_tenants.get(
        principal.tenant, settings.rate_limits.rate_limit_default
    )
    prefix = f"{tenant_prefix(principal.tenant)}:rl"
    subject_key = f"{prefix}:s:{principal.subject}:{kind}"
    if kind == "protocol":
        return [_bucket(subject_key, limits.subject_protocol_per_minute, limits.protocol_burst_seconds)]
    if kind == "write":
        subject_rate, tenant_rate = limits.subject_write_per_minute, limits.tenant_write_per_minute
    else:
        subject_rate, tenant_rate = limits.subject_read_per_minute, limits.tenant_read_per_minute
    return [
        _bucket(subject_key, subject_rate, limits.burst_seconds),
        _bucket(f"{prefix}:t:{kind}", tenant_rate, limits.burst_seconds),
    ]


def _bucket(key: str, per_minute: float, burst_seconds: float) -> Bucket:
    rate = per_minute / 60.0
    return Bucket(key, max(1.0, rate * burst_seconds), rate)


REFUSED: dict[CallKind, str] = {"read": "read requests", "write": "write requests", "protocol": "protocol messages"}
OVER_BUDGET = "this token or its tenant has used up its CPU budget; slow down"
ALLOWED = RateDecision(allowed=True, retry_after_seconds=0.0)

RejectionObserver = Callable[[CallFacts, Principal], None]


@dataclass
class RateLimitGate:
    """See the module docstring. `runtime` gives the running runtime (None while starting or stopping);
    `on_reject` hears of every 429 with what the gate read of the call and who made it."""

    app: ASGIApp
    settings: Settings
    runtime: Callable[[], Runtime | None]
    mutating: IsMutating
    on_reject: RejectionObserver | None = None
    units: CallUnits | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope.get("headers") or [])
        token = idempotency_key_header.set(
            headers[b"idempotency-key"].decode("latin-1") if b"idempotency-key" in headers else None
        )
        try:
            with one_request():  # a hung Redis costs this request one short wait for what it can do without
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
        facts = read_call(body, self.mutating)
        scope[CALL_FACTS] = facts
        runtime = self.runtime()
        if runtime is None:
            refusal = rejection(
                "backend_unavailable", "the gateway is starting or stopping; retry shortly", request_id=facts.request_id
            )
            await refusal(scope, replay, send)
            return
        limiter = runtime.rate_limiter
        if limiter is None:
            await self.app(scope, replay, send)
            return
        principal = principal_from_access_token(user.access_token)
        if facts.kind == "write" and await self._answer_is_stored(runtime, principal, facts):
            facts = replace(facts, kind="read")  # a replay reads the stored answer: no write token
        try:
            cost = self.units(facts.tool, facts.arguments) if self.units and facts.tool else 1
            with self._fail_open_deadline():
                decision, over_budget = ALLOWED, False
                if facts.kind != "protocol":  # a tool call's CPU budgets first: refused while in debt (fairness)
                    decision = await admit(limiter, principal, self.settings)
                    over_budget = not decision.allowed
                if decision.allowed:
                    decision = await limiter.acquire(buckets_for(principal, facts.kind, self.settings), cost)
        except BackendUnavailable as exc:
            if self.settings.rate_limits.rate_limit_fail_open:
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
                OVER_BUDGET if over_budget else f"too many {REFUSED[facts.kind]}; slow down",
                request_id=facts.request_id,
                retry_after_seconds=decision.retry_after_seconds,
            )
            await refusal(scope, replay, send)
            return
        await self.app(scope, replay, send)

    @staticmethod
    async def _answer_is_stored(runtime: Runtime, principal: Principal, facts: CallFacts) -> bool:
        """Whether this mutating `tools/call` names, by its request id, a call of the same caller and tool whose
        answer is stored. A malformed id, or a store that cannot answer, is a no: the call costs a write token
        as any other (and the tool reports the malformed id)."""
        if facts.tool is None:
            return False
        try:
            key = idempotency_key(principal, facts.tool, facts.request_id_argument)
        except InvalidArgument:
            return False
        if key is None:
            return False
        try:
            with redis_deadline(runtime.settings.backends.redis_fail_open_timeout_seconds):  # no answer is a no
                return await runtime.idempotency.done_response(key) is not None
        except BackendUnavailable as exc:
            logger.warning("idempotency store unavailable, charging a write token: %s", exc.message)
            return False

    def _fail_open_deadline(self) -> AbstractContextManager[None]:
        """A limiter that fails open waits for Redis only `redis_fail_open_timeout_seconds`: a hung Redis
        costs each request that long at most, and nothing once its circuit breaker is open."""
        if self.settings.rate_limits.rate_limit_fail_open:
            return redis_deadline(self.settings.backends.redis_fail_open_timeout_seconds)
        return nullcontext()

    async def _buffer(self, receive: Receive, headers: dict[bytes, bytes]) -> tuple[bytes | None, Receive]:
        """The whole body and a `receive` that replays it, or None as soon as the body is known to be over the
        limit: from `Content-Length` before reading anything, else once the chunks read so far exceed it."""
        limit = self.settings.limits.max_request_bytes
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


class InvalidRequestGuard:
    """Between the gate and the MCP app: 400 `invalid_request` (JSON-RPC -32600, `id` null) to a request whose
    `id` is neither a string nor an integer (1.5, NaN, true, null, an object, an array), as the gate read it
    (`CALL_FACTS`): the MCP app would take it for a notification, answer 202 and never run it. Behind the rate
    limits, so such a request costs its token as any other."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        facts = scope.get(CALL_FACTS)
        if isinstance(facts, CallFacts) and facts.invalid_id is not None:
            refusal = rejection(
                "invalid_request",
                f"Invalid Request: a request's id must be a string or an integer, not {facts.invalid_id}",
            )
            await refusal(scope, receive, send)
            return
        await self.app(scope, receive, send)

"""The one boundary every MCP tool call passes (`ToolBoundary.call`), and what a tool reads from it.

Around each call of one of our tools, once: a `tool <name>` span; the verified principal (carried typed on the
access token) and the OAuth scope the tool needs (`ToolPolicy`: `memory:read` for a read-only tool, `memory:write`
for one that changes something, or the scope its `_meta` names); strict arguments (`gateway.tools.arguments`), checked
and converted once; the namespace scope (built by `tenancy/`); for a tool that changes something (its annotations
say so: not `readOnlyHint`), idempotency by `request_id` and one audit event; the answer checked against the
tool's `outputSchema` (`gateway.answers.shapes`); the metrics; and any failure turned into a tool error with a stable
code (`gateway.errors`); with rate limits, the caller's turn among its subject's and tenant's running calls and
the call's CPU time charged to their budgets (`gateway.web.fairness`). A tool itself only builds its engine request
from its arguments and its answer from the engine's result, reading the runtime, principal and scope of the call
from `current_call()`.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache
from typing import Any

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import TypeAdapter, ValidationError

from gateway.errors import failure_from_exception, ok_result
from gateway.services.runtime import Runtime
from gateway.tools.arguments import argument_problems, validation_problems
from gateway.tools.audit import audit_event, emit
from gateway.tools.idempotent import run_idempotent
from gateway.web.fairness import Fairness
from gateway.web.observability import Telemetry, count_backend_error
from memory.cpu_meter import run_metered
from memory.errors import BackendUnavailable, InvalidArgument
from memory.scope import NamespaceScope
from ops.telemetry import span
from tenancy import (
    SCOPE_ADMIN,
    SCOPE_READ,
    SCOPE_WRITE,
    AuthenticationFailed,
    Principal,
    principal_from_access_token,
    scope_for,
)

SCOPE_META = "hindsight/required_scope"  # a tool's `_meta` key naming the scope it needs beyond read or write
ADMIN = {SCOPE_META: SCOPE_ADMIN}  # `_meta` of a tool only an admin token may list and call
# what a tool does, as its annotations declare it (which tools mutate is read from them)
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
# Argument descriptions only where the name and type do not say it; what every tool's request_id and namespace
# mean is said once, in the server's instructions (`gateway.tools.server.INSTRUCTIONS`); docs/TOOLS.md is the manual
RequestId = str | None
SessionId = str
Namespace = str | None
# a tool's `_meta` key: its items carry their own request ids (`write_memories`), so the call as a whole is not
# idempotent by `request_id` or `Idempotency-Key`; its answer's `results` are counted as writes
PER_ITEM_IDEMPOTENCY_META = "hindsight/per_item_idempotency"


class RuntimeHolder:
    """Gives tools the runtime of the running app; empty outside the lifespan."""

    def __init__(self) -> None:
        self._runtime: Runtime | None = None

    def set(self, runtime: Runtime | None) -> None:
        self._runtime = runtime

    def current(self) -> Runtime | None:
        return self._runtime

    def get(self) -> Runtime:
        if self._runtime is None:
            raise BackendUnavailable("the gateway is starting or stopping")
        return self._runtime


@dataclass(slots=True)
class ToolCall:
    """What a tool reads of its call: the runtime, who is calling and the namespaces they may touch; and the text
    a read-only tool writes for the model instead of its answer's JSON (`say`)."""

    runtime: Runtime
    principal: Principal
    scope: NamespaceScope
    text: str | None = None

    def say(self, text: str) -> None:
        """Make `text` the result's text content (what an MCP host hands its model); the structured content stays
        the answer. Only a read-only tool's: an idempotent replay answers the stored JSON."""
        self.text = text


_CALL: ContextVar[ToolCall] = ContextVar("hindsight_tool_call")


def current_call() -> ToolCall:
    """The call the boundary is running; only tools run under it, so outside one this is a bug (LookupError)."""
    return _CALL.get()


@dataclass(frozen=True, slots=True)
class ToolPolicy:
    """What a tool needs, read from how it was registered: the scope, and whether it changes anything."""

    scope: str
    mutating: bool
    per_item: bool = False  # idempotent per item, not as a whole (PER_ITEM_IDEMPOTENCY_META)

    @classmethod
    def of(cls, tool: Tool) -> ToolPolicy:
        mutating = tool.annotations is None or not tool.annotations.read_only_hint
        meta = tool.meta or {}
        named = meta.get(SCOPE_META)
        scope = named if isinstance(named, str) else SCOPE_WRITE if mutating else SCOPE_READ
        return cls(scope, mutating, meta.get(PER_ITEM_IDEMPOTENCY_META) is True)


def current_principal() -> Principal:
    token = get_access_token()
    if token is None:
        raise AuthenticationFailed("no verified bearer token on this request")
    return principal_from_access_token(token)


def checked_arguments(tool: Tool, arguments: dict[str, Any]) -> dict[str, Any]:
    """The call's arguments as the tool's parameters, each checked once; `InvalidArgument` naming every problem."""
    problems = argument_problems(arguments)
    if not problems:
        try:
            return tool.fn_metadata.validate_arguments(arguments)
        except ValidationError as exc:
            problems = validation_problems(exc)
    detail = "; ".join(problems) or "arguments do not match the tool's schema"
    raise InvalidArgument(f"{tool.name}: invalid arguments: {detail}")


@cache
def _answer_adapter(model: type[Any]) -> TypeAdapter[Any]:
    return TypeAdapter(model)


def checked_answer(tool: Tool, body: dict[str, Any]) -> dict[str, Any]:
    """`body` if it is what the tool's `outputSchema` promises; a ValidationError (a bug: `internal`) if not."""
    model = tool.fn_metadata.output_model
    if model is not None:
        _answer_adapter(model).validate_python(body, strict=False)
    return body


class ToolBoundary:
    def __init__(self, holder: RuntimeHolder, telemetry: Telemetry) -> None:
        self.holder = holder
        self.telemetry = telemetry
        self.fairness = Fairness()

    async def call(self, tool: Tool, arguments: dict[str, Any]) -> CallToolResult:
        """Run one call of `tool` with the arguments as sent (see the module docstring)."""
        name, policy = tool.name, ToolPolicy.of(tool)
        started = time.perf_counter()
        principal: Principal | None = None
        checked: dict[str, Any] | None = None
        with span(self.telemetry.tracer, f"tool {name}", tool=name) as current:
            try:
                principal = current_principal()
                current.set_attribute("hindsight.tenant", principal.tenant)
                principal.require_scope(policy.scope)
                checked = checked_arguments(tool, arguments)
                runtime = self.holder.get()
                call = ToolCall(runtime, principal, scope_for(principal))
                reset = _CALL.set(call)
                try:  # in the caller's turn, its CPU time measured and charged (gateway.web.fairness)
                    async with self.fairness.turn(runtime.rate_limiter, runtime.settings, principal) as meter:
                        try:
                            result, body = await run_metered(meter, self._answer(tool, checked, policy, call))
                        finally:
                            metrics = self.telemetry.metrics
                            metrics.tool_cpu.labels(tool=name, **metrics.labels(principal.tenant)).inc(meter.seconds)
                finally:
                    _CALL.reset(reset)
            except Exception as exc:
                failure = failure_from_exception(exc, name)
                count_backend_error(self.telemetry, exc)
                current.set_attribute("hindsight.outcome", failure.code)
                self._finish(name, principal, failure.code, started)
                if policy.mutating:
                    self._audit(name, principal, checked or arguments, failure.code, None)
                return failure.to_result()
            outcome = str(body.get("status", "ok"))
            current.set_attribute("hindsight.outcome", outcome)
            hits = body.get("memories", body.get("citations"))
            if isinstance(hits, list):
                current.set_attribute("hindsight.hits", len(hits))
            if name == "write_memory" and not result.meta:
                self.telemetry.metrics.writes.labels(action=outcome).inc()
                for _ in body.get("superseded", []):
                    self.telemetry.metrics.writes.labels(action="superseded").inc()
            if policy.per_item:
                for item in body.get("results", []):
                    if "status" in item and not item.get("replayed"):
                        self.telemetry.metrics.writes.labels(action=item["status"]).inc()
                        for _ in item.get("superseded", []):
                            self.telemetry.metrics.writes.labels(action="superseded").inc()
            self._finish(name, principal, "ok", started)
            if policy.mutating:
                self._audit(name, principal, checked, outcome, body)
            return result

    async def _answer(
        self, tool: Tool, checked: dict[str, Any], policy: ToolPolicy, call: ToolCall
    ) -> tuple[CallToolResult, dict[str, Any]]:
        """The tool run (once per request id for a mutating tool) and its result."""
        run = self._runner(tool, checked)
        if policy.mutating and not policy.per_item:
            result, body = await run_idempotent(call.runtime, call.principal, tool.name, checked, run)
            if result.meta:
                self.telemetry.metrics.idempotent_replays.labels(tool=tool.name).inc()
            return result, body
        body = await run()
        return ok_result(body, text=call.text if not policy.mutating else None), body

    @staticmethod
    def _runner(tool: Tool, checked: dict[str, Any]) -> Callable[[], Awaitable[dict[str, Any]]]:
        async def run() -> dict[str, Any]:
            body = await tool.fn_metadata.call_fn(tool.fn, tool.is_async, checked)
            return checked_answer(tool, body)

        return run

    def _finish(self, tool: str, principal: Principal | None, outcome: str, started: float) -> None:
        tenant = principal.tenant if principal else None
        self.telemetry.metrics.observe_tool(tool, outcome, time.perf_counter() - started, tenant)

    @staticmethod
    def _audit(
        tool: str, principal: Principal | None, arguments: dict[str, Any], outcome: str, body: dict[str, Any] | None
    ) -> None:
        emit(
            audit_event(
                tool=tool,
                tenant=principal.tenant if principal else None,
                subject=principal.subject if principal else None,
                outcome=outcome,
                arguments=arguments,
                body=body,
            )
        )

"""What every MCP tool shares: who is calling, with which scope, and one error boundary.

`ToolRunner.run(tool, needed_scope, operation)` resolves the verified principal of the current request,
checks the OAuth scope the tool needs, builds the `NamespaceScope` (through `tenancy/`), runs the operation,
and turns its dict into a structured result or any failure into a tool error with a stable code.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp_types import CallToolResult

from gateway.audit import audit_event, emit
from gateway.errors import ToolFailure, failure_from_exception, ok_result
from gateway.idempotent_calls import run_idempotent
from gateway.observability import Telemetry, count_backend_error
from gateway.runtime import Runtime
from memory.errors import BackendUnavailable
from memory.scope import NamespaceScope
from ops.telemetry import span
from tenancy import AuthenticationFailed, Principal, principal_from_access_token, scope_for

Operation = Callable[[Runtime, Principal, NamespaceScope], Awaitable[dict[str, Any]]]


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


def current_principal() -> Principal:
    token = get_access_token()
    if token is None:
        raise AuthenticationFailed("no verified bearer token on this request")
    return principal_from_access_token(token)


class ToolRunner:
    def __init__(self, holder: RuntimeHolder, telemetry: Telemetry) -> None:
        self.holder = holder
        self.telemetry = telemetry

    async def run(
        self,
        tool: str,
        needed_scope: str,
        operation: Operation,
        *,
        mutation: dict[str, Any] | None = None,
    ) -> CallToolResult:
        """Run one tool call inside a `tool <name>` span, timed into the metrics. Mutating tools pass their
        arguments as `mutation`: the call is then idempotent by `request_id` (or the `Idempotency-Key` header)
        and emits one audit event."""
        started = time.perf_counter()
        principal: Principal | None = None
        with span(self.telemetry.tracer, f"tool {tool}", tool=tool) as current:
            try:
                principal = current_principal()
                current.set_attribute("hindsight.tenant", principal.tenant)
                principal.require_scope(needed_scope)
                runtime = self.holder.get()
                scope = scope_for(principal)
                if mutation is None:
                    body = await operation(runtime, principal, scope)
                    result = ok_result(body)
                else:
                    result, body = await run_idempotent(
                        runtime, principal, tool, mutation, lambda: operation(runtime, principal, scope)
                    )
                    if result.meta:
                        self.telemetry.metrics.idempotent_replays.labels(tool=tool).inc()
            except Exception as exc:
                failure = failure_from_exception(exc, tool)
                count_backend_error(self.telemetry, exc)
                current.set_attribute("hindsight.outcome", failure.code)
                self._finish(tool, principal, failure.code, started)
                self._audit(tool, principal, mutation, failure.code, None)
                return failure.to_result()
            outcome = str(body.get("status", "ok"))
            current.set_attribute("hindsight.outcome", outcome)
            if isinstance(body.get("memories"), list):
                current.set_attribute("hindsight.hits", len(body["memories"]))
            if tool == "write_memory" and not result.meta:
                self.telemetry.metrics.writes.labels(action=outcome).inc()
                for _ in body.get("superseded", []):
                    self.telemetry.metrics.writes.labels(action="superseded").inc()
            self._finish(tool, principal, "ok", started)
            self._audit(tool, principal, mutation, outcome, body)
            return result

    def _finish(self, tool: str, principal: Principal | None, outcome: str, started: float) -> None:
        tenant = principal.tenant if principal else None
        self.telemetry.metrics.observe_tool(tool, outcome, time.perf_counter() - started, tenant)

    @staticmethod
    def _audit(
        tool: str,
        principal: Principal | None,
        arguments: dict[str, Any] | None,
        outcome: str,
        body: dict[str, Any] | None,
    ) -> None:
        if arguments is None:
            return
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


def invalid_arguments(tool: str, problems: list[str]) -> CallToolResult:
    detail = "; ".join(problems) or "arguments do not match the tool's schema"
    return ToolFailure("invalid_argument", f"{tool}: invalid arguments: {detail}").to_result()

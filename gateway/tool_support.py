"""What every MCP tool shares: who is calling, with which scope, and one error boundary.

`ToolRunner.run(tool, needed_scope, operation)` resolves the verified principal of the current request,
checks the OAuth scope the tool needs, builds the `NamespaceScope` (through `tenancy/`), runs the operation,
and turns its dict into a structured result or any failure into a tool error with a stable code.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp_types import CallToolResult

from gateway.audit import audit_event, emit
from gateway.errors import ToolFailure, failure_from_exception, ok_result
from gateway.idempotent_calls import run_idempotent
from gateway.runtime import Runtime
from memory.errors import BackendUnavailable
from memory.scope import NamespaceScope
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
    def __init__(self, holder: RuntimeHolder) -> None:
        self.holder = holder

    async def run(
        self,
        tool: str,
        needed_scope: str,
        operation: Operation,
        *,
        mutation: dict[str, Any] | None = None,
    ) -> CallToolResult:
        """Run one tool call. Mutating tools pass their arguments as `mutation`: the call is then idempotent by
        `request_id` (or the `Idempotency-Key` header) and emits one audit event."""
        principal: Principal | None = None
        try:
            principal = current_principal()
            principal.require_scope(needed_scope)
            runtime = self.holder.get()
            scope = scope_for(principal)
            if mutation is None:
                return ok_result(await operation(runtime, principal, scope))
            result, body = await run_idempotent(
                runtime, principal, tool, mutation, lambda: operation(runtime, principal, scope)
            )
        except Exception as exc:
            failure = failure_from_exception(exc, tool)
            self._audit(tool, principal, mutation, failure.code, None)
            return failure.to_result()
        self._audit(tool, principal, mutation, str(body.get("status", "ok")), body)
        return result

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

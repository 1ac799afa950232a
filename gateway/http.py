"""Plain HTTP surface: the bearer-token gate in front of `/mcp`, and the `/livez` and `/readyz` probes."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from gateway.tool_support import RuntimeHolder
from memory.errors import MemoryEngineError
from ops.metrics import Metrics
from tenancy import SCOPE_ADMIN, SCOPE_READ, SCOPE_WRITE

MEMORY_SCOPES = (SCOPE_READ, SCOPE_WRITE, SCOPE_ADMIN)


class McpAuthGate:
    """401 with `WWW-Authenticate` without a valid token; 403 when the token carries no memory scope at all.

    Which scope each tool needs is checked per tool; this gate keeps tokens minted for other services out.
    """

    def __init__(self, app: ASGIApp, resource_metadata_url: str | None = None) -> None:
        self.app = app
        self.resource_metadata_url = resource_metadata_url

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        user = scope.get("user")
        if not isinstance(user, AuthenticatedUser):
            await self._refuse(send, 401, "invalid_token", "a valid bearer token is required")
            return
        if not any(s in user.scopes for s in MEMORY_SCOPES):
            await self._refuse(send, 403, "insufficient_scope", "the token carries no memory:* scope")
            return
        await self.app(scope, receive, send)

    async def _refuse(self, send: Send, status: int, error: str, description: str) -> None:
        challenge = f'Bearer realm="hindsight", error="{error}", error_description="{description}"'
        if self.resource_metadata_url:
            challenge += f', resource_metadata="{self.resource_metadata_url}"'
        body = json.dumps({"error": error, "error_description": description}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", challenge.encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


async def livez(request: Request) -> JSONResponse:
    return JSONResponse({"status": "ok"})


def readyz_endpoint(holder: RuntimeHolder) -> Callable[[Request], Awaitable[JSONResponse]]:
    async def readyz(request: Request) -> JSONResponse:
        checks: dict[str, str] = {}
        try:
            runtime = holder.get()
        except MemoryEngineError as exc:
            return JSONResponse({"status": "unavailable", "checks": {"runtime": exc.message}}, status_code=503)
        probes: list[tuple[str, Callable[[], Awaitable[object]]]] = [
            ("vector_store", runtime.store.ping),
            ("working_memory", runtime.working.ping),
            ("idempotency", runtime.idempotency.ping),
            ("embedder", lambda: runtime.embedder.embed_query("readiness probe")),
        ]
        if runtime.rate_limiter is not None:
            probes.append(("rate_limiter", runtime.rate_limiter.ping))
        for name, probe in probes:
            try:
                await probe()
                checks[name] = "ok"
            except Exception as exc:
                checks[name] = f"error: {type(exc).__name__}"
        ready = all(v == "ok" for v in checks.values())
        return JSONResponse(
            {"status": "ready" if ready else "unavailable", "checks": checks},
            status_code=200 if ready else 503,
            headers=None if ready else {"Retry-After": "5"},
        )

    return readyz


def metrics_endpoint(metrics: Metrics) -> Callable[[Request], Awaitable[Response]]:
    async def render(request: Request) -> Response:
        return Response(metrics.render(), media_type=CONTENT_TYPE_LATEST)

    return render

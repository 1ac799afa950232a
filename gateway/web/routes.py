"""Plain HTTP surface: the method and bearer-token gates in front of `/mcp`, the `/livez` and `/readyz` probes, and
the RFC 9728 protected-resource metadata of `/mcp` (which a 401's `WWW-Authenticate` names as
`resource_metadata`, so an MCP client finds the token issuer and scopes instead of guessing an OAuth flow).

`/mcp` is stateless (no sessions, JSON answers): POST carries every JSON-RPC message. GET, which would open a
server-to-client SSE stream, is answered 405 (the MCP transport's way to say "no stream here"; clients go on
without one), so no request can hold a connection open. DELETE, which ends a session, answers 204 to a valid
token without running an MCP server: there is never a session to end. Any other method: 405. Every refusal
here is a `gateway.errors.rejection` (a JSON-RPC error with our code in `data`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, BearerAuthBackend
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.authentication import AuthCredentials, BaseUser
from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from gateway.errors import rejection
from gateway.services.background import Supervisor
from gateway.tools.boundary import RuntimeHolder
from memory.errors import MemoryEngineError
from ops.config import Settings
from ops.metrics import Metrics
from ops.redis_client import health_check
from tenancy import SCOPE_ADMIN, SCOPE_READ, SCOPE_WRITE, AuthenticationFailed
from tenancy.jwt_verifier import recorded_rejections

MEMORY_SCOPES = (SCOPE_READ, SCOPE_WRITE, SCOPE_ADMIN)
AUTH_FAILURE = "hindsight.auth_failure"  # request scope key: why the request carries no authenticated user
UNAUTHENTICATED = "a valid bearer token is required"


class ExplainedBearerAuth(BearerAuthBackend):
    """The SDK's bearer-token backend that also keeps why a request is not authenticated, an
    `AuthenticationFailed` (its reason and a message safe to show the caller), in the request scope under
    `AUTH_FAILURE`, for `McpAuthGate`'s 401. Requests that need no token (probes) are unaffected."""

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, BaseUser] | None:
        with recorded_rejections() as rejected:
            result: tuple[AuthCredentials, BaseUser] | None = await super().authenticate(conn)  # SDK: unannotated
        if result is None:
            conn.scope[AUTH_FAILURE] = rejected[-1] if rejected else _unverified(conn)
        return result


def _unverified(conn: HTTPConnection) -> AuthenticationFailed:
    """Why a request the verifier refused nothing of is unauthenticated: it sent no bearer token, or the SDK
    refused the token the verifier accepted, which it does only past the token's `exp` (our leeway aside)."""
    header = conn.headers.get("authorization", "")
    if not header.lower().startswith("bearer "):
        return AuthenticationFailed(
            "no bearer token was presented (send the header 'Authorization: Bearer <token>')", reason="missing_token"
        )
    return AuthenticationFailed("token has expired", reason="expired")


def unauthenticated_message(scope: Scope) -> str:
    """The 401 message: that a valid token is required, and why this request's was not (when known)."""
    failure = scope.get(AUTH_FAILURE)
    if isinstance(failure, AuthenticationFailed):
        return f"{UNAUTHENTICATED}: {failure.message}"
    return UNAUTHENTICATED


class McpAuthGate:
    """401 with `WWW-Authenticate` without a valid token (saying why: `ExplainedBearerAuth`); 403 when the token
    carries no memory scope at all.

    Which scope each tool needs is checked per tool; this gate keeps tokens minted for other services out. It
    never reads the body of a request it refuses, so the JSON-RPC error it answers has `"id": null`.
    """

    def __init__(self, app: ASGIApp, resource_metadata_url: str | None = None) -> None:
        self.app = app
        self.resource_metadata_url = resource_metadata_url

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        user = scope.get("user")
        if not isinstance(user, AuthenticatedUser):
            refusal = rejection(
                "unauthenticated",
                unauthenticated_message(scope),
                resource_metadata_url=self.resource_metadata_url,
            )
        elif not any(s in user.scopes for s in MEMORY_SCOPES):
            refusal = rejection(
                "scope_forbidden",
                "the token carries no memory:* scope",
                resource_metadata_url=self.resource_metadata_url,
            )
        else:
            await self.app(scope, receive, send)
            return
        await refusal(scope, receive, send)


ALLOWED_MCP_METHODS = "POST, DELETE"


class StatelessMcpMethods:
    """Sends POST to the MCP app and DELETE to `delete`; answers 405 with `Allow: POST, DELETE` to the rest."""

    def __init__(self, post: ASGIApp, delete: ASGIApp) -> None:
        self.post = post
        self.delete = delete

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        method = scope.get("method")
        if method == "POST":
            await self.post(scope, receive, send)
        elif method == "DELETE":
            await self.delete(scope, receive, send)
        else:
            refusal = rejection(
                "method_not_allowed",
                "Method Not Allowed: this stateless server offers no stream; send POST",
                headers={"Allow": ALLOWED_MCP_METHODS},
            )
            await refusal(scope, receive, send)


async def no_session_to_end(scope: Scope, receive: Receive, send: Send) -> None:
    """DELETE /mcp: the server keeps no sessions, so there is nothing to end (204, idempotent)."""
    await Response(status_code=204)(scope, receive, send)


def livez_endpoint(holder: RuntimeHolder, supervisor: Supervisor) -> Callable[[Request], Awaitable[JSONResponse]]:
    """200 while the gateway can serve; 503 once the runtime is closed or a watched task group (the runtime's,
    the lifespan's inside the MCP session manager's) has ended, so a supervisor restarts it. No backend is called
    (that is `/readyz`)."""

    async def livez(request: Request) -> JSONResponse:
        problems = supervisor.problems()
        if holder.current() is None:
            problems.append("no runtime")
        if problems:
            return JSONResponse({"status": "not serving", "problems": problems}, status_code=503)
        return JSONResponse({"status": "ok"})

    return livez


# /readyz answers within 2 s whatever a backend does (the chart's probe times out after 3 s): each check gets
# READY_CHECK_SECONDS, a Redis check its own deadline a little shorter (so the circuit breaker counts it).
READY_CHECK_SECONDS = 1.5
READY_REDIS_SECONDS = 1.25

Probe = Callable[[], Awaitable[object]]


def readyz_endpoint(holder: RuntimeHolder) -> Callable[[Request], Awaitable[JSONResponse]]:
    """200 when every backend answers, else 503 with `Retry-After`; the body names each check's state: "ok",
    "error: <exception type>", or "error: no answer within 1.5 s" (not waited for further). The checks run at
    once; Redis ones pass the Redis circuit breaker (`ops.redis_client.health_check`), and an answer closes it."""

    async def readyz(request: Request) -> JSONResponse:
        try:
            runtime = holder.get()
        except MemoryEngineError as exc:
            return JSONResponse({"status": "unavailable", "checks": {"runtime": exc.message}}, status_code=503)
        probes: list[tuple[str, Probe]] = [
            ("vector_store", runtime.store.ping),
            ("working_memory", runtime.working.ping),
            ("idempotency", runtime.idempotency.ping),
            ("embedder", lambda: runtime.embedder.embed_query("readiness probe")),
        ]
        if runtime.rate_limiter is not None:
            probes.append(("rate_limiter", runtime.rate_limiter.ping))
        with health_check(READY_REDIS_SECONDS):  # the tasks below copy this context
            checks = await run_checks(probes, READY_CHECK_SECONDS)
        ready = all(v == "ok" for v in checks.values())
        return JSONResponse(
            {"status": "ready" if ready else "unavailable", "checks": checks},
            status_code=200 if ready else 503,
            headers=None if ready else {"Retry-After": "5"},
        )

    return readyz


async def run_checks(probes: list[tuple[str, Probe]], seconds: float) -> dict[str, str]:
    """Each probe's state after at most `seconds`, all run at once. One still running then is cancelled and not
    waited for (one stuck in a worker thread ends there on its own)."""

    async def check(probe: Probe) -> str:
        try:
            await probe()
        except Exception as exc:
            return f"error: {type(exc).__name__}"
        return "ok"

    tasks = {name: asyncio.ensure_future(check(probe)) for name, probe in probes}
    await asyncio.wait(tasks.values(), timeout=seconds)
    checks: dict[str, str] = {}
    for name, task in tasks.items():
        if task.done():
            checks[name] = task.result()
        else:
            task.cancel()
            checks[name] = f"error: no answer within {seconds:g} s"
    return checks


def protected_resource_endpoint(settings: Settings) -> Callable[[Request], Awaitable[JSONResponse]]:
    """RFC 9728 metadata: the resource (`/mcp`'s public URL), who issues its tokens (the configured JWT issuer),
    how a token is sent and the scopes it may carry. Public, like the probes."""
    body: dict[str, object] = {
        "resource": settings.mcp_url,
        "authorization_servers": [settings.auth.jwt_issuer] if settings.auth.jwt_issuer else [],
        "bearer_methods_supported": ["header"],
        "scopes_supported": list(MEMORY_SCOPES),
        "resource_name": "hindsight memory gateway",
    }

    async def metadata(request: Request) -> JSONResponse:
        return JSONResponse(body, headers={"Cache-Control": "max-age=3600"})

    return metadata


def metrics_endpoint(metrics: Metrics) -> Callable[[Request], Awaitable[Response]]:
    async def render(request: Request) -> Response:
        return Response(metrics.render(), media_type=CONTENT_TYPE_LATEST)

    return render

"""Debug views, off unless `debug_views_enabled`, and then only for `memory:admin` tokens, each scoped to the
admin's own tenant: `/debug/memories` (latest memories of one namespace of that tenant, with metadata),
`/debug/stats` (that tenant's recall and write latency percentiles over a sliding window, and its tool call
counts) and `/debug/sessions/{session_id}?namespace=...` (one session's events, working memory, extracted memories
and logged recalls: `gateway.tools.session_debug`). No token sees another tenant's figures here; process-wide figures
are on `/metrics`, for operators. Refusals and failures answer `gateway.errors.rejection` (the JSON-RPC error
shape of every refusal, `id` null)."""

from __future__ import annotations

from collections import deque

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from gateway.answers.serialize import memory_json
from gateway.errors import failure_from_exception, rejection
from gateway.tools.boundary import RuntimeHolder
from gateway.tools.session_debug import session_debug
from memory.models import Memory
from memory.requests import ListRequest
from ops.config import Settings
from ops.metrics import Metrics
from tenancy import SCOPE_ADMIN, Principal, principal_from_access_token, scope_for

MAX_DEBUG_LIMIT = 200


def _admin(request: Request) -> Principal | Response:
    user = request.scope.get("user")
    if not isinstance(user, AuthenticatedUser):
        return rejection("unauthenticated", "an admin bearer token is required")
    principal = principal_from_access_token(user.access_token)
    if not principal.has_scope(SCOPE_ADMIN):
        return rejection("scope_forbidden", "debug views need memory:admin")
    return principal


def debug_routes(settings: Settings, holder: RuntimeHolder, metrics: Metrics) -> list[Route]:
    if not settings.observability.debug_views_enabled:
        return []

    async def memories(request: Request) -> Response:
        principal = _admin(request)
        if isinstance(principal, Response):
            return principal
        namespace = request.query_params.get("namespace")
        try:
            limit = int(request.query_params.get("limit", "20"))
        except ValueError:
            limit = 0
        if not namespace or not 1 <= limit <= MAX_DEBUG_LIMIT:
            return rejection("invalid_argument", f"pass ?namespace=...&limit=1..{MAX_DEBUG_LIMIT}")
        try:
            runtime = holder.get()
            scope = scope_for(principal)
            latest: deque[Memory] = deque(maxlen=limit)
            cursor = None
            while True:  # pages come oldest first; keep the newest `limit`
                page = await runtime.memories.list(
                    scope, ListRequest(namespace=namespace, include_deleted=True, limit=200, cursor=cursor)
                )
                latest.extend(page.memories)
                cursor = page.next_cursor
                if cursor is None:
                    break
        except Exception as exc:
            failure = failure_from_exception(exc, "debug_memories")
            return rejection(failure.code, failure.message)
        return JSONResponse(
            {
                "tenant": principal.tenant,
                "namespace": namespace,
                "memories": [memory_json(m) | {"content_hash": m.content_hash} for m in reversed(latest)],
            }
        )

    async def stats(request: Request) -> Response:
        principal = _admin(request)
        if isinstance(principal, Response):
            return principal
        own = metrics.tenant_stats(principal.tenant)
        return JSONResponse(
            {
                "tenant": principal.tenant,
                "window_seconds": own.recall_window.seconds,
                "recall": own.recall_window.percentiles(),
                "write": own.write_window.percentiles(),
                "tool_calls": {tool: dict(outcomes) for tool, outcomes in sorted(own.tool_calls.items())},
            }
        )

    async def session(request: Request) -> Response:
        principal = _admin(request)
        if isinstance(principal, Response):
            return principal
        namespace = request.query_params.get("namespace")
        if not namespace:
            return rejection("invalid_argument", "pass ?namespace=...")
        try:
            view = await session_debug(holder.get(), scope_for(principal), request.path_params["session_id"], namespace)
        except Exception as exc:
            failure = failure_from_exception(exc, "debug_session")
            return rejection(failure.code, failure.message)
        return JSONResponse(view)

    return [
        Route("/debug/memories", memories, methods=["GET"]),
        Route("/debug/stats", stats, methods=["GET"]),
        Route("/debug/sessions/{session_id}", session, methods=["GET"]),
    ]

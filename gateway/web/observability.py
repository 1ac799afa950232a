"""Tracing and metrics wiring for one app: the `Telemetry` bundle, spans around every backend call (a thin
proxy over the engine's seams), the auth span, the HTTP server span that continues an incoming W3C
`traceparent`, and the count and duration of every HTTP request by method, route template and status."""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from mcp.server.auth.provider import AccessToken, TokenVerifier
from opentelemetry import context as otel_context
from opentelemetry.propagate import extract
from opentelemetry.trace import SpanKind, Tracer
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memory.errors import BackendUnavailable
from ops.metrics import Metrics
from ops.telemetry import span

T = TypeVar("T")
UNTRACED_PATHS = frozenset({"/livez", "/readyz", "/metrics"})
UNMATCHED_ROUTE = "other"


@dataclass
class Telemetry:
    tracer: Tracer
    metrics: Metrics


def backend_of(exc: BaseException) -> str:
    """Which backend a `BackendUnavailable` came from, by the module of its cause."""
    explicit = getattr(exc, "backend", None)
    if isinstance(explicit, str) and explicit != "unknown":
        return explicit
    cause = exc.__cause__
    module = type(cause).__module__ if cause is not None else ""
    if module.startswith("redis"):
        return "redis"
    if module.startswith(("qdrant_client", "grpc", "httpx", "httpcore")):
        return "qdrant"
    return "vector_store" if "vector store" in str(exc) else "unknown"


class _Traced:
    """Wraps every coroutine method of `target` in a span named `<component>.<method>`."""

    def __init__(self, target: Any, component: str, tracer: Tracer, attributes: dict[str, Any]) -> None:
        self._target = target
        self._component = component
        self._tracer = tracer
        self._attributes = attributes

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if not inspect.iscoroutinefunction(value):
            return value

        @functools.wraps(value)
        async def traced_call(*args: Any, **kwargs: Any) -> Any:
            with span(self._tracer, f"{self._component}.{name}", **self._attributes):
                return await value(*args, **kwargs)

        return traced_call


def traced(target: T, component: str, tracer: Tracer, **attributes: Any) -> T:
    """`target` with a span around each of its async methods (same interface, typed as the original)."""
    return cast(T, _Traced(target, component, tracer, attributes))


class TracedTokenVerifier:
    """The token verifier inside an `auth.verify_token` span recording the outcome (never the token)."""

    def __init__(self, verifier: TokenVerifier, tracer: Tracer) -> None:
        self._verifier = verifier
        self._tracer = tracer

    async def verify_token(self, token: str) -> AccessToken | None:
        with span(self._tracer, "auth.verify_token") as current:
            result = await self._verifier.verify_token(token)
            current.set_attribute("auth.outcome", "ok" if result is not None else "rejected")
            return result


def route_template(routes: Sequence[BaseRoute], scope: Scope) -> str | None:
    """The path template of the route a request goes to (also when only its method is refused), without a
    trailing slash (`/mcp/` is `/mcp`); None when no route takes the path. Never the raw path."""
    for route in routes:
        match, _ = route.matches(scope)
        path = getattr(route, "path", None)
        if match is not Match.NONE and isinstance(path, str):
            return path.rstrip("/") or "/"
    return None


class HttpRequestMetrics:
    """Counts every HTTP response in `hindsight_http_requests_total{route, code, status_class}` and times it in
    `hindsight_http_request_duration_seconds{method, route, status_class}` (from the request's arrival until the
    app has sent the answer), by the status of its `http.response.start`. Outermost of the app's middleware, so the
    401s of auth, the 413s of the body limit, the 429s of rate limits and the 405s and 404s of routing count like
    answers. An exception escaping before a response started counts as 500: that is what Starlette's error
    middleware, just outside, then sends. A request that ends with no answer at all (the client went away before
    one started) is not counted."""

    def __init__(self, app: ASGIApp, metrics: Metrics, routes: Sequence[BaseRoute]) -> None:
        self.app = app
        self.metrics = metrics
        self.routes = routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        began = time.perf_counter()
        route = route_template(self.routes, scope) or UNMATCHED_ROUTE
        status: int | None = None

        async def send_observed(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start" and status is None:
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_observed)
        except Exception:
            if status is None:
                status = 500
            raise
        finally:
            if status is not None:
                self.metrics.observe_http(scope.get("method", "GET"), route, status, time.perf_counter() - began)


class TraceContextMiddleware:
    """A SERVER span per HTTP request (probes excepted), continuing the caller's `traceparent`, named after the
    route template (`POST /mcp`; the method alone for a path no route takes), as OTel's HTTP conventions say."""

    def __init__(self, app: ASGIApp, tracer: Tracer, routes: Sequence[BaseRoute] = ()) -> None:
        self.app = app
        self.tracer = tracer
        self.routes = routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") in UNTRACED_PATHS:
            await self.app(scope, receive, send)
            return
        carrier = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers") or []}
        token = otel_context.attach(extract(carrier))
        try:
            method = scope.get("method", "GET")
            route = route_template(self.routes, scope)
            with span(
                self.tracer,
                f"{method} {route}" if route else method,
                kind=SpanKind.SERVER,
                **{"http.request.method": method, "http.route": route, "url.path": scope.get("path")},
            ) as current:

                async def send_with_status(message: Message) -> None:
                    if message["type"] == "http.response.start":
                        current.set_attribute("http.response.status_code", message["status"])
                    await send(message)

                await self.app(scope, receive, send_with_status)
        finally:
            otel_context.detach(token)


def count_backend_error(telemetry: Telemetry, exc: BaseException) -> None:
    if isinstance(exc, BackendUnavailable):
        telemetry.metrics.backend_errors.labels(backend=backend_of(exc)).inc()

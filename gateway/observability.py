"""Tracing and metrics wiring for one app: the `Telemetry` bundle, spans around every backend call (a thin
proxy over the engine's seams), the auth span, and the HTTP server span that continues an incoming W3C
`traceparent`."""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from mcp.server.auth.provider import AccessToken, TokenVerifier
from opentelemetry import context as otel_context
from opentelemetry.propagate import extract
from opentelemetry.trace import SpanKind, Tracer
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memory.errors import BackendUnavailable
from ops.metrics import Metrics
from ops.telemetry import span

T = TypeVar("T")
UNTRACED_PATHS = frozenset({"/livez", "/readyz", "/metrics"})


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


class TraceContextMiddleware:
    """A SERVER span per HTTP request (probes excepted), continuing the caller's `traceparent`."""

    def __init__(self, app: ASGIApp, tracer: Tracer) -> None:
        self.app = app
        self.tracer = tracer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") in UNTRACED_PATHS:
            await self.app(scope, receive, send)
            return
        carrier = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers") or []}
        token = otel_context.attach(extract(carrier))
        try:
            method = scope.get("method", "GET")
            with span(
                self.tracer,
                f"{method} {scope.get('path')}",
                kind=SpanKind.SERVER,
                **{"http.request.method": method, "url.path": scope.get("path")},
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

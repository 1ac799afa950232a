"""`create_app(settings)`: the one app factory. Routes, auth middleware and the lifespan that owns the runtime.

`/mcp` (and `/mcp/`, no redirect) is the stateless streamable-HTTP MCP endpoint behind bearer auth (POST; GET is
refused with 405, see `gateway/web/routes.py`); `/livez` and `/readyz` are the probes. The lifespan opens the stores,
runs the MCP session manager and the background loops under one `Supervisor` (`gateway/services/background.py`), and
closes everything.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from opentelemetry.sdk.trace import TracerProvider
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.routing import Route

from gateway.services.assembly import open_runtime
from gateway.services.background import Supervisor
from gateway.services.maintenance import gauge_loop, maintenance_loop
from gateway.services.runtime import engine_limits
from gateway.tools.boundary import RuntimeHolder
from gateway.tools.server import build_mcp_server
from gateway.web import fairness
from gateway.web.debug import debug_routes
from gateway.web.observability import HttpRequestMetrics, Telemetry, TraceContextMiddleware, TracedTokenVerifier
from gateway.web.rate_limit_gate import CallFacts, InvalidRequestGuard, RateLimitGate
from gateway.web.refusals import RefusalLimiter
from gateway.web.routes import (
    ExplainedBearerAuth,
    McpAuthGate,
    StatelessMcpMethods,
    livez_endpoint,
    metrics_endpoint,
    no_session_to_end,
    protected_resource_endpoint,
    readyz_endpoint,
)
from memory.clock import Clock
from memory.stores.payload import skipped_payloads
from ops.config import PROTECTED_RESOURCE_PATH, Settings
from ops.metrics import Metrics
from ops.telemetry import build_tracer_provider, tracer_from
from tenancy import ClaimNames, JwtSettings, JwtVerifier, Principal, load_or_create_dev_secret, read_public_keys

LOOPBACK_HOSTS = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
LOOPBACK_ORIGINS = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]


def jwt_settings(settings: Settings) -> JwtSettings:
    """The verifier's settings: a public key or JWKS URL if configured, else the secret.

    Without any of them the dev secret in the data dir is used (and made). `jwt_algorithms` left at its default
    means the default for the key source (HS256 with a secret, RS256 + ES256 with public keys or JWKS).
    """
    asymmetric = settings.auth.jwt_public_key is not None or settings.auth.jwt_jwks_url is not None
    if settings.auth.jwt_secret is not None:
        secret = settings.auth.jwt_secret.get_secret_value()
    else:
        secret = "" if asymmetric else load_or_create_dev_secret(settings.backends.data_dir)
    return JwtSettings(
        secret=secret,
        algorithms=tuple(settings.auth.jwt_algorithms) if "jwt_algorithms" in settings.auth.model_fields_set else (),
        issuer=settings.auth.jwt_issuer,
        audience=settings.auth.jwt_audience,
        leeway_seconds=settings.auth.jwt_leeway_seconds,
        claim_names=ClaimNames(
            tenant=settings.auth.jwt_tenant_claim,
            namespaces=settings.auth.jwt_namespaces_claim,
            scope=settings.auth.jwt_scope_claim,
        ),
        max_token_bytes=settings.auth.jwt_max_token_bytes,
        public_keys=read_public_keys(settings.auth.jwt_public_key) if settings.auth.jwt_public_key is not None else (),
        jwks_url=settings.auth.jwt_jwks_url,
        jwks_cache_seconds=settings.auth.jwt_jwks_cache_seconds,
        jwks_min_refresh_seconds=settings.auth.jwt_jwks_min_refresh_seconds,
        jwks_timeout_seconds=settings.auth.jwt_jwks_timeout_seconds,
    )


def transport_security(settings: Settings) -> TransportSecuritySettings:
    if settings.serving.allowed_hosts:
        return TransportSecuritySettings(
            enable_dns_rebinding_protection=True, allowed_hosts=settings.serving.allowed_hosts
        )
    if settings.serving.host in ("127.0.0.1", "localhost", "::1"):
        return TransportSecuritySettings(
            enable_dns_rebinding_protection=True, allowed_hosts=LOOPBACK_HOSTS, allowed_origins=LOOPBACK_ORIGINS
        )
    return TransportSecuritySettings(enable_dns_rebinding_protection=False)


def create_app(
    settings: Settings,
    *,
    clock: Clock | None = None,
    tracer_provider: TracerProvider | None = None,
    settle_interpreter: bool = False,
) -> Starlette:
    """The gateway app. `tracer_provider` overrides the one built from settings (the standard `OTEL_*` variables,
    see ops/telemetry.py; tests pass an in-memory one). `settle_interpreter` (a server process: `hindsight serve`)
    keeps what startup made out of later garbage collections and switches threads sooner, once the runtime is open
    (`gateway.web.fairness.settle_interpreter`)."""
    holder = RuntimeHolder()
    provider = tracer_provider or build_tracer_provider(settings)
    telemetry = Telemetry(tracer_from(provider), Metrics(tenant_label=settings.observability.metrics_tenant_label))
    telemetry.metrics.undecodable.set_function(lambda: float(skipped_payloads()))
    backend_tracer = telemetry.tracer if provider is not None else None  # no per-call proxies when tracing is off
    verifier = TracedTokenVerifier(JwtVerifier(jwt_settings(settings)), telemetry.tracer)
    mcp = build_mcp_server(holder, telemetry, engine_limits(settings))
    mcp.streamable_http_app(
        streamable_http_path="/",
        stateless_http=True,
        json_response=True,
        transport_security=transport_security(settings),
        max_request_body_size=settings.limits.max_request_bytes,
    )

    def count_rejection(call: CallFacts, principal: Principal) -> None:
        """A 429 counts as a rate-limit rejection and as a tool call with outcome `rate_limited` (`tool="-"`
        unless the message is a `tools/call` of one of our tools: a caller cannot mint label values)."""
        metrics = telemetry.metrics
        metrics.rate_limit_rejections.labels(kind=call.kind).inc()
        tool = call.tool if call.tool is not None and mcp.has_tool(call.tool) else "-"
        metrics.tool_calls.labels(tool=tool, outcome="rate_limited", **metrics.labels(principal.tenant)).inc()

    def count_background_error(task: str) -> None:
        telemetry.metrics.background_errors.labels(task=task).inc()

    def count_background_round(task: str) -> None:
        telemetry.metrics.background_rounds.labels(task=task).inc()

    supervisor = Supervisor(count_background_error, count_background_round)
    mcp_endpoint = StatelessMcpMethods(
        post=McpAuthGate(
            RateLimitGate(
                InvalidRequestGuard(StreamableHTTPASGIApp(mcp.session_manager)),
                settings,
                holder.current,
                mcp.is_mutating,
                count_rejection,
                units=mcp.call_units,
            ),
            settings.resource_metadata_url,
        ),
        delete=McpAuthGate(no_session_to_end, settings.resource_metadata_url),
    )

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            async with (
                open_runtime(settings, clock, backend_tracer, supervisor) as runtime,
                mcp.session_manager.run(),
                anyio.create_task_group() as background,
            ):
                # innermost: whatever ends the runtime's, the session manager's or this group ends this sentinel
                await supervisor.watch("lifespan", background)
                runtime.memories.on_hidden = telemetry.metrics.count_hidden
                runtime.memories.on_written = telemetry.metrics.count_write
                if (breaker := runtime.redis_breaker) is not None:
                    telemetry.metrics.redis_breaker_state.set_function(lambda: float(breaker.state))
                    telemetry.metrics.redis_breaker_openings.set_function(lambda: float(breaker.openings))
                if settle_interpreter:
                    fairness.settle_interpreter()
                holder.set(runtime)
                app.state.runtime = runtime
                if settings.maintenance.memory_maintenance_interval_seconds > 0:
                    interval = settings.maintenance.memory_maintenance_interval_seconds
                    background.start_soon(maintenance_loop, runtime, interval, supervisor)
                background.start_soon(
                    gauge_loop, runtime, telemetry.metrics, settings.observability.metrics_sample_seconds, supervisor
                )
                try:
                    yield
                    supervisor.stopping()  # a shutdown, not a failure thrown in here
                finally:
                    holder.set(None)
                    background.cancel_scope.cancel()
        finally:  # last, once the runtime is closed: the spans of closing it are exported too
            if tracer_provider is None and provider is not None:
                provider.shutdown()  # flushes what the batch processors hold

    routes = [
        Route("/mcp", mcp_endpoint),  # every method: StatelessMcpMethods answers 405 to those it does not take
        Route("/mcp/", mcp_endpoint),
        Route("/livez", livez_endpoint(holder, supervisor), methods=["GET"]),
        Route(PROTECTED_RESOURCE_PATH, protected_resource_endpoint(settings), methods=["GET"]),
        Route(PROTECTED_RESOURCE_PATH + "/mcp", protected_resource_endpoint(settings), methods=["GET"]),
        Route("/readyz", readyz_endpoint(holder), methods=["GET"]),
        Route("/metrics", metrics_endpoint(telemetry.metrics), methods=["GET"]),
        *debug_routes(settings, holder, telemetry.metrics),
    ]
    app = Starlette(
        routes=routes,
        middleware=[
            # outermost: counts and times every request, the refusals of the layers below included
            Middleware(HttpRequestMetrics, metrics=telemetry.metrics, routes=routes),
            # before any token is verified or body read: 429 to clients whose requests keep being refused
            Middleware(
                RefusalLimiter,
                settings=settings,
                clock=(lambda: clock.now().timestamp()) if clock is not None else time.monotonic,
                on_limited=lambda: telemetry.metrics.rate_limit_rejections.labels(kind="refused").inc(),
            ),
            Middleware(TraceContextMiddleware, tracer=telemetry.tracer, routes=routes),
            Middleware(AuthenticationMiddleware, backend=ExplainedBearerAuth(verifier)),
            Middleware(AuthContextMiddleware),
        ],
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.telemetry = telemetry
    app.state.tracer_provider = provider  # None when tracing is off; `force_flush()` exports what is queued
    app.state.supervisor = supervisor
    return app

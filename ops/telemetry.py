"""OpenTelemetry tracing: the tracer provider of one app, configured by the standard OTel variables, and the
helpers that make spans.

Which exporters run is `settings.observability.otel_traces_exporters()`: none with `OTEL_SDK_DISABLED=true`; else
those `OTEL_TRACES_EXPORTER` names (`otlp`, `console`, `none`); unset, the old `HINDSIGHT_OTEL_ENABLED` if it is set
(true: `otlp`, false: none), else `otlp` when `OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT` is set, else none (spans are
no-ops). The OTLP exporter speaks http/protobuf (the only one installed; `grpc` is refused when Settings are
read), is given the endpoint Settings read, and reads its other `OTEL_EXPORTER_OTLP_*` variables (headers,
timeout, compression, TLS) from the process environment when it is built; the SDK reads `OTEL_SERVICE_NAME`,
`OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER` and `OTEL_BSP_*` likewise. All of it happens in `create_app`,
never at import. Tests pass their own provider with an in-memory exporter. Spans never carry memory content or
tokens.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from opentelemetry.sdk.resources import SERVICE_NAME, SERVICE_VERSION, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

from ops.version import VERSION

if TYPE_CHECKING:
    from ops.config import Settings

TRACER_NAME = "hindsight"
DEFAULT_SERVICE_NAME = "hindsight"
TRACES_PATH = "/v1/traces"


def build_tracer_provider(settings: Settings) -> TracerProvider | None:
    """A provider with a batching processor per configured exporter, or None when tracing is off (no-op spans).

    The caller owns it: `shutdown()` flushes what is queued (the app's lifespan does it on the way out)."""
    exporters = settings.observability.otel_traces_exporters()
    if not exporters:
        return None
    provider = TracerProvider(resource=service_resource(), shutdown_on_exit=False)
    for name in exporters:
        provider.add_span_processor(BatchSpanProcessor(_exporter(name, settings)))
    return provider


def otlp_traces_endpoint(settings: Settings) -> str | None:
    """Where OTLP spans are posted: the signal URL as given, else the base URL + `/v1/traces` (the spec's rule),
    else None (the exporter's default, http://localhost:4318/v1/traces). Passed to the exporter explicitly so that
    a value Settings read from `.env` is the one used."""
    if settings.observability.otel_exporter_otlp_traces_endpoint:
        return settings.observability.otel_exporter_otlp_traces_endpoint
    if settings.observability.otel_exporter_otlp_endpoint:
        return settings.observability.otel_exporter_otlp_endpoint.removesuffix("/") + TRACES_PATH
    return None


def service_resource() -> Resource:
    """The SDK's resource (`OTEL_RESOURCE_ATTRIBUTES`, `OTEL_SERVICE_NAME`, the SDK's own attributes), named
    `hindsight` and carrying the package version unless those variables say otherwise."""
    detected = Resource.create()
    attributes = dict(detected.attributes)
    if str(attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):  # the SDK's stand-in for "no name"
        attributes[SERVICE_NAME] = DEFAULT_SERVICE_NAME
    attributes.setdefault(SERVICE_VERSION, VERSION)
    return Resource(attributes, detected.schema_url)


def _exporter(name: str, settings: Settings) -> SpanExporter:
    if name == "console":
        return ConsoleSpanExporter()
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError as exc:  # an install without the exporter: say so at startup, never trace into nothing
        raise RuntimeError(
            "OTLP tracing is configured but opentelemetry-exporter-otlp-proto-http is not installed"
        ) from exc
    return OTLPSpanExporter(endpoint=otlp_traces_endpoint(settings))


def tracer_from(provider: Any | None) -> Tracer:
    if provider is None:
        return trace.NoOpTracer()
    return provider.get_tracer(TRACER_NAME)  # type: ignore[no-any-return]


@contextmanager
def span(tracer: Tracer, name: str, *, kind: SpanKind = SpanKind.INTERNAL, **attributes: Any) -> Iterator[Span]:
    """A span that records an exception as an error status (with the exception type, not its message)."""
    clean = {k: v for k, v in attributes.items() if v is not None}
    with tracer.start_as_current_span(name, kind=kind, attributes=clean, record_exception=False) as current:
        try:
            yield current
        except BaseException as exc:
            current.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            current.set_attribute("error.type", type(exc).__name__)
            raise

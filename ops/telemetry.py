"""OpenTelemetry tracing: the tracer provider of one app, and the helpers that make spans.

Off by default in the embedded mode. With `otel_enabled`, spans go to an OTLP/HTTP exporter configured by the
standard `OTEL_*` variables (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_SERVICE_NAME`, ...). Tests pass their own
provider with an in-memory exporter. Spans never carry memory content or tokens.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

TRACER_NAME = "hindsight"


def build_tracer_provider(enabled: bool) -> TracerProvider | None:
    """A provider exporting over OTLP/HTTP when `enabled`, else None (spans become no-ops)."""
    if not enabled:
        return None
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", "hindsight")})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return provider


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

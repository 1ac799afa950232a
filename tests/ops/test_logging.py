"""JSON log lines carry the trace id of the current span; audit events are their own stream."""

from __future__ import annotations

import json
import logging

from opentelemetry.sdk.trace import TracerProvider

from ops.logging import JsonFormatter


def record(name: str, message: str, **extra: object) -> logging.LogRecord:
    entry = logging.LogRecord(name, logging.INFO, __file__, 1, message, None, None)
    for key, value in extra.items():
        setattr(entry, key, value)
    return entry


def test_a_line_logged_inside_a_span_carries_its_trace_id() -> None:
    tracer = TracerProvider().get_tracer("test")
    with tracer.start_as_current_span("work") as span:
        line = json.loads(JsonFormatter().format(record("hindsight.gateway", "hello")))
    assert line["message"] == "hello"
    assert line["level"] == "info"
    assert line["trace_id"] == format(span.get_span_context().trace_id, "032x")


def test_a_line_outside_any_span_has_no_trace_id() -> None:
    line = json.loads(JsonFormatter().format(record("x", "plain")))
    assert "trace_id" not in line


def test_an_audit_event_is_logged_as_the_event_itself() -> None:
    event = {"tool": "write_memory", "tenant": "acme", "outcome": "created"}
    line = json.loads(JsonFormatter().format(record("hindsight.audit", json.dumps(event), audit=event)))
    assert line == {"type": "audit", **event}

"""JSON log lines carry the trace id of the current span; audit events are their own stream."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider

from ops.logging import JsonFormatter

REPO = Path(__file__).resolve().parents[2]


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


CONFIGURED_THEN_A_LIBRARY_LOGS = """
import logging
from ops.logging import configure_logging

configure_logging("info", quiet=["chatty.http"])
logging.basicConfig(level=logging.INFO, format="%(levelname)s:%(name)s:%(message)s")  # what wordllama does
logging.getLogger("wordllama").info("loaded the model")
logging.getLogger("chatty.http").info("HTTP Request: POST /mcp")
logging.getLogger("chatty.http").warning("retrying")
"""


def test_after_configure_logging_a_librarys_basicconfig_keeps_every_line_json_and_quiet_loggers_warn_only() -> None:
    result = subprocess.run(
        [sys.executable, "-c", CONFIGURED_THEN_A_LIBRARY_LOGS],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        cwd=REPO,
    )
    lines = [json.loads(line) for line in result.stderr.splitlines()]
    assert [(line["logger"], line["level"], line["message"]) for line in lines] == [
        ("wordllama", "info", "loaded the model"),
        ("chatty.http", "warning", "retrying"),
    ]

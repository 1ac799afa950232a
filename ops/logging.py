"""Structured JSON logs: one object per line with the level, logger, message and the current trace id.

Audit events (logger `hindsight.audit`) are their own stream: their line is the event itself, plus the trace id.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from opentelemetry import trace


def _trace_fields() -> dict[str, str]:
    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return {}
    return {"trace_id": format(context.trace_id, "032x"), "span_id": format(context.span_id, "016x")}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        audit: Any = getattr(record, "audit", None)
        if isinstance(audit, dict):
            body: dict[str, Any] = {"type": "audit", **audit}
        else:
            body = {
                "time": datetime.fromtimestamp(record.created, UTC).isoformat(),
                "level": record.levelname.lower(),
                "logger": record.name,
                "message": record.getMessage(),
            }
            if record.exc_info:
                body["exception"] = self.formatException(record.exc_info)
        body.update(_trace_fields())
        return json.dumps(body, ensure_ascii=False, default=str)


def configure_logging(level: str = "info", *, quiet: Iterable[str] = ()) -> None:
    """Send every log line to stderr as JSON, one object per line (called by every `hindsight` command, never at
    import). A library that calls `logging.basicConfig` later (wordllama, the MCP server) finds the root handler
    in place and changes nothing. The `quiet` loggers (the CLI's HTTP client) log warnings and errors only."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        logger.handlers[:] = []
        logger.propagate = True
    for name in quiet:
        logging.getLogger(name).setLevel(logging.WARNING)

"""Structured JSON logs: one object per line with the level, logger, message and the current trace id.

Audit events (logger `hindsight.audit`) are their own stream: their line is the event itself, plus the trace id.
"""

from __future__ import annotations

import json
import logging
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


def configure_logging(level: str = "info") -> None:
    """Send every log line to stderr as JSON (called by `hindsight serve`, never at import)."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        logger.handlers[:] = []
        logger.propagate = True

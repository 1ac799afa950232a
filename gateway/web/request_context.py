"""Per-request values that HTTP middleware hands to the tools (context variables, set per ASGI request)."""

from __future__ import annotations

from contextvars import ContextVar

idempotency_key_header: ContextVar[str | None] = ContextVar("idempotency_key_header", default=None)

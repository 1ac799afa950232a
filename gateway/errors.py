"""The one place where engine and tenancy errors become MCP tool errors and HTTP answers.

Every tool error carries a stable `code` (DESIGN §5) in its structured content, a human message, and whether
a retry may succeed. Unexpected exceptions are logged with their traceback and answered as `internal` without
their text, so nothing about another tenant or the token can leak through an error.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from mcp_types import CallToolResult, TextContent

from memory.errors import BackendUnavailable, MemoryEngineError
from tenancy import TenancyError

logger = logging.getLogger("hindsight.gateway")

HTTP_STATUS = {
    "invalid_argument": 400,
    "unauthenticated": 401,
    "scope_forbidden": 403,
    "namespace_forbidden": 403,
    "not_found": 404,
    "idempotency_conflict": 409,
    "rate_limited": 429,
    "backend_unavailable": 503,
    "internal": 500,
}
REPLAY_META = "hindsight/replayed"
RETRYABLE = frozenset({"rate_limited", "backend_unavailable"})


@dataclass(frozen=True, slots=True)
class ToolFailure:
    code: str
    message: str

    @property
    def retryable(self) -> bool:
        return self.code in RETRYABLE

    @property
    def http_status(self) -> int:
        return HTTP_STATUS.get(self.code, 500)

    def to_result(self) -> CallToolResult:
        body = {"error": {"code": self.code, "message": self.message, "retryable": self.retryable}}
        return CallToolResult(
            content=[TextContent(type="text", text=json.dumps(body, ensure_ascii=False))],
            structured_content=body,
            is_error=True,
        )


def ok_result(body: dict[str, Any], *, replayed: bool = False) -> CallToolResult:
    """A successful tool result: structured content plus the same JSON as text. A replayed idempotent answer
    carries `_meta` {"hindsight/replayed": true} and the very same content as the first answer."""
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(body, ensure_ascii=False))],
        structured_content=body,
        meta={REPLAY_META: True} if replayed else None,
    )


def failure_from_exception(exc: BaseException, tool: str) -> ToolFailure:
    """Map any exception raised under a tool call to the answer the caller gets."""
    if isinstance(exc, BackendUnavailable):
        logger.warning("tool %s: backend unavailable: %s", tool, exc.message)
        return ToolFailure("backend_unavailable", "a storage backend is unavailable; retry shortly")
    if isinstance(exc, MemoryEngineError | TenancyError):
        return ToolFailure(exc.code, exc.message)
    logger.exception("tool %s failed unexpectedly", tool, exc_info=exc)
    return ToolFailure("internal", "internal error; the request was not completed")

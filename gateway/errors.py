"""The one error table, and the one place where errors become MCP tool errors and HTTP answers.

Every error has a stable `code` (docs/TOOLS.md § "Conventions shared by every tool") and one row in `ERRORS`: its HTTP
status, its JSON-RPC error code, whether a retry may succeed, and, for 401/403, the RFC 6750 `error` of the
`WWW-Authenticate` challenge.

- A tool that fails answers a tool error (`ToolFailure.to_result`): HTTP 200, `isError: true` and one text
  content, the compact JSON `{"error":{"code":...,"message":...,"retryable":...}}`, and no structured content:
  clients (the TypeScript SDK, so MCP Inspector) validate structured content against the tool's output schema
  even on an error, and an error object never matches it.
- A request refused before any tool runs (no or bad token, no memory scope, body too large, rate limited,
  gateway not ready or limiter backend down, a method `/mcp` does not take, and the debug views' refusals)
  answers `rejection(...)`: the row's HTTP status, `WWW-Authenticate` (401, 403), `Retry-After` (429, 503) and
  a JSON-RPC 2.0 error response, so that MCP clients (the official SDK surfaces a JSON-RPC error sent with a
  non-2xx status) see the code and the retry time:
  `{"jsonrpc": "2.0", "id": <the request's id, or null>, "error": {"code": <JSON-RPC code>, "message": ...,
  "data": {"code": "rate_limited", "message": ..., "retryable": true, "retry_after_seconds": 3}}}`.

JSON-RPC codes: where JSON-RPC has the very meaning it keeps its standard code (-32600 invalid request, -32602
invalid params, -32603 internal error); the others take -32003..-32014 from the implementation-defined band
-32000..-32019 of the server-error range (the MCP SDK uses -32000 and -32001 itself, the MCP spec retired -32002
and reserves -32020..-32099). Unexpected exceptions are logged with their traceback and answered as `internal`
without their text, so nothing about another tenant or the token can leak through an error.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, CallToolResult, TextContent
from starlette.responses import Response

from memory.errors import BackendUnavailable, MemoryEngineError
from tenancy import TenancyError

logger = logging.getLogger("hindsight.gateway")

RequestId = str | int


@dataclass(frozen=True, slots=True)
class ErrorKind:
    """One row of the error table. `retry_after_seconds` is the default `Retry-After` of a retryable error."""

    http_status: int
    jsonrpc_code: int
    retryable: bool = False
    retry_after_seconds: int | None = None
    challenge: str | None = None  # RFC 6750 `error` in `WWW-Authenticate`


ERRORS: dict[str, ErrorKind] = {
    # code: ErrorKind(HTTP status, JSON-RPC error code, ...)
    "invalid_argument": ErrorKind(400, INVALID_PARAMS),  # -32602
    "invalid_request": ErrorKind(400, INVALID_REQUEST),  # -32600: a JSON-RPC request whose `id` is unusable
    "unauthenticated": ErrorKind(401, -32003, challenge="invalid_token"),
    "scope_forbidden": ErrorKind(403, -32004, challenge="insufficient_scope"),
    "namespace_forbidden": ErrorKind(403, -32005),
    "not_found": ErrorKind(404, -32006),
    "method_not_allowed": ErrorKind(405, -32007),
    "idempotency_conflict": ErrorKind(409, -32008),
    "request_too_large": ErrorKind(413, -32009),
    "rate_limited": ErrorKind(429, -32010, retryable=True, retry_after_seconds=1),
    "internal": ErrorKind(500, INTERNAL_ERROR),  # -32603
    "backend_unavailable": ErrorKind(503, -32011, retryable=True, retry_after_seconds=5),
    # answered by the connection guard (gateway/web/connections.py), below the app
    "request_timeout": ErrorKind(408, -32012, retryable=True, retry_after_seconds=1),
    "headers_too_large": ErrorKind(431, -32013),
    "overloaded": ErrorKind(503, -32014, retryable=True, retry_after_seconds=1),
}
REPLAY_META = "hindsight/replayed"


def error_kind(code: str) -> ErrorKind:
    """The row of `code`; a code without one (an engine error added later) is answered as `internal`."""
    return ERRORS.get(code, ERRORS["internal"])


@dataclass(frozen=True, slots=True)
class ToolFailure:
    code: str
    message: str

    @property
    def retryable(self) -> bool:
        return error_kind(self.code).retryable

    def to_result(self) -> CallToolResult:
        """The tool error: our error as compact JSON text, without structured content (see the module docstring)."""
        body = {"error": {"code": self.code, "message": self.message, "retryable": self.retryable}}
        return CallToolResult(content=[TextContent(type="text", text=json_text(body))], is_error=True)


def json_text(body: object) -> str:
    """The text form of a structured answer, as a tool result carries it: compact (no spaces after separators;
    an LLM reads every character of it), non-ASCII kept as is."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))


def ok_result(body: dict[str, Any], *, replayed: bool = False, text: str | None = None) -> CallToolResult:
    """A successful tool result: structured content plus, as text, `text` when the tool wrote one for the model
    (a recall's lines) or else the same JSON. A replayed idempotent answer carries `_meta`
    {"hindsight/replayed": true} and the very same content as the first answer."""
    return CallToolResult(
        content=[TextContent(type="text", text=json_text(body) if text is None else text)],
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


def rejection_body(
    code: str, message: str, *, request_id: RequestId | None = None, retry_after_seconds: int | None = None
) -> dict[str, Any]:
    """The JSON-RPC 2.0 error response of a request refused before any tool ran (see the module docstring)."""
    kind = error_kind(code)
    hint = f"{code}; retry after {retry_after_seconds} s" if retry_after_seconds is not None else code
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {
            "code": kind.jsonrpc_code,
            "message": f"{message} ({hint})",
            "data": {
                "code": code,
                "message": message,
                "retryable": kind.retryable,
                "retry_after_seconds": retry_after_seconds,
            },
        },
    }


def rejection(
    code: str,
    message: str,
    *,
    request_id: RequestId | None = None,
    retry_after_seconds: float | None = None,
    resource_metadata_url: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> Response:
    """The HTTP answer to a request refused before any tool ran: the status of `code`, its headers and the
    JSON-RPC error of `rejection_body`. A retryable code carries `Retry-After` (whole seconds, at least 1: the
    given time rounded up, else the row's default) and the same number as `retry_after_seconds`."""
    kind = error_kind(code)
    retry_after: int | None = None
    if kind.retryable:
        retry_after = kind.retry_after_seconds or 1
        if retry_after_seconds is not None:
            retry_after = max(1, math.ceil(retry_after_seconds))
    all_headers: dict[str, str] = {}
    if kind.challenge is not None:
        all_headers["WWW-Authenticate"] = bearer_challenge(kind.challenge, message, resource_metadata_url)
    if retry_after is not None:
        all_headers["Retry-After"] = str(retry_after)
    all_headers.update(headers or {})
    body = rejection_body(code, message, request_id=request_id, retry_after_seconds=retry_after)
    return Response(
        json.dumps(body, ensure_ascii=False).encode(),
        status_code=kind.http_status,
        media_type="application/json",
        headers=all_headers,
    )


def bearer_challenge(error: str, description: str, resource_metadata_url: str | None = None) -> str:
    # an RFC 9110 quoted-string of printable ASCII (a header is latin-1 at most; the body keeps the exact text)
    printable = "".join(char if " " <= char <= "~" else "?" for char in description)
    quoted = printable.replace("\\", "\\\\").replace('"', '\\"')
    challenge = f'Bearer realm="hindsight", error="{error}", error_description="{quoted}"'
    if resource_metadata_url:
        challenge += f', resource_metadata="{resource_metadata_url}"'
    return challenge

"""How a `hindsight` command fails: one line on stderr, `error: ...`, exit 2 for a usage error, 1 for a failure.

`describe(exc)` is the one place that turns an exception into that line. The MCP client runs in anyio task
groups, so what reaches the command is often an `ExceptionGroup` (nested); `describe` looks through the groups
to the error that ended the command and names what the server said: the HTTP status of a refused request (the
SDK turns it into a JSON-RPC error and drops the status, so `http_client` records it), the MCP error code, the
gateway's error code (`scope_forbidden`, `unauthenticated`, ...) and its message.
"""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

import httpx2
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult
from pydantic import ValidationError

from ops.config import setting_at

EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class CommandFailed(Exception):
    """The command could not do its work (exit 1); the message is the whole error line."""


class UsageError(CommandFailed):
    """The command was called wrongly (exit 2): a missing or contradictory option."""


class ToolFailed(CommandFailed):
    """A tool answered a tool error: the gateway's error code and message (HTTP 200, `isError`)."""

    def __init__(self, tool: str, code: str, message: str) -> None:
        super().__init__(f"{tool}: {code}: {message}")
        self.tool = tool
        self.code = code
        self.message = message


@dataclass
class LastRefusal:
    """The HTTP status of the last MCP POST when it was >= 400 (None after a success)."""

    status: int | None = None


LAST_REFUSAL = LastRefusal()  # one command per process: the refusal that ended it is the last one seen


async def _record_status(response: httpx2.Response) -> None:
    if response.request.method == "POST":
        LAST_REFUSAL.status = response.status_code if response.status_code >= 400 else None


def http_client(token: str, **kwargs: Any) -> httpx2.AsyncClient:
    """An HTTP client for the MCP SDK with the bearer token that records the status of refused requests."""
    headers = {"Authorization": f"Bearer {token}"}
    return httpx2.AsyncClient(headers=headers, event_hooks={"response": [_record_status]}, **kwargs)


def tool_error(result: CallToolResult) -> tuple[str, str]:
    """The code and message of a tool error, read from its text: the gateway's compact JSON
    `{"error":{"code":...,"message":...,"retryable":...}}` (a tool error has no structured content); any other
    text is the message, under the code `tool_error`."""
    text = " ".join(getattr(part, "text", "") for part in result.content).strip()
    try:
        error = json.loads(text).get("error")
    except (ValueError, AttributeError):  # not JSON, or JSON but not an object
        error = None
    if not isinstance(error, dict):
        return "tool_error", text
    return str(error.get("code") or "tool_error"), str(error.get("message") or text)


def tool_body(tool: str, result: CallToolResult) -> dict[str, Any]:
    """The structured content of a tool's answer; a tool error raises `ToolFailed` with the gateway's code."""
    body: dict[str, Any] | None = result.structured_content
    if result.is_error or body is None:
        raise ToolFailed(tool, *tool_error(result))
    return body


def leaves(exc: BaseException) -> list[BaseException]:
    """The errors inside (nested) exception groups, in order; an error that is not a group is its own leaf."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaves(inner)]
    return [exc]


def cause(exc: BaseException) -> BaseException:
    """The error that ended the command: the first leaf that is an `Exception` (not a cancellation)."""
    found = leaves(exc)
    return next((leaf for leaf in found if isinstance(leaf, Exception)), found[0])


def describe(exc: BaseException) -> tuple[str, int]:
    """The error line (without `error: `) and the exit code for an exception that ended a command."""
    leaf = cause(exc)
    if isinstance(leaf, KeyboardInterrupt):
        return "interrupted", EXIT_INTERRUPTED
    if isinstance(leaf, UsageError):
        return str(leaf), EXIT_USAGE
    if isinstance(leaf, ToolFailed):
        return _tool_failure(leaf), EXIT_FAILURE
    if isinstance(leaf, MCPError):
        return _mcp_error(leaf, LAST_REFUSAL.status), EXIT_FAILURE
    if isinstance(leaf, httpx2.TimeoutException):
        return f"{_url(leaf)} did not answer in time ({type(leaf).__name__})", EXIT_FAILURE
    if isinstance(leaf, httpx2.TransportError):
        return f"cannot reach {_url(leaf)}: {_reason(leaf)}", EXIT_FAILURE
    if isinstance(leaf, ValidationError) and leaf.title == "Settings":
        return _invalid_settings(leaf), EXIT_FAILURE
    if isinstance(leaf, OSError) and leaf.filename is not None:
        return f"{leaf.filename}: {(leaf.strerror or str(leaf)).lower()}", EXIT_FAILURE
    if isinstance(leaf, CommandFailed):
        return str(leaf), EXIT_FAILURE
    code = getattr(leaf, "code", None)  # the engine's errors (memory.errors) carry a stable code
    if isinstance(code, str):
        return f"{code}: {leaf}", EXIT_FAILURE
    return f"{type(leaf).__name__}: {leaf}" if str(leaf) else type(leaf).__name__, EXIT_FAILURE


def _tool_failure(failure: ToolFailed) -> str:
    from gateway.errors import ERRORS

    kind = ERRORS.get(failure.code)
    code = f" (MCP error code {kind.jsonrpc_code})" if kind else ""
    return f"{failure.tool}: {failure.code}{code}: {failure.message}"


def _mcp_error(error: MCPError, status: int | None) -> str:
    data: Mapping[str, Any] = error.data if isinstance(error.data, Mapping) else {}
    name = data.get("code")
    message = str(data.get("message") or error.message)
    if status is not None:
        head = f"{status} {_phrase(status)}"
        detail = f"{name}, MCP error code {error.code}" if name else f"MCP error code {error.code}"
    else:
        head = str(name or "refused")
        detail = f"MCP error code {error.code}"
    retry = data.get("retry_after_seconds")
    after = f"; retry after {retry} s" if retry else ""
    return f"{head} ({detail}): {message}{after}"


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase.lower()
    except ValueError:
        return "error"


def _url(error: httpx2.RequestError) -> str:
    try:
        return str(error.request.url)
    except RuntimeError:  # an error raised before a request was attached
        return "the server"


def _reason(error: BaseException) -> str:
    """The operating system's reason (`connection refused`, `name or service not known`) when there is one."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, OSError) and isinstance(seen.errno, int):
            if seen.errno > 0 and seen.errno in errno.errorcode:
                return os.strerror(seen.errno).lower()
            if seen.strerror:
                return seen.strerror.lower()
        seen = seen.__cause__ or seen.__context__
    return str(error) or type(error).__name__


def _invalid_settings(error: ValidationError) -> str:
    first = error.errors()[0]
    field = setting_at(first["loc"])  # the variable's name: the setting's flat name, not its group
    where = f"HINDSIGHT_{field.upper()}" if field else "settings"
    more = f" (and {error.error_count() - 1} more)" if error.error_count() > 1 else ""
    return f"invalid setting {where}: {first['msg']}{more}"

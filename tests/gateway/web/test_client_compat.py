"""Compatibility with an MCP client other than the official SDK's `mcp.Client` (issue #15.8): FastMCP's `Client`
(PyPI `fastmcp`, a dev dependency) over its streamable-HTTP transport with bearer auth, against the real app
served by uvicorn on a free localhost port, so every request crosses TCP as it does for a deployed gateway.

FastMCP has its own client API (result parsing into `.data`, `ToolError` for tool errors, its own session
runner) but speaks through the official SDK's transport and `ClientSession` underneath, so this checks what an
agent built on FastMCP sees, not a second wire implementation (the official TypeScript SDK, which MCP Inspector
is built on, is that check: tests/gateway/web/test_typescript_client.py). langchain-mcp-adapters cannot be installed
beside `mcp` 2.x (0.3.2 requires `mcp<2.0.0`; 0.3.1 allows any `mcp` but fails at import), so it is not tested
here (docs/CLIENTS.md)."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import fastmcp
import httpx2
import pytest
import uvicorn
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from fastmcp.exceptions import ToolError
from mcp import MCPError
from starlette.applications import Starlette

from gateway.web.app import create_app
from memory.clock import ManualClock
from ops.config import TenantLimits
from tests.conftest import Mint, make_settings

pytestmark = pytest.mark.anyio

# Importing fastmcp adds camelCase aliases (`isError`, ...) to the SDK's `mcp_types` models for the whole test
# process; turned off, they raise AttributeError as before, so no other test can come to rely on them.
fastmcp.settings.mcp_camelcase_compat = False

ONE_READ = TenantLimits(
    subject_read_per_minute=60, subject_write_per_minute=60, tenant_read_per_minute=600, burst_seconds=1
)  # one read of burst per subject, refilled at 1 per second: never, on the server's stopped clock


def live(url: str) -> bool:
    """One readiness probe; it waits (up to a second) for uvicorn to accept, so polling needs no sleep."""
    try:
        return httpx2.get(url, timeout=1.0).status_code == 200
    except httpx2.TimeoutException:
        return False


@contextmanager
def served(app: Starlette) -> Iterator[str]:
    """`app` served by uvicorn in a thread on a free localhost port; yields its MCP URL once `/livez` says 200.

    The socket listens before uvicorn starts, so the readiness probe's connection waits in the backlog until
    the lifespan has started and uvicorn accepts it: no guessed delay."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = int(sock.getsockname()[1])
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, access_log=False, lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while not live(f"http://127.0.0.1:{port}/livez"):
            assert thread.is_alive(), "uvicorn exited before serving"
            assert time.monotonic() < deadline, "the gateway did not become live"
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


@pytest.fixture(scope="module")
def mcp_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One gateway for the module (generous limits); each test writes as a tenant of its own."""
    with served(create_app(make_settings(tmp_path_factory.mktemp("compat") / "data"))) as url:
        yield url


@pytest.fixture
def rate_limited_url(tmp_path: Path) -> Iterator[str]:
    """A gateway whose subjects get one read call, on a stopped clock so the bucket never refills."""
    settings = make_settings(tmp_path / "data", rate_limit_default=ONE_READ)
    with served(create_app(settings, clock=ManualClock(datetime.now(UTC)))) as url:
        yield url


def fastmcp_client(url: str, token: str | None) -> Client[StreamableHttpTransport]:
    return Client(StreamableHttpTransport(url, auth=token))  # a str `auth` is sent as `Authorization: Bearer`


async def test_fastmcp_lists_the_memory_tools_with_a_bearer_token(mcp_url: str, mint: Mint) -> None:
    async with fastmcp_client(mcp_url, mint(tenant="compat-list")) as client:
        tools = await client.list_tools()
    assert {"write_memory", "recall_memory"} <= {tool.name for tool in tools}


async def test_a_memory_written_through_fastmcp_is_recalled_through_fastmcp(mcp_url: str, mint: Mint) -> None:
    content = "The user's favourite editor is Helix"
    async with fastmcp_client(mcp_url, mint(tenant="compat-recall")) as client:
        written = await client.call_tool("write_memory", {"content": content})
        recalled = await client.call_tool("recall_memory", {"query": "which editor does the user like?"})
    assert not written.is_error
    assert written.structured_content is not None
    assert written.structured_content["status"] == "created"
    assert written.structured_content["id"]
    assert recalled.structured_content is not None
    assert content in [hit["content"] for hit in recalled.structured_content["memories"]]


async def test_fastmcp_raises_a_tool_error_carrying_invalid_argument_for_a_bad_importance(
    mcp_url: str, mint: Mint
) -> None:
    arguments = {"content": "The deploy target is eu-west-1", "importance": "high"}
    async with fastmcp_client(mcp_url, mint(tenant="compat-invalid")) as client:
        with pytest.raises(ToolError) as raised:
            await client.call_tool("write_memory", arguments)
        unraised = await client.call_tool("write_memory", arguments, raise_on_error=False)
    # The ToolError's message is the tool result's text: our error object as JSON.
    error = json.loads(str(raised.value))["error"]
    assert error["code"] == "invalid_argument"
    assert error["retryable"] is False
    assert "importance" in error["message"]
    assert unraised.is_error
    assert unraised.structured_content is None  # nothing the output schema would refuse (the TS SDK checks it)
    assert unraised.data is None
    assert json.loads(unraised.content[0].text)["error"] == error  # type: ignore[union-attr]


async def test_fastmcp_over_the_rate_limit_raises_mcp_error_carrying_rate_limited(
    rate_limited_url: str, mint: Mint
) -> None:
    async with fastmcp_client(rate_limited_url, mint(tenant="compat-limited")) as client:
        await client.call_tool("whoami", {})  # the one read in the bucket; connecting spent none of it
        with pytest.raises(MCPError) as raised:
            await client.call_tool("whoami", {})
    # Not wrapped in an exception group (the SDK's own `Client` wraps refusals at connect time).
    assert raised.value.code == -32010
    assert raised.value.data["code"] == "rate_limited"
    assert raised.value.data["retryable"] is True
    assert raised.value.data["retry_after_seconds"] >= 1
    assert "rate_limited; retry after" in str(raised.value)


@pytest.mark.parametrize("token", ["not-a-token", None], ids=["invalid-token", "no-token"])
async def test_fastmcp_without_a_valid_token_fails_to_connect_with_mcp_error_unauthenticated(
    mcp_url: str, token: str | None
) -> None:
    with pytest.raises(MCPError) as raised:
        async with fastmcp_client(mcp_url, token):
            pass
    assert raised.value.code == -32003
    assert raised.value.data["code"] == "unauthenticated"

"""`/mcp` methods on a stateless server (issue #12, deliverable 7): GET, which would open an SSE stream that
never sends, is refused at once with 405 and `Allow: POST, DELETE`; DELETE has no session to end; a real MCP
client works all the same."""

from __future__ import annotations

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from starlette.applications import Starlette

from tests.conftest import BASE_URL, Mint, data

pytestmark = pytest.mark.anyio


def http_client(app: Starlette, token: str | None = None, **kwargs: object) -> httpx2.AsyncClient:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx2.AsyncClient(
        transport=httpx2.ASGITransport(app=app),
        base_url=BASE_URL,
        headers=headers,
        **kwargs,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("path", ["/mcp", "/mcp/"])
async def test_get_mcp_is_refused_at_once_with_405_and_the_methods_it_takes(
    app: Starlette, mint: Mint, path: str
) -> None:
    async with http_client(app, mint()) as http:
        with anyio.fail_after(5):  # it used to open a stream that never sent nor closed
            response = await http.get(path, headers={"Accept": "text/event-stream"})
    assert response.status_code == 405
    assert response.headers["allow"] == "POST, DELETE"
    assert response.headers["content-type"] == "application/json"
    assert response.json()["error"]["message"].startswith("Method Not Allowed")


async def test_other_methods_than_post_and_delete_are_refused_with_405(app: Starlette) -> None:
    async with http_client(app) as http:
        with anyio.fail_after(5):
            unauthenticated_get = await http.get("/mcp")
            put = await http.put("/mcp", content=b"{}")
            head = await http.head("/mcp")
    assert [r.status_code for r in (unauthenticated_get, put, head)] == [405, 405, 405]
    assert all(r.headers["allow"] == "POST, DELETE" for r in (unauthenticated_get, put, head))


async def test_delete_mcp_ends_no_session_and_still_needs_a_token(app: Starlette, mint: Mint) -> None:
    async with http_client(app) as anonymous, http_client(app, mint()) as http:
        with anyio.fail_after(5):
            refused = await anonymous.delete("/mcp")
            ended = await http.delete("/mcp", headers={"Mcp-Session-Id": "never-issued"})
    assert refused.status_code == 401
    assert ended.status_code == 204
    assert ended.content == b""


async def test_a_real_mcp_client_works_without_a_get_stream(app: Starlette, mint: Mint) -> None:
    methods: list[str] = []

    async def note(request: httpx2.Request) -> None:
        methods.append(request.method)

    http = http_client(app, mint(), event_hooks={"request": [note]})
    with anyio.fail_after(30):
        async with http, Client(streamable_http_client(f"{BASE_URL}/mcp", http_client=http)) as client:
            assert data(await client.call_tool("whoami", {}))["tenant"] == "acme"
            written = data(await client.call_tool("write_memory", {"content": "The client needs no stream"}))
            assert written["status"] == "created"
        async with http_client(app, mint()) as raw:
            probe = await raw.get("/mcp")  # what a client that asks for a stream anyway is told
    assert set(methods) == {"POST"}  # no session id: the SDK client opens no GET stream and sends no DELETE
    assert probe.status_code == 405

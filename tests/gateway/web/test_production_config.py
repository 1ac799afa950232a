"""The production configuration end to end: Redis for shared state and the Qdrant-server store (through
qdrant-client's local mode, the same code path as a server) behind the real app and a real MCP client."""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest

from gateway.web.app import create_app
from tests.conftest import BASE_URL, Mint, data, error_code, make_settings, mcp_session, running

pytestmark = pytest.mark.anyio


async def test_redis_and_qdrant_client_backends_serve_every_tool(tmp_path: Path, redis_url: str, mint: Mint) -> None:
    settings = make_settings(tmp_path / "data", redis_url=redis_url, qdrant_url=":memory:")
    token = mint(read=["user:1", "shared:t"], write=["user:1", "shared:t"])
    async with running(create_app(settings)) as app:
        async with mcp_session(app, token) as client:
            written = data(
                await client.call_tool(
                    "write_memory",
                    {"content": "The user's deploy region is eu-west-1", "request_id": "p-1", "share_to": ["shared:t"]},
                )
            )
            replay = data(
                await client.call_tool(
                    "write_memory",
                    {"content": "The user's deploy region is eu-west-1", "request_id": "p-1", "share_to": ["shared:t"]},
                )
            )
            hits = data(
                await client.call_tool("recall_memory", {"query": "which region do we deploy to", "detail": "full"})
            )
            data(await client.call_tool("forget_memory", {"id": written["id"]}))
            after = data(await client.call_tool("recall_memory", {"query": "which region do we deploy to"}))
            turn = data(await client.call_tool("record_turn", {"session_id": "s", "role": "user", "content": "hi"}))
            session = data(await client.call_tool("get_working_memory", {"session_id": "s"}))
            conflict = await client.call_tool("write_memory", {"content": "other", "request_id": "p-1"})
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=BASE_URL) as http:
            ready = await http.get("/readyz")
    assert replay == written
    assert [h["origin_id"] or h["id"] for h in hits["memories"]] == [written["id"]]
    assert after["memories"] == []
    assert turn["turns"] == 1
    assert session["turns"][0]["content"] == "hi"
    assert error_code(conflict) == "idempotency_conflict"
    assert ready.status_code == 200

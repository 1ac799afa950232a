"""`/debug/*` shows a tenant's admin that tenant's figures alone (issue #12, deliverable 7): two tenants call
tools, and each admin's `/debug/stats` counts only its own calls and latencies."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
import pytest
from starlette.applications import Starlette

from gateway.web.app import create_app
from memory.clock import ManualClock
from tests.conftest import BASE_URL, Mint, data, make_settings, mcp_session, running

pytestmark = pytest.mark.anyio


@pytest.fixture
async def debug_app(tmp_path: Path, clock: ManualClock) -> AsyncIterator[Starlette]:
    async with running(create_app(make_settings(tmp_path / "data", debug_views_enabled=True), clock=clock)) as app:
        yield app


async def stats_of(app: Starlette, token: str) -> httpx2.Response:
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=BASE_URL) as http:
        return await http.get("/debug/stats", headers={"Authorization": f"Bearer {token}"})


async def test_debug_stats_show_an_admin_only_their_own_tenants_calls(debug_app: Starlette, mint: Mint) -> None:
    async with mcp_session(debug_app, mint(tenant="acme")) as client:
        for i in range(3):
            data(await client.call_tool("write_memory", {"content": f"acme fact number {i}"}))
        data(await client.call_tool("recall_memory", {"query": "acme fact"}))
        data(await client.call_tool("recall_memory", {"query": "acme fact"}))
    async with mcp_session(debug_app, mint(tenant="globex")) as client:
        data(await client.call_tool("write_memory", {"content": "globex fact"}))

    acme = await stats_of(debug_app, mint(tenant="acme", sub="ops", read=[], write=[], admin=True))
    globex = await stats_of(debug_app, mint(tenant="globex", sub="ops", read=[], write=[], admin=True))
    quiet = await stats_of(debug_app, mint(tenant="initech", sub="ops", read=[], write=[], admin=True))

    assert acme.status_code == globex.status_code == quiet.status_code == 200
    assert acme.json()["tenant"] == "acme"
    assert acme.json()["recall"]["count"] == 2
    assert acme.json()["write"]["count"] == 3
    assert acme.json()["tool_calls"] == {"recall_memory": {"ok": 2}, "write_memory": {"ok": 3}}
    assert globex.json()["recall"]["count"] == 0
    assert globex.json()["write"]["count"] == 1
    assert globex.json()["tool_calls"] == {"write_memory": {"ok": 1}}
    assert quiet.json()["tool_calls"] == {}
    assert quiet.json()["write"] == {"count": 0, "p50_ms": None, "p95_ms": None, "p99_ms": None}


async def test_debug_memories_never_show_another_tenants_namespace(debug_app: Starlette, mint: Mint) -> None:
    async with mcp_session(debug_app, mint(tenant="acme")) as client:
        data(await client.call_tool("write_memory", {"content": "acme secret plan"}))
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=debug_app), base_url=BASE_URL) as http:
        response = await http.get(
            "/debug/memories?namespace=user:1&limit=5",
            headers={"Authorization": f"Bearer {mint(tenant='globex', sub='ops', read=[], write=[], admin=True)}"},
        )
    assert response.status_code == 200
    assert response.json()["tenant"] == "globex"
    assert response.json()["memories"] == []

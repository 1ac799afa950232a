"""Idempotent writes by `request_id` / `Idempotency-Key`, in-process and on a real Redis: concurrent retries
give one memory and identical answers; the same id with other arguments is a conflict."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import httpx2
import pytest
from starlette.applications import Starlette

from gateway.errors import REPLAY_META
from gateway.web.app import create_app
from memory.clock import ManualClock
from tests.conftest import BASE_URL, Mint, data, error_code, make_settings, mcp_session, running

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["in-process", "redis"])
async def backend_app(request: pytest.FixtureRequest, tmp_path: Path, clock: ManualClock) -> AsyncIterator[Starlette]:
    overrides = {"redis_url": request.getfixturevalue("redis_url")} if request.param == "redis" else {}
    async with running(create_app(make_settings(tmp_path / "data", **overrides), clock=clock)) as app:
        yield app


async def test_concurrent_retries_with_one_request_id_store_one_memory(backend_app: Starlette, mint: Mint) -> None:
    token = mint()
    results: list[dict[str, object]] = []
    replays = 0

    async def call() -> None:
        nonlocal replays
        async with mcp_session(backend_app, token) as client:
            result = await client.call_tool(
                "write_memory", {"content": "Invoice 1042 was paid", "request_id": "req-42"}
            )
            results.append(data(result))
            replays += bool(result.meta and result.meta.get(REPLAY_META))

    async with anyio.create_task_group() as group:
        for _ in range(100):
            group.start_soon(call)
    async with mcp_session(backend_app, token) as client:
        listed = data(await client.call_tool("list_memories", {"limit": 200}))
    assert len(listed["memories"]) == 1
    assert len(results) == 100
    assert all(r == results[0] for r in results)
    assert results[0]["status"] == "created"
    assert replays == 99


async def test_the_same_request_id_with_other_arguments_is_a_conflict(backend_app: Starlette, mint: Mint) -> None:
    async with mcp_session(backend_app, mint()) as client:
        data(await client.call_tool("write_memory", {"content": "first", "request_id": "r-1"}))
        conflict = await client.call_tool("write_memory", {"content": "second", "request_id": "r-1"})
        listed = data(await client.call_tool("list_memories", {}))
    assert error_code(conflict) == "idempotency_conflict"
    assert [m["content"] for m in listed["memories"]] == ["first"]


async def test_request_ids_are_scoped_to_the_caller(backend_app: Starlette, mint: Mint) -> None:
    async with mcp_session(backend_app, mint(sub="a")) as client:
        first = data(await client.call_tool("write_memory", {"content": "from a", "request_id": "same"}))
    async with mcp_session(backend_app, mint(sub="b")) as client:
        second = data(await client.call_tool("write_memory", {"content": "from b", "request_id": "same"}))
    assert first["id"] != second["id"]


async def test_the_idempotency_key_header_works_like_request_id(backend_app: Starlette, mint: Mint) -> None:
    headers = {"Authorization": f"Bearer {mint()}", "Idempotency-Key": "hdr-1"}
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    http = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=backend_app), base_url=BASE_URL, headers=headers)
    async with http, Client(streamable_http_client(f"{BASE_URL}/mcp", http_client=http)) as client:
        first = await client.call_tool("write_memory", {"content": "via header"})
        again = await client.call_tool("write_memory", {"content": "via header"})
    assert data(first) == data(again)
    assert again.meta
    assert again.meta.get(REPLAY_META)


async def test_a_key_sent_as_the_header_is_the_request_id_the_engine_records(
    backend_app: Starlette, mint: Mint
) -> None:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {mint()}", "Idempotency-Key": "hdr-2"}
    http = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=backend_app), base_url=BASE_URL, headers=headers)
    async with http, Client(streamable_http_client(f"{BASE_URL}/mcp", http_client=http)) as client:
        written = data(await client.call_tool("write_memory", {"content": "forced via header", "force": True}))
        event = data(await client.call_tool("record_event", {"session_id": "s", "type": "system", "content": "x"}))
        [memory] = data(await client.call_tool("list_memories", {}))["memories"]
    assert (memory["id"], memory["source"]["request_id"]) == (written["id"], "hdr-2")  # a retry finds it by this
    assert event["event"]["request_id"] == "hdr-2"


async def test_a_failed_call_does_not_poison_its_request_id(backend_app: Starlette, mint: Mint) -> None:
    async with mcp_session(backend_app, mint()) as client:
        failed = await client.call_tool(
            "forget_memory", {"id": "01890a5d-ac96-774b-bcce-b302099a8057", "request_id": "f"}
        )
        written = data(await client.call_tool("write_memory", {"content": "later", "request_id": "w"}))
        forgotten = data(await client.call_tool("forget_memory", {"id": written["id"], "request_id": "f2"}))
    assert error_code(failed) == "not_found"
    assert forgotten["status"] == "forgotten"

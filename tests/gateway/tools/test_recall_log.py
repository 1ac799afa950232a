"""The recall log and the session debug view (issue 18, item 2), through the real app and the official MCP
client: nothing is logged unless the tenant opted in (`recall_log_tenants`); an opted-in tenant's recalls are
logged with their arguments, returned ids and score parts, shown newest first to that tenant's admins only
(`recall_log`), bounded by count and by age (a `ManualClock`, no sleeps), shared by replicas on Redis; and
`/debug/sessions/{id}` (and the `debug_session` tool, same JSON) shows a session's events, working memory,
extracted memories and recalls, to admin tokens only and only when debug views are enabled."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from starlette.applications import Starlette

from gateway.web.app import create_app
from memory.clock import ManualClock
from tests.conftest import BASE_URL, Mint, data, error_code, make_settings, mcp_session, running, tool_error
from tests.redis_server import RedisServer

pytestmark = pytest.mark.anyio

FACTS = ["The user prefers dark roast coffee", "The user's deploy target is AWS eu-west-1", "The user has a dog"]
PARTS = {"similarity", "recency", "importance", "access_frequency", "cues"}


@asynccontextmanager
async def gateway(tmp_path: Path, clock: ManualClock, **overrides: Any) -> AsyncIterator[Starlette]:
    async with running(create_app(make_settings(tmp_path / "data", **overrides), clock=clock)) as app:
        yield app


def admin_of(mint: Mint, tenant: str = "acme") -> str:
    return mint(tenant=tenant, sub="ops", read=[], write=[], admin=True)


async def write_facts(client: Client) -> None:
    for fact in FACTS:
        data(await client.call_tool("write_memory", {"content": fact}))


async def logged(app: Starlette, token: str, **arguments: Any) -> dict[str, Any]:
    async with mcp_session(app, token) as client:
        return data(await client.call_tool("recall_log", arguments))


async def test_nothing_is_logged_unless_the_tenant_opted_in(tmp_path: Path, clock: ManualClock, mint: Mint) -> None:
    async with gateway(tmp_path, clock) as app:
        async with mcp_session(app, mint()) as client:
            await write_facts(client)
            data(await client.call_tool("recall_memory", {"query": "coffee"}))
        answer = await logged(app, admin_of(mint))
    assert answer == {"tenant": "acme", "logging": False, "entries": []}


async def test_an_opted_in_tenant_s_recalls_are_logged_with_ids_and_score_parts(
    tmp_path: Path, clock: ManualClock, mint: Mint
) -> None:
    async with gateway(tmp_path, clock, recall_log_tenants=["acme"]) as app:
        async with mcp_session(app, mint()) as client:
            await write_facts(client)
            first = data(await client.call_tool("recall_memory", {"query": "coffee", "top_k": 2}))
            clock.advance(1)
            second = data(
                await client.call_tool(
                    "recall_memory",
                    {"query": "where do we deploy", "namespaces": ["user:1"], "session_id": "s1", "format": "context"},
                )
            )
        async with mcp_session(app, mint(tenant="globex")) as client:  # not opted in
            await write_facts(client)
            data(await client.call_tool("recall_memory", {"query": "coffee"}))
        acme = await logged(app, admin_of(mint))
        globex = await logged(app, admin_of(mint, "globex"))
        only_s1 = await logged(app, admin_of(mint), session_id="s1")
        newest = await logged(app, admin_of(mint), limit=1)

    assert acme["logging"] is True
    newer, older = acme["entries"]
    assert (older["query"], older["subject"]) == ("coffee", "agent-1")
    assert older["arguments"] == {"top_k": 2, "format": "memories", "order": "score"}
    assert [m["id"] for m in older["memories"]] == [m["id"] for m in first["memories"]]
    assert [m["score"] for m in older["memories"]] == [m["score"] for m in first["memories"]]
    assert all(set(m["scores"]) >= PARTS and m["namespace"] == "user:1" for m in older["memories"])
    assert older["memories"][0]["scores"]["similarity"] > 0
    assert newer["arguments"] == {
        "namespaces": ["user:1"],
        "session_id": "s1",
        "format": "context",
        "order": "score",
    }
    assert [m["id"] for m in newer["memories"]] == [m["id"] for m in second["citations"]]
    assert newer["at"] > older["at"]
    assert globex == {"tenant": "globex", "logging": False, "entries": []}  # nothing of acme's log
    assert only_s1["entries"] == [newer]
    assert newest["entries"] == [newer]


async def test_another_tenant_s_admin_sees_nothing_of_an_opted_in_tenant_s_log(
    tmp_path: Path, clock: ManualClock, mint: Mint
) -> None:
    async with gateway(tmp_path, clock, recall_log_tenants=["acme", "globex"]) as app:
        async with mcp_session(app, mint()) as client:
            await write_facts(client)
            data(await client.call_tool("recall_memory", {"query": "acme secret coffee", "session_id": "s1"}))
        globex = await logged(app, admin_of(mint, "globex"))
        globex_s1 = await logged(app, admin_of(mint, "globex"), session_id="s1")
        acme = await logged(app, admin_of(mint))
    assert globex["entries"] == globex_s1["entries"] == []
    assert [e["query"] for e in acme["entries"]] == ["acme secret coffee"]


async def test_a_non_admin_can_neither_see_nor_call_the_admin_tools(
    tmp_path: Path, clock: ManualClock, mint: Mint
) -> None:
    async with gateway(tmp_path, clock, recall_log_tenants=["acme"]) as app:
        async with mcp_session(app, mint()) as client:
            await write_facts(client)
            data(await client.call_tool("recall_memory", {"query": "coffee"}))
            listed = {tool.name for tool in (await client.list_tools()).tools}
            refused = await client.call_tool("recall_log", {})
            refused_debug = await client.call_tool("debug_session", {"session_id": "s1", "namespace": "user:1"})
    assert "recall_log" not in listed and "debug_session" not in listed and "recall_memory" in listed
    assert error_code(refused) == error_code(refused_debug) == "scope_forbidden"
    assert "coffee" not in str(tool_error(refused))


async def test_the_log_keeps_at_most_max_entries_and_nothing_older_than_max_age(
    tmp_path: Path, clock: ManualClock, mint: Mint
) -> None:
    bounds = {"recall_log_max_entries": 3, "recall_log_max_age_seconds": 600}
    async with gateway(tmp_path, clock, recall_log_tenants=["acme"], **bounds) as app:
        async with mcp_session(app, mint()) as client:
            await write_facts(client)
            for n in range(5):
                data(await client.call_tool("recall_memory", {"query": f"coffee {n}"}))
                clock.advance(100)
        by_count = await logged(app, admin_of(mint))  # coffee n was logged at 100·n s; now is 500 s
        clock.advance(350)  # 850 s: coffee 2 is 650 s old, coffee 3 550 s
        coffee_2_gone = await logged(app, admin_of(mint))
        clock.advance(100)  # 950 s: coffee 3 is 650 s old, coffee 4 550 s
        coffee_3_gone = await logged(app, admin_of(mint))
        clock.advance(100)
        gone = await logged(app, admin_of(mint))
    assert [e["query"] for e in by_count["entries"]] == ["coffee 4", "coffee 3", "coffee 2"]
    assert [e["query"] for e in coffee_2_gone["entries"]] == ["coffee 4", "coffee 3"]
    assert [e["query"] for e in coffee_3_gone["entries"]] == ["coffee 4"]
    assert gone["entries"] == []


async def test_replicas_on_redis_share_one_log(tmp_path: Path, clock: ManualClock, mint: Mint, redis_url: str) -> None:
    shared = {"redis_url": redis_url, "recall_log_tenants": ["acme"]}
    async with (
        gateway(tmp_path / "a", clock, **shared) as replica_a,
        gateway(tmp_path / "b", clock, **shared) as replica_b,
    ):
        async with mcp_session(replica_a, mint()) as client:
            await write_facts(client)
            recalled = data(await client.call_tool("recall_memory", {"query": "coffee", "explain": True}))
        seen = await logged(replica_b, admin_of(mint))
        other = await logged(replica_b, admin_of(mint, "globex"))
    (entry,) = seen["entries"]
    assert [m["id"] for m in entry["memories"]] == [m["id"] for m in recalled["memories"]]
    assert [m["scores"] for m in entry["memories"]] == [m["scores"] for m in recalled["memories"]]
    assert other["entries"] == []


async def get_session_view(app: Starlette, token: str | None, path: str) -> httpx2.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=BASE_URL) as http:
        return await http.get(path, headers=headers)


async def test_the_session_view_is_absent_unless_enabled_and_refused_without_an_admin_token(
    tmp_path: Path, clock: ManualClock, mint: Mint
) -> None:
    path = "/debug/sessions/t1?namespace=user:1"
    async with gateway(tmp_path / "off", clock, recall_log_tenants=["acme"]) as app:
        disabled = await get_session_view(app, admin_of(mint), path)
    async with gateway(tmp_path / "on", clock, debug_views_enabled=True) as app:
        anonymous = await get_session_view(app, None, path)
        user = await get_session_view(app, mint(), path)
        no_namespace = await get_session_view(app, admin_of(mint), "/debug/sessions/t1")
        admin = await get_session_view(app, admin_of(mint), path)
    assert disabled.status_code == 404
    assert anonymous.status_code == 401
    assert user.status_code == 403 and user.json()["error"]["data"]["code"] == "scope_forbidden"
    assert no_namespace.status_code == 400
    assert admin.status_code == 200 and admin.json()["session"] is None and admin.json()["events"] == []


async def test_the_session_view_shows_events_working_memory_extracted_memories_and_recalls(
    tmp_path: Path, clock: ManualClock, mint: Mint
) -> None:
    async with gateway(tmp_path, clock, debug_views_enabled=True, recall_log_tenants=["acme"]) as app:
        async with mcp_session(app, mint()) as client:
            data(await client.call_tool("start_session", {"session_id": "t1", "goal": "plan a trip"}))
            event = data(
                await client.call_tool(
                    "record_event",
                    {"session_id": "t1", "type": "user_message", "content": "I fly to Lisbon on Friday."},
                )
            )["event"]
            data(await client.call_tool("update_working_memory", {"session_id": "t1", "state": {"step": "book"}}))
            data(await client.call_tool("record_turn", {"session_id": "t1", "role": "user", "content": "Book it"}))
            data(await client.call_tool("write_memory", {"content": "The user likes window seats"}))  # no session
            data(await client.call_tool("recall_memory", {"query": "Lisbon", "session_id": "t1"}))
            data(await client.call_tool("recall_memory", {"query": "seats"}))  # another session's (none)
        async with mcp_session(app, admin_of(mint)) as client:
            extracted = data(await client.call_tool("reextract", {"session_id": "t1", "namespace": "user:1"}))
            tool_view = data(await client.call_tool("debug_session", {"session_id": "t1", "namespace": "user:1"}))
        response = await get_session_view(app, admin_of(mint), "/debug/sessions/t1?namespace=user:1")
        foreign = await get_session_view(app, admin_of(mint, "globex"), "/debug/sessions/t1?namespace=user:1")

    assert response.status_code == 200
    view = response.json()
    assert view == tool_view  # one builder behind both
    assert (view["tenant"], view["namespace"], view["session_id"]) == ("acme", "user:1", "t1")
    assert view["session"]["goal"] == "plan a trip" and view["session"]["status"] == "active"
    assert [e["id"] for e in view["events"]] == [event["id"]] and view["events_truncated"] is False
    assert view["working_memory"]["state"]["step"] == "book"
    assert [t["content"] for t in view["working_memory"]["turns"]] == ["Book it"]
    written = extracted["extraction"]["written"]
    assert written and {m["id"] for m in view["memories"]} >= set(written)
    assert all(m["session_id"] == "t1" for m in view["memories"])
    assert all(m["content"] != "The user likes window seats" for m in view["memories"])
    assert any(m["metadata"].get("source_event_ids") == [event["id"]] for m in view["memories"])
    assert [r["query"] for r in view["recalls"]] == ["Lisbon"]
    assert foreign.status_code == 200
    assert foreign.json()["session"] is None and foreign.json()["events"] == foreign.json()["recalls"] == []


async def test_a_failed_log_write_never_fails_the_recall(
    tmp_path: Path, clock: ManualClock, mint: Mint, own_redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    settings = {"redis_url": own_redis.url, "recall_log_tenants": ["acme"], "rate_limit_enabled": False}
    async with gateway(tmp_path, clock, **settings) as app:
        async with mcp_session(app, mint()) as client:
            await write_facts(client)
            own_redis.stop()  # the recall reads the vector store; only the log write needs Redis
            recalled = await client.call_tool("recall_memory", {"query": "coffee"})
    assert data(recalled)["memories"][0]["content"] == FACTS[0]
    assert any(r.name == "hindsight.recall_log" and "backend_unavailable" in r.getMessage() for r in caplog.records)

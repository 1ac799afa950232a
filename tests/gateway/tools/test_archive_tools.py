"""The archive through MCP (issue #18.5), on the real app with the official client: scheduled maintenance archives
a memory nobody wrote or recalled for `archive_after_days`; `list_memories(hidden="archived")` lists it with its
reason, `recall_memory` leaves it out unless `include_archived` (then it comes marked `archived`), `restore_memory`
brings it back into default recall; export carries it and import stores it archived again; another tenant never
sees it. Time moves with the app's `ManualClock`."""

from __future__ import annotations

from datetime import timedelta

import httpx2
import pytest
from starlette.applications import Starlette

from gateway.answers.serialize import iso
from gateway.services.maintenance import maintain_all
from memory.clock import ManualClock
from tests.conftest import BASE_URL, Mint, data, error_code, mcp_session
from tests.gateway.tools.test_hidden_memories import hidden_counts

pytestmark = pytest.mark.anyio

CANOE = "The user once rented a red canoe on Lake Bled"
BY_KEYWORDS = "red canoe Bled"
BY_MEANING = "paddling a small boat"  # no word in common with CANOE


def ids(answer: dict[str, object]) -> list[str]:
    memories = answer["memories"]
    assert isinstance(memories, list)
    return [m["id"] for m in memories]


async def write_idle_memory(app: Starlette, token: str, clock: ManualClock) -> str:
    """A memory about something 200 days ago, stored 100 days ago and never recalled since, next to a fresh one,
    then a maintenance pass: the old one is archived."""
    async with mcp_session(app, token) as client:
        old = iso(clock.now() - timedelta(days=200))
        canoe = data(await client.call_tool("write_memory", {"content": CANOE, "occurred_at": old}))
        clock.advance(100 * 24 * 3600)
        data(await client.call_tool("write_memory", {"content": "The user prefers tea over coffee"}))
    reports = await maintain_all(app.state.runtime)
    assert [report["archived"] for report in reports.values()] == [1]
    return str(canoe["id"])


async def test_an_idle_memory_is_archived_recalled_only_with_include_archived_and_restored(
    app: Starlette, mint: Mint, clock: ManualClock
) -> None:
    token = mint(tenant="acme")
    canoe = await write_idle_memory(app, token, clock)
    async with mcp_session(app, token) as client:
        call = client.call_tool
        archived = data(await call("list_memories", {"hidden": "archived"}))["memories"]
        live = data(await call("list_memories", {}))
        default = data(await call("recall_memory", {"query": BY_KEYWORDS}))
        lean = data(await call("recall_memory", {"query": BY_KEYWORDS, "include_archived": True}))
        full = data(await call("recall_memory", {"query": BY_KEYWORDS, "include_archived": True, "detail": "full"}))
        by_meaning = data(await call("recall_memory", {"query": BY_MEANING, "include_archived": True}))
        restored = data(await call("restore_memory", {"id": canoe}))
        after = data(await call("recall_memory", {"query": BY_MEANING}))
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=BASE_URL) as http:
        counts = hidden_counts((await http.get("/metrics")).text)

    [record] = archived
    assert (record["id"], record["archive_reason"], record["deleted_at"]) == (canoe, "idle", None)
    assert record["archived_at"] == iso(clock.now()) and record["content"] == CANOE
    assert canoe not in ids(live) and canoe not in ids(default)
    [hit] = [h for h in lean["memories"] if h["id"] == canoe]
    assert hit["archived"] is True and "archived_at" not in hit  # lean: the flag alone
    [detailed] = [h for h in full["memories"] if h["id"] == canoe]
    assert detailed["archive_reason"] == "idle" and detailed["source"]["subject"] == "agent-1"
    assert canoe not in ids(by_meaning)  # out of the dense index: only its keywords find it
    assert restored == {"status": "restored", "id": canoe, "namespace": "user:1"}
    [back] = [h for h in after["memories"] if h["id"] == canoe]
    assert "archived" not in back
    assert counts["archived"] == 1.0


async def test_another_tenant_never_sees_or_restores_an_archived_memory(
    app: Starlette, mint: Mint, clock: ManualClock
) -> None:
    canoe = await write_idle_memory(app, mint(tenant="acme"), clock)
    async with mcp_session(app, mint(tenant="globex")) as client:
        recalled = data(await client.call_tool("recall_memory", {"query": BY_KEYWORDS, "include_archived": True}))
        listed = data(await client.call_tool("list_memories", {"hidden": "archived"}))
        restore = await client.call_tool("restore_memory", {"id": canoe})

    assert recalled["memories"] == [] and listed["memories"] == []
    assert error_code(restore) == "not_found"


async def test_export_and_import_carry_an_archived_memory_back_into_the_archive(
    app: Starlette, mint: Mint, clock: ManualClock
) -> None:
    user = mint(tenant="acme")
    canoe = await write_idle_memory(app, user, clock)
    keys = ("content", "created_at", "archived_at", "archive_reason", "deleted_at")
    async with mcp_session(app, mint(tenant="acme", sub="ops", read=[], write=[], admin=True)) as client:
        before = data(await client.call_tool("export_memories", {"namespace": "user:1"}))["records"]
        data(await client.call_tool("purge_namespace", {"namespace": "user:1", "confirm": "user:1"}))
        data(await client.call_tool("import_memories", {"namespace": "user:1", "records": before}))
        after = data(await client.call_tool("export_memories", {"namespace": "user:1"}))["records"]
    async with mcp_session(app, user) as client:
        default = data(await client.call_tool("recall_memory", {"query": BY_KEYWORDS}))
        archive = data(await client.call_tool("recall_memory", {"query": BY_KEYWORDS, "include_archived": True}))

    [exported] = [r for r in before if r["id"] == canoe]
    assert exported["archive_reason"] == "idle" and exported["archived_at"] is not None
    assert sorted(tuple(r[k] for k in keys) for r in after) == sorted(tuple(r[k] for k in keys) for r in before)
    [imported] = [r for r in after if r["content"] == CANOE]
    assert imported["id"] not in ids(default)
    assert [h["id"] for h in archive["memories"] if h.get("archived")] == [imported["id"]]

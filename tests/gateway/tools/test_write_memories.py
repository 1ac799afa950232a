"""`write_memories` through the real app and a real MCP client (issue #19, item 4): a batch stores what the same
statements written one by one with `write_memory` store, each item answers on its own, an item's `request_id`
is a `write_memory` request id (a retried batch replays what was done and writes the rest), a batch left half
done completes on retry, a malformed call writes nothing, and a batch costs a write token per item."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from starlette.applications import Starlette

from gateway.errors import REPLAY_META
from gateway.web.app import create_app
from memory.clock import ManualClock
from memory.requests import WriteRequest
from ops.config import SETTING_FIELDS, Settings
from tenancy import Principal, scope_for
from tests.conftest import (
    BASE_URL,
    Mint,
    calls_per_minute,
    data,
    error_code,
    make_settings,
    mcp_session,
    running,
    tool_error,
)

pytestmark = pytest.mark.anyio

CONFIGURATION = Path(__file__).resolve().parents[3] / "docs" / "CONFIGURATION.md"
MEMORY_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
# distinct facts, an exact repeat within the batch, chit-chat, a value that supersedes an earlier one, a session
# of two turns, a near-duplicate, a forced repeat, a tagged memory with a ttl, and a memory with a speaker
STATEMENTS: list[dict[str, Any]] = [
    {"content": "We use MySQL for the orders service", "kind": "semantic"},
    {"content": "The user's dog is called Pepper", "tags": ["pets"]},
    {"content": "ok thanks!"},
    {"content": "The user's dog is called Pepper", "tags": ["pets"]},
    {"content": "We migrated the orders service to PostgreSQL", "kind": "semantic"},
    {"content": "Did you book the venue for Anna's birthday dinner?", "session_id": "s1"},
    {"content": "Yes, the Lisbon place on Rua Augusta, for eight", "session_id": "s1"},
    {"content": "The user's dog is named Pepper", "tags": ["dog"]},
    {"content": "ok thanks!", "force": True},
    {"content": "Remind me to renew the passport", "ttl_seconds": 3600, "importance": 0.9},
    {"content": "I moved to Porto in 2021", "metadata": {"speaker": "Maria"}, "occurred_at": "2024-03-27T10:00:00Z"},
]


def comparable(answers: list[dict[str, Any]], memories: list[dict[str, Any]]) -> str:
    """Answers and stored memories with every memory id replaced by its order of appearance and the namespace
    dropped, so two writes of the same statements into two namespaces compare equal."""
    names: dict[str, str] = {}
    text = json.dumps({"answers": answers, "memories": memories}, sort_keys=True)
    text = text.replace('"user:1"', '"ns"').replace('"user:2"', '"ns"')
    return MEMORY_ID.sub(lambda m: names.setdefault(m.group(), f"#{len(names)}"), text)


async def stored(client: Client, namespace: str) -> list[dict[str, Any]]:
    listed = data(await client.call_tool("list_memories", {"namespace": namespace, "include_deleted": True}))
    return [
        {k: v for k, v in memory.items() if k not in ("namespace", "created_at", "updated_at", "last_accessed_at")}
        for memory in listed["memories"]
    ]


def item_answer(result: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in result.items() if k != "index"}


async def test_a_batch_stores_the_same_memories_as_the_same_writes_one_by_one(app: Starlette, mint: Mint) -> None:
    token = mint(read=["user:1", "user:2"], write=["user:1", "user:2"])
    async with mcp_session(app, token) as client:
        singles = [data(await client.call_tool("write_memory", {**item, "namespace": "user:1"})) for item in STATEMENTS]
        batch = data(await client.call_tool("write_memories", {"items": STATEMENTS, "namespace": "user:2"}))
        one_by_one, batched = await stored(client, "user:1"), await stored(client, "user:2")

    assert [r["index"] for r in batch["results"]] == list(range(len(STATEMENTS)))
    assert comparable([item_answer(r) for r in batch["results"]], batched) == comparable(singles, one_by_one)
    statuses = [r["status"] for r in batch["results"]]
    assert statuses[2:4] == ["skipped", "skipped"]  # chit-chat, and the repeat of item 1 within the batch
    assert batch["results"][3]["id"] == batch["results"][1]["id"]
    assert batch["results"][4]["superseded"] == [batch["results"][0]["id"]]
    assert (batch["created"], batch["skipped"], batch["failed"]) == (
        statuses.count("created"),
        statuses.count("skipped"),
        0,
    )


async def test_each_item_answers_on_its_own_and_a_refused_item_does_not_stop_the_others(
    app: Starlette, mint: Mint, settings: Settings
) -> None:
    items = [
        {"content": "The user works at Globex"},
        {"content": "The user likes tea", "namespace": "user:99"},
        {"content": "The user visited Rome", "occurred_at": "last Tuesday"},
        {"content": "x" * (settings.limits.max_content_chars + 1)},
        {"content": "The user's sister is called Ines"},
    ]
    async with mcp_session(app, mint()) as client:
        batch = data(await client.call_tool("write_memories", {"items": items}))
        listed = data(await client.call_tool("list_memories", {}))

    results = batch["results"]
    assert [r.get("status") for r in results] == ["created", None, None, None, "created"]
    assert [r["error"]["code"] for r in results[1:4]] == ["namespace_forbidden", "invalid_argument", "invalid_argument"]
    assert "occurred_at" in results[2]["error"]["message"]
    assert not any(r["error"]["retryable"] for r in results[1:4])
    assert (batch["created"], batch["failed"]) == (2, 3)
    assert sorted(m["content"] for m in listed["memories"]) == sorted([items[0]["content"], items[4]["content"]])


@pytest.mark.parametrize(
    ("items", "field"),
    [
        ([{"content": "The user likes tea"}, {"content": "The user likes jazz", "colour": "red"}], "items.1.colour"),
        ([{"content": "The user likes tea", "importance": "high"}], "items.0.importance"),
        ([{"tags": ["x"]}], "items.0.content"),
        ([{"content": "The user likes tea", "explain": True}], "items.0.explain"),
        (
            [
                {"content": "The user likes tea", "request_id": "r1"},
                {"content": "The user likes jazz", "request_id": "r1"},
            ],
            "items.0 and items.1 share a request_id",
        ),
    ],
    ids=["unknown-field", "wrong-type", "no-content", "explain", "shared-request-id"],
)
async def test_a_malformed_item_refuses_the_whole_call_naming_it_and_writes_nothing(
    app: Starlette, mint: Mint, items: list[dict[str, Any]], field: str
) -> None:
    async with mcp_session(app, mint()) as client:
        refused = await client.call_tool("write_memories", {"items": items})
        listed = data(await client.call_tool("list_memories", {}))
    assert error_code(refused) == "invalid_argument"
    assert field in tool_error(refused)["message"]
    assert listed["memories"] == []


async def test_more_items_than_the_limit_refuse_the_whole_call_and_the_limit_is_published(
    tmp_path: Path, clock: ManualClock, mint: Mint
) -> None:
    async with running(create_app(make_settings(tmp_path / "data", max_batch_items=3), clock=clock)) as app:
        async with mcp_session(app, mint()) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            refused = await client.call_tool("write_memories", {"items": [{"content": f"Fact {n}"} for n in range(4)]})
            listed = data(await client.call_tool("list_memories", {}))
    schema = tools["write_memories"].input_schema
    assert schema["properties"]["items"]["maxItems"] == 3
    assert schema["properties"]["items"]["items"] == {"type": "object", "required": ["content"]}  # write_memory's
    assert error_code(refused) == "invalid_argument" and "at most 3 items" in tool_error(refused)["message"]
    assert listed["memories"] == []


async def test_a_retried_batch_replays_the_items_done_and_writes_the_rest_and_write_memory_replays_an_item(
    app: Starlette, mint: Mint
) -> None:
    first_items = [
        {"content": "Invoice 1042 was paid", "request_id": "imp-1"},
        {"content": "Invoice 1043 was sent to Globex", "request_id": "imp-2"},
    ]
    retry_items = [*first_items, {"content": "Invoice 1044 is overdue", "request_id": "imp-3"}]
    async with mcp_session(app, mint()) as client:
        first = data(await client.call_tool("write_memories", {"items": first_items}))
        retry = data(await client.call_tool("write_memories", {"items": retry_items}))
        single = await client.call_tool("write_memory", {"content": "Invoice 1042 was paid", "request_id": "imp-1"})
        conflict = data(
            await client.call_tool("write_memories", {"items": [{"content": "Invoice 9", "request_id": "imp-3"}]})
        )
        listed = data(await client.call_tool("list_memories", {}))

    assert [r["status"] for r in first["results"]] == ["created", "created"]
    assert [item_answer(r) for r in retry["results"][:2]] == [
        {**item_answer(r), "replayed": True} for r in first["results"]
    ]
    assert retry["results"][2]["status"] == "created" and "replayed" not in retry["results"][2]
    assert data(single) == item_answer(first["results"][0])
    assert single.meta is not None and single.meta.get(REPLAY_META) is True
    assert conflict["results"][0]["error"]["code"] == "idempotency_conflict"
    assert len(listed["memories"]) == 3


async def test_a_batch_left_half_written_by_a_crash_is_completed_by_its_retry(app: Starlette, mint: Mint) -> None:
    items = [{"content": f"Shipment {n} left the Porto warehouse", "request_id": f"ship-{n}"} for n in range(4)]
    runtime = app.state.runtime
    principal = Principal(subject="agent-1", tenant="acme", write_namespaces=("user:1",))
    # what a crash after storing the first two items leaves: their memories, no idempotency record
    done = await runtime.memories.write_many(
        scope_for(principal),
        [WriteRequest(content=i["content"], subject="agent-1", request_id=i["request_id"]) for i in items[:2]],
    )
    async with mcp_session(app, mint()) as client:
        retry = data(await client.call_tool("write_memories", {"items": items}))
        listed = data(await client.call_tool("list_memories", {}))

    assert [r["status"] for r in retry["results"]] == ["created"] * 4
    assert [r["id"] for r in retry["results"][:2]] == [outcome.id for outcome in done]
    assert all("completed an interrupted earlier attempt" in r["reason"] for r in retry["results"][:2])
    assert len(listed["memories"]) == 4


async def test_a_batch_costs_one_write_token_per_item(tmp_path: Path, clock: ManualClock, mint: Mint) -> None:
    tight = calls_per_minute(read=600, write=60, burst_seconds=5)  # 5 write tokens of burst, 1 per second
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "write_memories", "arguments": {"items": [{"content": f"Fact {n}"} for n in range(4)]}},
    }
    headers = {"accept": "application/json, text/event-stream", "authorization": f"Bearer {mint()}"}
    async with running(create_app(make_settings(tmp_path / "data", rate_limit_default=tight), clock=clock)) as app:
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=BASE_URL) as http:
            first = await http.post("/mcp", json=body, headers=headers)  # 4 of 5 tokens
            second = await http.post("/mcp", json=body, headers=headers)  # 1 left: refused
            clock.advance(3)
            after_refill = await http.post("/mcp", json=body, headers=headers)
    assert first.status_code == 200 and "error" not in first.json()
    assert second.status_code == 429 and int(second.headers["retry-after"]) >= 3
    assert after_refill.status_code == 200


def test_the_configuration_table_documents_the_batch_limit_with_its_default() -> None:
    lines = CONFIGURATION.read_text(encoding="utf-8").splitlines()
    row = next(line for line in lines if "HINDSIGHT_MAX_BATCH_ITEMS" in line)
    assert f"| `{SETTING_FIELDS['max_batch_items'].default}` |" in row


async def test_each_written_item_counts_as_a_write_and_a_replayed_item_does_not(app: Starlette, mint: Mint) -> None:
    items = [{"content": "Quarterly planning is in March", "request_id": "q-1"}, {"content": "ok", "request_id": "q-2"}]
    async with mcp_session(app, mint()) as client:
        for _ in range(2):
            data(await client.call_tool("write_memories", {"items": items}))
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=BASE_URL) as http:
        text = (await http.get("/metrics")).text
    assert 'hindsight_writes_total{action="created"} 1.0' in text
    assert 'hindsight_writes_total{action="skipped"} 1.0' in text
    assert 'hindsight_tool_calls_total{outcome="ok",tool="write_memories"} 2.0' in text

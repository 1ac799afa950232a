"""The agent loop over MCP (issue #17): a whole task session (start with background, events with a tool call
bound to its result, end with extraction and archive), recall of the extracted facts with their source events,
the sweep of a session an agent never ended, re-extraction, export/import and purge of events, through the real
app and a real MCP client."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from starlette.applications import Starlette

from gateway.services.maintenance import sweep_sessions
from memory.clock import ManualClock
from tests.chat_server import ChatRequest, ChatServer
from tests.conftest import Mint, data, error_code, make_settings, mcp_session, running

pytestmark = pytest.mark.anyio

FLIGHT = "帮我查一下北京到上海的航班，要明天上午的，最好国航"


async def call(client: Any, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return data(await client.call_tool(tool, arguments))


async def test_a_whole_task_session_is_started_recorded_ended_and_its_facts_recalled_with_their_events(
    app: Starlette, mint: Mint, clock: ManualClock
) -> None:
    async with mcp_session(app, mint()) as client:
        await call(client, "write_memory", {"content": "The user is afraid of flying at night"})
        started = await call(client, "start_session", {"session_id": "trip-1", "goal": "book a flight for the user"})
        said = await call(client, "record_event", {"session_id": "trip-1", "type": "user_message", "content": FLIGHT})
        await call(
            client,
            "record_event",
            {
                "session_id": "trip-1",
                "type": "tool_call",
                "content": '{"from": "PEK", "to": "SHA"}',
                "metadata": {"call_id": "c1", "tool": "search_flights"},
            },
        )
        bound = await call(
            client,
            "record_event",
            {
                "session_id": "trip-1",
                "type": "tool_result",
                "content": "3 results, cheapest CA1501 at 08:00",
                "metadata": {"call_id": "c1"},
            },
        )
        working = await call(client, "get_working_memory", {"session_id": "trip-1"})
        ended = await call(client, "end_session", {"session_id": "trip-1"})
        again = await call(client, "end_session", {"session_id": "trip-1"})
        events = await call(client, "list_events", {"session_id": "trip-1"})
        recalled = await call(client, "recall_memory", {"query": "国航 航班", "top_k": 10})
        after = await call(client, "get_working_memory", {"session_id": "trip-1"})

    assert [hit["content"] for hit in started["background"]] == ["The user is afraid of flying at night"]
    assert started["session"]["status"] == "active"
    assert working["state"]["session"]["goal"] == "book a flight for the user"
    assert bound["event"]["type"] == "tool_call"  # the result was bound to its call, not stored apart
    assert bound["event"]["result"] == "3 results, cheapest CA1501 at 08:00"
    assert [e["type"] for e in events["events"]] == ["user_message", "tool_call"]

    assert ended["session"]["status"] == "ended"
    assert ended["session"]["end_reason"] == "ended"
    assert ended["extraction"]["method"] == "rules"
    assert ended["extraction"]["events"] == 2
    assert len(ended["extraction"]["written"]) >= 2
    assert again["already_ended"] is True
    assert again["extraction"]["written"] == []
    assert after["state"] == {}  # working memory cleared once archived

    extracted = {hit["content"]: hit for hit in recalled["memories"] if "source_event_ids" in hit}
    flight = next(content for content in extracted if "北京到上海" in content)
    assert "明天（" in flight  # the relative date made absolute
    assert extracted[flight]["source_event_ids"] == [said["event"]["id"]]
    preference = next(content for content in extracted if "偏好国航" in content)
    assert extracted[preference]["source_event_ids"] == [said["event"]["id"]]
    tool_fact = [c for c in extracted if "search_flights" in c]
    assert tool_fact == [] or extracted[tool_fact[0]]["source_event_ids"] == [bound["event"]["id"]]


async def test_a_session_an_agent_never_ended_is_swept_and_its_facts_extracted(
    app: Starlette, mint: Mint, clock: ManualClock
) -> None:
    async with mcp_session(app, mint()) as client:
        await call(client, "start_session", {"session_id": "crashed"})
        await call(
            client,
            "record_event",
            {"session_id": "crashed", "type": "user_message", "content": "I moved to Lisbon last month for work."},
        )
        clock.advance(app.state.runtime.settings.maintenance.session_idle_seconds + 1)

        report = await sweep_sessions(app.state.runtime)
        listed = await call(client, "list_memories", {})
        events = await call(client, "list_events", {"session_id": "crashed"})

    assert report["ended"] == {"acme": ["user:1/crashed"]}
    [fact] = [m for m in listed["memories"] if "Lisbon" in m["content"]]
    assert fact["content"].startswith("The user moved to Lisbon last month (")
    assert fact["metadata"]["source_event_ids"] == [events["events"][0]["id"]]
    assert fact["session_id"] == "crashed"


async def test_events_leaving_the_window_are_extracted_before_the_session_ends(app: Starlette, mint: Mint) -> None:
    window = app.state.runtime.settings.limits.working_memory_turns
    async with mcp_session(app, mint()) as client:
        for n in range(window + 2):
            await call(
                client,
                "record_event",
                {"session_id": "long", "type": "user_message", "content": f"My locker number is {100 + n}."},
            )
        listed = await call(client, "list_memories", {})
    contents = [m["content"] for m in listed["memories"]]
    assert contents == ["The user's locker number is 100.", "The user's locker number is 101."]


async def test_a_tool_result_without_a_call_id_and_an_unknown_type_are_refused(app: Starlette, mint: Mint) -> None:
    async with mcp_session(app, mint()) as client:
        no_call = await client.call_tool("record_event", {"session_id": "s", "type": "tool_result", "content": "42"})
        bad_type = await client.call_tool("record_event", {"session_id": "s", "type": "thought", "content": "hm"})
        events = await call(client, "list_events", {"session_id": "s"})
    assert error_code(no_call) == "invalid_argument"
    assert error_code(bad_type) == "invalid_argument"
    assert events["events"] == []


async def test_another_tenant_sees_no_event_and_a_reader_cannot_record_one(app: Starlette, mint: Mint) -> None:
    async with mcp_session(app, mint()) as client:
        await call(client, "record_event", {"session_id": "s", "type": "user_message", "content": "My PIN is 4321."})
    async with mcp_session(app, mint(tenant="other")) as client:
        theirs = await call(client, "list_events", {"session_id": "s"})
    async with mcp_session(app, mint(read=["user:1"], write=[])) as client:
        refused = await client.call_tool(
            "record_event", {"session_id": "s", "type": "user_message", "content": "x", "namespace": "user:1"}
        )
        mine = await call(client, "list_events", {"session_id": "s", "namespace": "user:1"})
    assert theirs["events"] == []
    assert error_code(refused) in {"namespace_forbidden", "scope_forbidden"}
    assert [e["content"] for e in mine["events"]] == ["My PIN is 4321."]


async def test_reextract_supersedes_the_facts_a_better_extraction_replaces(
    tmp_path: Any, mint: Mint, chat_server: ChatServer
) -> None:
    answers = iter(["not json", "[]"])

    def reply(request: ChatRequest) -> str:
        body = json.loads(request.prompt)
        first = body["events"][0]["id"]
        text = next(answers, "")
        if text == "[]":
            fact = {
                "content": "The user's home city is Porto, Portugal.",
                "source_event_ids": [first],
                "kind": "semantic",
            }
            return json.dumps([fact])
        return text

    chat_server.reply = reply
    settings = make_settings(
        tmp_path / "data", llm_url=chat_server.url, llm_model="stand-in", llm_extraction_timeout_seconds=5
    )
    clock = ManualClock(datetime(2026, 6, 1, tzinfo=UTC))
    from gateway.web.app import create_app

    async with running(create_app(settings, clock=clock)) as app, mcp_session(app, mint()) as client:
        await call(client, "record_event", {"session_id": "s", "type": "user_message", "content": "I live in Porto."})
        ended = await call(client, "end_session", {"session_id": "s"})
        async with mcp_session(app, mint(admin=True)) as admin:
            redone = await call(admin, "reextract", {"session_id": "s", "namespace": "user:1"})
        hidden = await call(client, "list_memories", {"hidden": "superseded"})
        live = await call(client, "list_memories", {})

    assert ended["extraction"]["method"] == "rules"  # the stand-in answered prose: fell back
    assert ended["extraction"]["fallback_reason"].startswith("invalid_answer")
    assert redone["extraction"]["method"] == "llm"
    assert [m["content"] for m in live["memories"]] == ["The user's home city is Porto, Portugal."]
    assert [m["id"] for m in hidden["memories"]] == redone["superseded"] == ended["extraction"]["written"]
    assert [m["content"] for m in hidden["memories"]] == ["The user lives in Porto."]
    assert hidden["memories"][0]["superseded_by"] == live["memories"][0]["id"]


async def test_events_are_exported_imported_and_purged_with_their_namespace(app: Starlette, mint: Mint) -> None:
    async with mcp_session(app, mint()) as client:
        await call(client, "start_session", {"session_id": "s1", "goal": "plan"})
        await call(client, "record_event", {"session_id": "s1", "type": "user_message", "content": "I like tea."})
        await call(client, "end_session", {"session_id": "s1"})
    async with mcp_session(app, mint(read=[], write=[], admin=True)) as admin:
        exported = await call(admin, "export_events", {"namespace": "user:1"})
        imported = await call(admin, "import_events", {"namespace": "user:2", "sessions": exported["sessions"]})
        repeated = await call(admin, "import_events", {"namespace": "user:2", "sessions": exported["sessions"]})
        purged = await call(admin, "purge_namespace", {"namespace": "user:1", "confirm": "user:1"})
        copy = await call(admin, "export_events", {"namespace": "user:2"})
        gone = await call(admin, "export_events", {"namespace": "user:1"})
        bad = await admin.call_tool(
            "import_events", {"namespace": "user:2", "sessions": [{"session": {"status": "odd"}, "events": []}]}
        )

    [entry] = exported["sessions"]
    assert entry["session"]["status"] == "ended"
    assert entry["session"]["archive"]["state"]["session"]["goal"] == "plan"
    assert [e["content"] for e in entry["events"]] == ["I like tea."]
    assert (imported["events"], imported["sessions"]) == (1, 1)
    assert (repeated["events"], repeated["sessions"]) == (0, 0)
    assert (purged["events_deleted"], purged["sessions_deleted"]) == (1, 1)
    assert [e["id"] for e in copy["sessions"][0]["events"]] == [e["id"] for e in entry["events"]]
    assert gone["sessions"] == []
    assert error_code(bad) == "invalid_argument"

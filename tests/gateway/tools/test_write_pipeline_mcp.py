"""The write pipeline through MCP: chit-chat is skipped with a reason (and stored when forced), a contradicting
fact supersedes the old one, a time-bound fact expires on the controlled clock, and with an LLM configured for
importance the LLM's rating is stored."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.applications import Starlette

from gateway.web.app import create_app
from memory.clock import ManualClock
from tests.chat_server import ChatServer
from tests.conftest import Mint, data, make_settings, mcp_session, running

pytestmark = pytest.mark.anyio


async def test_chit_chat_is_skipped_with_a_reason_unless_forced(app: Starlette, mint: Mint) -> None:
    async with mcp_session(app, mint()) as client:
        skipped = data(await client.call_tool("write_memory", {"content": "ok thanks!"}))
        forced = data(await client.call_tool("write_memory", {"content": "ok thanks!", "force": True}))
        skipped_zh = data(await client.call_tool("write_memory", {"content": "好的，明白了"}))
        listed = data(await client.call_tool("list_memories", {}))
    assert skipped["status"] == "skipped" and skipped["id"] is None
    assert skipped["reason"].startswith("low_information")
    assert skipped_zh["status"] == "skipped"
    assert forced["status"] == "created"
    assert [m["id"] for m in listed["memories"]] == [forced["id"]]


async def test_a_contradicting_fact_supersedes_the_old_one(app: Starlette, mint: Mint) -> None:
    async with mcp_session(app, mint()) as client:
        old = data(await client.call_tool("write_memory", {"content": "We use MySQL for the orders service"}))
        new = data(await client.call_tool("write_memory", {"content": "We migrated the orders service to PostgreSQL"}))
        hits = data(await client.call_tool("recall_memory", {"query": "which database does the orders service use"}))
        history = data(
            await client.call_tool(
                "recall_memory", {"query": "which database does the orders service use", "include_superseded": True}
            )
        )
        listed = data(await client.call_tool("list_memories", {"include_deleted": True}))
    assert new["status"] == "created"
    assert new["superseded"] == [old["id"]]
    assert hits["memories"][0]["id"] == new["id"]
    assert old["id"] not in [m["id"] for m in hits["memories"]]
    assert old["id"] in [m["id"] for m in history["memories"]]
    by_id = {m["id"]: m for m in listed["memories"]}
    assert by_id[old["id"]]["superseded_by"] == new["id"]
    assert by_id[new["id"]]["supersedes"] == [old["id"]]


async def test_turns_of_a_session_link_to_the_turn_before_and_an_answer_is_recalled_with_its_question(
    app: Starlette, mint: Mint, clock: ManualClock
) -> None:
    turns = ["Did you book the venue for Anna's birthday dinner?", "Yes, the Lisbon place on Rua Augusta, for eight"]
    async with mcp_session(app, mint()) as client:
        written = []
        for turn in turns:
            written.append(data(await client.call_tool("write_memory", {"content": turn, "session_id": "chat-7"})))
            clock.advance(1)
        await client.call_tool("write_memory", {"content": "Anna prefers window seats on flights"})
        hits = data(await client.call_tool("recall_memory", {"query": "birthday dinner venue booking", "top_k": 2}))
        listed = data(await client.call_tool("list_memories", {}))
    by_id = {m["id"]: m for m in listed["memories"]}
    assert by_id[written[0]["id"]]["follows"] is None
    assert by_id[written[1]["id"]]["follows"] == written[0]["id"]
    assert [m["id"] for m in hits["memories"]] == [w["id"] for w in written]


async def test_a_plan_whose_day_has_passed_is_recalled_as_history_and_marked(
    app: Starlette, mint: Mint, clock: ManualClock
) -> None:
    async with mcp_session(app, mint()) as client:
        written = data(
            await client.call_tool("write_memory", {"content": "I have a dentist appointment tomorrow at 3pm"})
        )
        before = data(await client.call_tool("recall_memory", {"query": "dentist appointment", "detail": "full"}))
        clock.advance(3 * 24 * 3600)
        after = data(await client.call_tool("recall_memory", {"query": "dentist appointment"}))
        passed = data(await client.call_tool("list_memories", {"hidden": "passed"}))
    assert [m["id"] for m in before["memories"]] == [written["id"]]
    assert "passed_plan" not in before["memories"][0]
    assert before["memories"][0]["metadata"]["_pipeline"]["expiry"]["day"]  # the day it is about, noted
    assert [(m["id"], m.get("passed_plan")) for m in after["memories"]] == [(written["id"], True)]
    assert [m["id"] for m in passed["memories"]] == [written["id"]]


async def test_with_llm_importance_configured_a_write_stores_the_llms_rating(
    tmp_path: Path, mint: Mint, clock: ManualClock, chat_server: ChatServer
) -> None:
    chat_server.reply = lambda request: "9"
    settings = make_settings(
        tmp_path / "data", llm_url=chat_server.url, llm_model="rater", llm_api_key="k-1", llm_importance=True
    )
    content = "The user is training for the Berlin marathon in September"
    async with running(create_app(settings, clock=clock)) as app, mcp_session(app, mint()) as client:
        written = data(await client.call_tool("write_memory", {"content": content}))
        listed = data(await client.call_tool("list_memories", {}))
    [memory] = listed["memories"]
    assert memory["id"] == written["id"]
    assert memory["importance"] == 0.9
    assert memory["metadata"]["_pipeline"]["importance"] == {"value": 0.9, "source": "llm"}
    [request] = chat_server.requests
    assert request.authorization == "Bearer k-1" and request.body["model"] == "rater"
    assert request.prompt == content

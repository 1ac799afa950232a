"""The MCP tools over HTTP through the real app: results, ranking, validation and working memory."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.applications import Starlette

from memory.clock import ManualClock
from memory.recall.scoring import ScoringWeights
from tests.conftest import Mint, data, error_code, mcp_session, tool_error

pytestmark = pytest.mark.anyio

TOOLS = {
    "write_memory",
    "recall_memory",
    "forget_memory",
    "restore_memory",
    "list_memories",
    "record_turn",
    "get_working_memory",
    "update_working_memory",
    "whoami",
}


async def test_every_design_tool_is_listed_with_a_description(app: Starlette, mint: Mint) -> None:
    async with mcp_session(app, mint()) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) >= TOOLS
    assert all(tools[name].description and len(tools[name].description or "") > 30 for name in TOOLS)


async def test_whoami_reports_the_tokens_identity_and_grants(app: Starlette, mint: Mint) -> None:
    token = mint(tenant="acme", sub="agent-7", read=["user:42", "shared:support"], write=["user:42"])
    async with mcp_session(app, token) as client:
        me = data(await client.call_tool("whoami", {}))
    assert me == {
        "subject": "agent-7",
        "tenant": "acme",
        "namespaces": {"read": ["user:42", "shared:support"], "write": ["user:42"]},
        "scopes": ["memory:read", "memory:write"],
    }


async def test_written_memory_is_recalled_with_its_score_parts(app: Starlette, mint: Mint) -> None:
    async with mcp_session(app, mint()) as client:
        written = data(
            await client.call_tool(
                "write_memory",
                {"content": "The user prefers dark roast coffee", "tags": ["prefs"], "importance": 0.9},
            )
        )
        assert written["status"] == "created"
        assert written["namespace"] == "user:1"
        recalled = data(
            await client.call_tool("recall_memory", {"query": "what coffee", "explain": True, "detail": "full"})
        )
    [hit] = recalled["memories"]
    assert hit["id"] == written["id"]
    assert hit["content"] == "The user prefers dark roast coffee"
    assert hit["tags"] == ["prefs"]
    parts = hit["scores"]
    w = ScoringWeights()  # the settings' defaults (tests/ops checks they agree)
    expected = w.similarity * parts["similarity"] + w.recency * parts["recency"] + w.importance * parts["importance"]
    expected += w.access_frequency * parts["access_frequency"]
    assert parts["keyword"] > 0  # "coffee" matched
    assert parts["cues"] == []  # no speaker, no question, no "when": nothing but similarity moved it
    assert hit["score"] == pytest.approx(expected, abs=1e-5)
    assert parts["importance"] == pytest.approx(0.9)


async def test_recall_ranks_the_relevant_memory_first_among_distractors(app: Starlette, mint: Mint) -> None:
    distractors = [
        "The quarterly report is due at the end of March",
        "Deployments go to AWS region eu-west-1",
        "The team standup is every morning at 9:30",
        "The office wifi password was rotated last week",
        "Our CI pipeline runs on GitHub Actions",
        "The customer asked for invoices in PDF format",
        "The staging database is PostgreSQL 16",
        "Alice is on vacation until next Monday",
    ]
    async with mcp_session(app, mint()) as client:
        for text in distractors:
            data(await client.call_tool("write_memory", {"content": text}))
        target = data(await client.call_tool("write_memory", {"content": "The user is allergic to peanuts"}))
        for text in distractors[:3]:
            data(await client.call_tool("write_memory", {"content": text + " (confirmed)"}))
        hits = data(await client.call_tool("recall_memory", {"query": "food allergy peanuts", "top_k": 5}))
    assert hits["memories"][0]["id"] == target["id"]


async def test_exact_repeat_is_skipped_and_force_stores_it(app: Starlette, mint: Mint) -> None:
    async with mcp_session(app, mint()) as client:
        first = data(await client.call_tool("write_memory", {"content": "Ship the release on Friday"}))
        again = data(await client.call_tool("write_memory", {"content": "  ship the release on friday "}))
        forced = data(await client.call_tool("write_memory", {"content": "Ship the release on Friday", "force": True}))
    assert again["status"] == "skipped"
    assert again["id"] == first["id"]
    assert again["reason"]
    assert forced["status"] == "created"
    assert forced["id"] != first["id"]


async def test_forget_hides_a_memory_and_restore_brings_it_back(app: Starlette, mint: Mint) -> None:
    async with mcp_session(app, mint()) as client:
        written = data(await client.call_tool("write_memory", {"content": "The build server is named atlas"}))
        forgotten = data(await client.call_tool("forget_memory", {"id": written["id"], "reason": "outdated"}))
        assert forgotten == {"status": "forgotten", "id": written["id"], "namespace": "user:1"}
        after_forget = data(await client.call_tool("recall_memory", {"query": "build server name"}))
        listed = data(await client.call_tool("list_memories", {}))
        listed_all = data(await client.call_tool("list_memories", {"include_deleted": True}))
        restored = data(await client.call_tool("restore_memory", {"id": written["id"]}))
        after_restore = data(await client.call_tool("recall_memory", {"query": "build server name"}))
    assert after_forget["memories"] == []
    assert listed["memories"] == []
    assert [m["id"] for m in listed_all["memories"]] == [written["id"]]
    assert listed_all["memories"][0]["deleted_at"] is not None
    assert restored == {"status": "restored", "id": written["id"], "namespace": "user:1"}
    assert [m["id"] for m in after_restore["memories"]] == [written["id"]]


async def test_list_pages_through_every_memory_once_with_the_cursor(app: Starlette, mint: Mint) -> None:
    async with mcp_session(app, mint()) as client:
        ids = [data(await client.call_tool("write_memory", {"content": f"Fact number {i}"}))["id"] for i in range(7)]
        seen: list[str] = []
        cursor = None
        while True:
            args: dict[str, Any] = {"limit": 3} | ({"cursor": cursor} if cursor else {})
            page = data(await client.call_tool("list_memories", args))
            seen += [m["id"] for m in page["memories"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
    assert seen == ids


BAD_WRITES = [
    ({"content": ""}, "empty"),
    ({"content": "   "}, "empty"),
    ({"content": "x" * 8001}, "limit"),
    ({"content": "fine", "kind": "procedural"}, "kind"),
    ({"content": "fine", "namespace": "Not A Namespace"}, "namespace"),
    ({"content": "fine", "importance": 2}, "importance"),
    ({"content": "fine", "ttl_seconds": 0}, "ttl_seconds"),
    ({"content": "fine", "occurred_at": "yesterday-ish"}, "occurred_at"),
    ({"content": 42}, "content"),
]


@pytest.mark.parametrize(("args", "mentions"), BAD_WRITES)
async def test_bad_write_input_is_invalid_argument_and_writes_nothing(
    app: Starlette, mint: Mint, args: dict[str, Any], mentions: str
) -> None:
    async with mcp_session(app, mint()) as client:
        result = await client.call_tool("write_memory", args)
        listed = data(await client.call_tool("list_memories", {"include_deleted": True}))
    assert error_code(result) == "invalid_argument"
    assert mentions in tool_error(result)["message"]
    assert listed["memories"] == []


@pytest.mark.parametrize("top_k", [0, 10_000, -1])
async def test_recall_rejects_top_k_out_of_range(app: Starlette, mint: Mint, top_k: int) -> None:
    async with mcp_session(app, mint()) as client:
        result = await client.call_tool("recall_memory", {"query": "anything", "top_k": top_k})
    assert error_code(result) == "invalid_argument"
    assert "top_k" in tool_error(result)["message"]


async def test_bad_ids_and_cursors_are_invalid_argument(app: Starlette, mint: Mint) -> None:
    async with mcp_session(app, mint()) as client:
        assert error_code(await client.call_tool("forget_memory", {"id": "not-a-uuid"})) == "invalid_argument"
        assert error_code(await client.call_tool("list_memories", {"cursor": "garbage!"})) == "invalid_argument"
        assert error_code(await client.call_tool("list_memories", {"limit": 0})) == "invalid_argument"


async def test_unknown_memory_id_is_not_found(app: Starlette, mint: Mint) -> None:
    async with mcp_session(app, mint()) as client:
        result = await client.call_tool("restore_memory", {"id": "01890a5d-ac96-774b-bcce-b302099a8057"})
    assert error_code(result) == "not_found"


async def test_record_turn_keeps_the_last_turns_and_extracts_older_ones(app: Starlette, mint: Mint) -> None:
    async with mcp_session(app, mint()) as client:
        extracted: list[str] = []
        for i in range(12):
            role = "user" if i % 2 == 0 else "assistant"
            body = data(
                await client.call_tool(
                    "record_turn", {"session_id": "s-1", "role": role, "content": f"turn {i} about topic {i}"}
                )
            )
            extracted += body["extracted"]
        assert body["turns"] == 10
        session = data(await client.call_tool("get_working_memory", {"session_id": "s-1"}))
        recalled = data(await client.call_tool("recall_memory", {"query": "turn 0 about topic 0", "session_id": "s-1"}))
    assert [t["content"] for t in session["turns"]] == [f"turn {i} about topic {i}" for i in range(2, 12)]
    assert len(extracted) == 2
    assert recalled["memories"][0]["content"] == "user: turn 0 about topic 0"


async def test_working_state_merges_and_expires_after_its_ttl(app: Starlette, mint: Mint, clock: ManualClock) -> None:
    async with mcp_session(app, mint()) as client:
        data(await client.call_tool("update_working_memory", {"session_id": "s-2", "state": {"goal": "a", "n": 1}}))
        merged = data(
            await client.call_tool(
                "update_working_memory", {"session_id": "s-2", "state": {"n": None, "step": 2}, "ttl_seconds": 60}
            )
        )
        assert merged["state"] == {"goal": "a", "step": 2}
        replaced = data(
            await client.call_tool(
                "update_working_memory",
                {"session_id": "s-2", "state": {"only": True}, "merge": False, "ttl_seconds": 60},
            )
        )
        assert replaced["state"] == {"only": True}
        clock.advance(59)
        assert data(await client.call_tool("get_working_memory", {"session_id": "s-2"}))["state"] == {"only": True}
        clock.advance(2)
        expired = data(await client.call_tool("get_working_memory", {"session_id": "s-2"}))
    assert expired["state"] == {}
    assert expired["turns"] == []


async def test_bad_working_memory_input_is_invalid_argument(app: Starlette, mint: Mint) -> None:
    async with mcp_session(app, mint()) as client:
        bad_role = await client.call_tool("record_turn", {"session_id": "s", "role": "narrator", "content": "x"})
        bad_session = await client.call_tool("record_turn", {"session_id": "bad id!", "role": "user", "content": "x"})
        huge_state = await client.call_tool(
            "update_working_memory", {"session_id": "s", "state": {"blob": "x" * 70_000}}
        )
    assert error_code(bad_role) == "invalid_argument"
    assert error_code(bad_session) == "invalid_argument"
    assert error_code(huge_state) == "invalid_argument"

"""Recall as of a date over MCP: `recall_memory(as_of=...)` answers the version valid then, its structured hit
and its text line say until when it held, `list_memories(history_of=...)` lists a memory's versions, and a bad
`as_of` is refused with a clear error."""

from __future__ import annotations

import pytest
from starlette.applications import Starlette

from tests.conftest import Mint, data, mcp_session, text_of, tool_error

pytestmark = pytest.mark.anyio

QUESTION = "which database does the orders service use"


async def test_a_recall_as_of_a_date_answers_the_version_valid_then_and_says_until_when(
    app: Starlette, mint: Mint
) -> None:
    async with mcp_session(app, mint()) as client:
        old = data(
            await client.call_tool(
                "write_memory",
                {"content": "We use MySQL for the orders service", "occurred_at": "2026-01-10T09:00:00Z"},
            )
        )
        new = data(
            await client.call_tool(
                "write_memory",
                {"content": "We migrated the orders service to PostgreSQL", "occurred_at": "2026-04-02T09:00:00Z"},
            )
        )
        march = await client.call_tool("recall_memory", {"query": QUESTION, "as_of": "2026-03-15T00:00:00Z"})
        now = await client.call_tool("recall_memory", {"query": QUESTION})
        history = data(await client.call_tool("list_memories", {"history_of": new["id"]}))

    assert new["superseded"] == [old["id"]]
    [then] = data(march)["memories"]
    assert (then["id"], then["when"], then["valid_to"]) == (old["id"], "2026-01-10T09:00:00Z", "2026-04-02T09:00:00Z")
    assert "(until 2 April 2026) We use MySQL for the orders service" in text_of(march)
    [current] = data(now)["memories"]
    assert current["id"] == new["id"] and "valid_to" not in current
    assert "until" not in text_of(now)
    assert [(m["id"], m["superseded_by"]) for m in history["memories"]] == [(old["id"], new["id"]), (new["id"], None)]
    assert history["next_cursor"] is None


async def test_an_as_of_that_is_no_time_is_refused_naming_the_argument(app: Starlette, mint: Mint) -> None:
    async with mcp_session(app, mint()) as client:
        refused = await client.call_tool("recall_memory", {"query": QUESTION, "as_of": "last March"})
        unknown = await client.call_tool("list_memories", {"history_of": "not-an-id"})
    error = tool_error(refused)
    assert error["code"] == "invalid_argument" and "as_of" in error["message"]
    assert tool_error(unknown)["code"] == "invalid_argument"

"""`select_memories` and `forget_selected_memories` over MCP: an admin lists and forgets (restorably) what one
subject wrote in every namespace of its tenant; no one else can."""

from __future__ import annotations

import pytest
from starlette.applications import Starlette

from tests.conftest import Mint, data, error_code, mcp_session

pytestmark = pytest.mark.anyio

SPACES = ["user:m", "shared:team"]


async def test_an_admin_lists_and_forgets_what_one_subject_wrote_across_namespaces(app: Starlette, mint: Mint) -> None:
    async with mcp_session(app, mint(tenant="acme", sub="mallory", read=SPACES, write=SPACES)) as client:
        for namespace in SPACES:
            data(
                await client.call_tool(
                    "write_memory", {"content": f"Mallory's note in {namespace}", "namespace": namespace}
                )
            )
    async with mcp_session(
        app, mint(tenant="acme", sub="alice", read=["shared:team"], write=["shared:team"])
    ) as client:
        kept = data(await client.call_tool("write_memory", {"content": "Alice books the room for Monday"}))
    admin = mint(tenant="acme", sub="ops", read=[], write=[], admin=True)
    async with mcp_session(app, admin) as client:
        selected = data(await client.call_tool("select_memories", {"criteria": {"written_by": "mallory"}}))
        forgot = data(await client.call_tool("forget_selected_memories", {"criteria": {"written_by": "mallory"}}))
        empty = await client.call_tool("select_memories", {"criteria": {}})
    assert sorted(r["namespace"] for r in selected["records"]) == sorted(SPACES)
    assert {r["source"]["subject"] for r in selected["records"]} == {"mallory"}
    assert forgot == {
        "status": "forgotten",
        "forgotten": {"shared:team": 1, "user:m": 1},
        "already_forgotten": 0,
        "next_cursor": None,
        "scanned": 3,
    }
    assert error_code(empty) == "invalid_argument"
    async with mcp_session(app, mint(tenant="acme", sub="alice", read=["shared:team"], write=[])) as client:
        live = data(await client.call_tool("list_memories", {}))["memories"]
        hidden = data(await client.call_tool("list_memories", {"hidden": "forgotten"}))["memories"]
    assert [m["id"] for m in live] == [kept["id"]]
    assert [m["delete_reason"] for m in hidden] == ["forgotten by admin ops: written by mallory"]


async def test_a_token_without_the_admin_scope_neither_sees_nor_calls_the_selection_tools(
    app: Starlette, mint: Mint
) -> None:
    async with mcp_session(app, mint(tenant="acme", read=SPACES, write=SPACES)) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        refused = await client.call_tool("forget_selected_memories", {"criteria": {"written_by": "mallory"}})
    assert not {"select_memories", "forget_selected_memories"} & names
    assert error_code(refused) == "scope_forbidden"

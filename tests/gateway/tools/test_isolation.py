"""Tenant and namespace isolation through the real app: a token never sees, lists or changes memories outside
its grants, and errors never carry another tenant's content."""

from __future__ import annotations

import json

import pytest
from starlette.applications import Starlette

from tests.conftest import Mint, data, error_code, mcp_session, tool_error

pytestmark = pytest.mark.anyio

SECRET_TEXT = "Acme's launch code is PINEAPPLE-42"


async def write_secret(app: Starlette, mint: Mint) -> str:
    async with mcp_session(app, mint(tenant="acme", read=["user:1"], write=["user:1"])) as client:
        return str(data(await client.call_tool("write_memory", {"content": SECRET_TEXT}))["id"])


@pytest.mark.parametrize(
    ("tenant", "grants"),
    [
        pytest.param("globex", ["user:1"], id="other tenant, same namespace name"),
        pytest.param("acme", ["user:2"], id="same tenant, other namespace"),
    ],
)
async def test_outsiders_cannot_see_list_forget_or_restore_a_memory(
    app: Starlette, mint: Mint, tenant: str, grants: list[str]
) -> None:
    memory_id = await write_secret(app, mint)
    async with mcp_session(app, mint(tenant=tenant, read=grants, write=grants)) as client:
        recalled = data(await client.call_tool("recall_memory", {"query": "launch code pineapple"}))
        listed = data(await client.call_tool("list_memories", {"include_deleted": True}))
        forget = await client.call_tool("forget_memory", {"id": memory_id})
        restore = await client.call_tool("restore_memory", {"id": memory_id})
    assert recalled["memories"] == []
    assert listed["memories"] == []
    assert error_code(forget) == "not_found"
    assert error_code(restore) == "not_found"
    for result in (forget, restore):
        assert "PINEAPPLE" not in json.dumps(tool_error(result))
    async with mcp_session(app, mint(tenant="acme")) as owner:
        still = data(await owner.call_tool("recall_memory", {"query": "launch code"}))
    assert [m["id"] for m in still["memories"]] == [memory_id]


async def test_asking_for_a_namespace_that_is_not_granted_is_an_error(app: Starlette, mint: Mint) -> None:
    await write_secret(app, mint)
    async with mcp_session(app, mint(tenant="acme", read=["user:2"], write=["user:2"])) as client:
        recall = await client.call_tool("recall_memory", {"query": "launch", "namespaces": ["user:1"]})
        listing = await client.call_tool("list_memories", {"namespace": "user:1"})
        write = await client.call_tool("write_memory", {"content": "sneaky", "namespace": "user:1"})
        turn = await client.call_tool(
            "record_turn", {"session_id": "s", "role": "user", "content": "x", "namespace": "user:1"}
        )
    for result in (recall, listing, write, turn):
        assert error_code(result) == "namespace_forbidden"
        assert "PINEAPPLE" not in json.dumps(tool_error(result))


async def test_a_read_grant_allows_recall_but_not_forget(app: Starlette, mint: Mint) -> None:
    memory_id = await write_secret(app, mint)
    token = mint(tenant="acme", sub="reader", read=["user:1"], write=["user:9"])
    async with mcp_session(app, token) as client:
        recalled = data(await client.call_tool("recall_memory", {"query": "launch code"}))
        forget = await client.call_tool("forget_memory", {"id": memory_id})
    assert [m["id"] for m in recalled["memories"]] == [memory_id]
    assert error_code(forget) == "namespace_forbidden"


async def test_recall_fans_out_over_private_and_shared_namespaces(app: Starlette, mint: Mint) -> None:
    alice = mint(tenant="acme", sub="alice", read=["user:a", "shared:team"], write=["user:a", "shared:team"])
    bob = mint(tenant="acme", sub="bob", read=["user:b", "shared:team"], write=["user:b", "shared:team"])
    carol = mint(tenant="acme", sub="carol", read=["user:c"], write=["user:c"])
    async with mcp_session(app, alice) as client:
        data(await client.call_tool("write_memory", {"content": "Alice private: the cat is called Miso"}))
        data(
            await client.call_tool(
                "write_memory", {"content": "Team: the cat food order ships Tuesday", "namespace": "shared:team"}
            )
        )
    async with mcp_session(app, bob) as client:
        data(await client.call_tool("write_memory", {"content": "Bob private: the cat vet is Dr. Lee"}))
        bob_sees = data(await client.call_tool("recall_memory", {"query": "cat", "top_k": 10}))
    async with mcp_session(app, carol) as client:
        carol_sees = data(await client.call_tool("recall_memory", {"query": "cat", "top_k": 10}))
    assert sorted(m["content"] for m in bob_sees["memories"]) == [
        "Bob private: the cat vet is Dr. Lee",
        "Team: the cat food order ships Tuesday",
    ]
    assert carol_sees["memories"] == []


async def test_working_memory_sessions_are_separate_per_tenant(app: Starlette, mint: Mint) -> None:
    async with mcp_session(app, mint(tenant="acme")) as client:
        data(await client.call_tool("update_working_memory", {"session_id": "s", "state": {"owner": "acme"}}))
    async with mcp_session(app, mint(tenant="globex")) as client:
        theirs = data(await client.call_tool("get_working_memory", {"session_id": "s"}))
    assert theirs["state"] == {}

"""Strict tool arguments through the real app: an unknown argument, a wrong JSON type, or a value the stores
could not read back (an unbounded time, NaN, a NUL, JSON nested too deep) answers the `invalid_argument` tool
error naming the field, and nothing is written.

Wrong types and unknown arguments go through the real MCP client. Values the SDK client cannot send (it turns
NaN into null and refuses deep nesting itself) go as raw JSON-RPC over HTTP, as a hostile client would.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest
from mcp import Client
from starlette.applications import Starlette

from gateway.answers.serialize import memory_json
from gateway.web.app import create_app
from memory.transfer import RECORD_FIELDS, TIME_FIELDS
from tests.conftest import BASE_URL, HEADERS, Mint, data, make_settings, mcp_session, running, tool_error
from tests.memory.conftest import make_memory

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """Module-wide, so one app serves the whole module; each test keeps to a tenant of its own."""
    return "asyncio"


@pytest.fixture(scope="module")
async def app(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Starlette]:
    async with running(create_app(make_settings(tmp_path_factory.mktemp("strict") / "data"))) as started:
        yield started


@pytest.fixture(scope="module")
async def http(app: Starlette) -> AsyncIterator[httpx2.AsyncClient]:
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=BASE_URL) as client:
        yield client


@pytest.fixture
def mint(mint: Mint) -> Mint:
    """Tokens of a tenant of this test alone (the app is shared by the module)."""
    tenant = f"t-{uuid.uuid4().hex[:12]}"

    def for_this_test(**kwargs: Any) -> str:
        return mint(tenant=tenant, **kwargs)

    return for_this_test


MEMORY_ID = "01890a5d-ac96-774b-bcce-b302099a8057"

# (tool, arguments, the field the error must name)
WRONG_ARGUMENTS: list[tuple[str, dict[str, Any], str]] = [
    ("write_memory", {"content": "The user likes tea", "tenant": "globex"}, "tenant"),
    ("write_memory", {"content": "The user likes tea", "importance": "0.5"}, "importance"),
    ("write_memory", {"content": "The user likes tea", "force": "yes"}, "force"),
    ("write_memory", {"content": "The user likes tea", "force": "true"}, "force"),
    ("write_memory", {"content": "The user likes tea", "tags": "a"}, "tags"),
    ("write_memory", {"content": "The user likes tea", "tags": '["a"]'}, "tags"),  # JSON inside a string
    ("write_memory", {"content": "The user likes tea", "metadata": '{"a": 1}'}, "metadata"),
    ("write_memory", {"content": "The user likes tea", "ttl_seconds": "60"}, "ttl_seconds"),
    ("write_memory", {"content": "The user likes tea", "ttl_seconds": 60.5}, "ttl_seconds"),
    ("write_memory", {"content": "The user likes tea", "share_to": "shared:team"}, "share_to"),
    ("write_memory", {"content": ["The user likes tea"]}, "content"),
    ("write_memory", {}, "content"),
    ("write_memories", {"items": '[{"content": "The user likes tea"}]'}, "items"),  # JSON inside a string
    ("write_memories", {"items": [{"content": "The user likes tea", "tags": "a"}]}, "items.0.tags"),
    ("write_memories", {"items": [{"content": "The user likes tea", "metadata": '{"a": 1}'}]}, "items.0.metadata"),
    ("recall_memory", {"query": "tea", "top_k": True}, "top_k"),
    ("recall_memory", {"query": "tea", "top_k": "5"}, "top_k"),
    ("recall_memory", {"query": "tea", "explain": "true"}, "explain"),
    ("recall_memory", {"query": "tea", "include_archived": "true"}, "include_archived"),
    ("recall_memory", {"query": "tea", "kinds": "episodic"}, "kinds"),
    ("recall_memory", {"query": "tea", "namespaces": "user:1"}, "namespaces"),
    ("recall_memory", {"query": "tea", "tenant": "globex"}, "tenant"),
    ("recall_memory", {"query": "tea", "detail": "FULL"}, "detail"),
    ("recall_memory", {"query": "tea", "detail": None}, "detail"),
    ("recall_memory", {"query": "tea", "token_budget": 0}, "token_budget"),
    ("recall_memory", {"query": "tea", "token_budget": 100.5}, "token_budget"),
    ("recall_memory", {"query": "tea", "token_budget": -(10**20)}, "token_budget"),
    ("list_memories", {"limit": "10"}, "limit"),
    ("list_memories", {"include_deleted": 1}, "include_deleted"),
    ("list_memories", {"namespace": "user:1", "tenant": "globex"}, "tenant"),
    ("forget_memory", {"id": 123}, "id"),
    ("forget_memory", {"id": MEMORY_ID, "reason": 5}, "reason"),
    ("restore_memory", {"id": MEMORY_ID, "force": True}, "force"),
    ("record_turn", {"session_id": "s-1", "role": "user", "content": "hi", "occurred_at": 1700000000}, "occurred_at"),
    ("record_turn", {"session_id": 7, "role": "user", "content": "hi"}, "session_id"),
    ("get_working_memory", {"session_id": "s-1", "tenant": "globex"}, "tenant"),
    ("update_working_memory", {"session_id": "s-1", "state": '{"goal": "a"}'}, "state"),
    ("update_working_memory", {"session_id": "s-1", "state": {}, "merge": "false"}, "merge"),
    ("whoami", {"tenant": "globex"}, "tenant"),
    ("export_memories", {"namespace": "user:1", "limit": "5"}, "limit"),
    ("import_memories", {"namespace": "user:1", "records": "[]"}, "records"),
    ("consolidate", {"namespace": 5}, "namespace"),
    ("purge_namespace", {"namespace": "user:1", "confirm": True}, "confirm"),
    ("select_memories", {"criteria": {"written_by": "a", "subject": "a"}}, "subject"),
    ("forget_selected_memories", {"criteria": {"metadata_key": "k", "metadata_value": {"a": 1}}}, "metadata_value"),
]


def refusal(result: Any) -> str:
    """The message of an `invalid_argument` tool error, after checking its shape."""
    error = tool_error(result)  # checks the shape: is_error, no structured content, our error JSON as text
    assert error["code"] == "invalid_argument"
    assert error["retryable"] is False
    message: str = error["message"]
    return message


async def nothing_stored(client: Client) -> bool:
    listed = data(await client.call_tool("list_memories", {"include_deleted": True}))
    state = data(await client.call_tool("get_working_memory", {"session_id": "s-1"}))
    return listed["memories"] == [] and state["state"] == {} and state["turns"] == []


@pytest.mark.parametrize(("tool", "arguments", "field"), WRONG_ARGUMENTS)
async def test_an_unknown_argument_or_a_wrong_json_type_is_invalid_argument_naming_the_field(
    app: Starlette, mint: Mint, tool: str, arguments: dict[str, Any], field: str
) -> None:
    async with mcp_session(app, mint(admin=True)) as client:
        result = await client.call_tool(tool, arguments)
        assert field in refusal(result)
        assert await nothing_stored(client)


async def test_every_tool_refuses_an_argument_its_schema_does_not_name(app: Starlette, mint: Mint) -> None:
    # the schemas leave `additionalProperties: false` out (tokens in every agent's context, issue #30): the
    # strict argument model refuses what they do not name all the same
    async with mcp_session(app, mint(admin=True)) as client:
        tools = (await client.list_tools()).tools
        refused = {tool.name: await client.call_tool(tool.name, {"surplus": 1}) for tool in tools}
        assert await nothing_stored(client)
    assert len(tools) == 27
    assert all("surplus: unknown argument" in refusal(result) for result in refused.values())


async def test_exact_json_types_are_still_accepted_and_an_integer_is_a_number(app: Starlette, mint: Mint) -> None:
    async with mcp_session(app, mint()) as client:
        written = data(
            await client.call_tool(
                "write_memory",
                {"content": "The user likes green tea", "importance": 1, "tags": ["tea"], "metadata": {"n": 2.5}},
            )
        )
        hits = data(
            await client.call_tool("recall_memory", {"query": "tea", "top_k": 3, "explain": False, "detail": "full"})
        )
    assert written["status"] == "created"
    assert [hit["importance"] for hit in hits["memories"]] == [1.0]


def call(tool: str, arguments: str) -> bytes:
    """A raw JSON-RPC tools/call whose arguments are JSON text (so it may say NaN, as Python's json does)."""
    params = f'{{"name": "{tool}", "arguments": {arguments}}}'
    return f'{{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {params}}}'.encode()


def deep(levels: int) -> str:
    return "[" * levels + "]" * levels


# (tool, arguments as JSON text, what the message must say)
UNSTORABLE: list[tuple[str, str, str]] = [
    ("write_memory", '{"content": "The user likes tea", "metadata": {"score": NaN}}', "metadata.score"),
    ("write_memory", '{"content": "The user likes tea", "metadata": {"a": [1, -Infinity]}}', "metadata.a[1]"),
    ("write_memory", '{"content": "The user likes tea", "importance": NaN}', "importance"),
    ("write_memory", '{"content": "The user likes tea", "importance": Infinity}', "importance"),
    ("write_memory", '{"content": "The user likes tea", "metadata": {"n": 1e400}}', "metadata.n"),
    ("write_memory", '{"content": "The user likes tea", "metadata": {"n": 100000000000000000000}}', "metadata.n"),
    ("write_memory", '{"content": "The user\\u0000 likes tea"}', "content"),
    ("write_memory", '{"content": "The user likes tea", "tags": ["a\\u0000"]}', "tags[0]"),
    ("write_memory", '{"content": "The user likes tea", "metadata": {"k\\u0000": 1}}', "a key of metadata"),
    ("write_memory", '{"content": "The user likes tea", "metadata": {"a": ' + deep(40) + "}}", "metadata nests"),
    ("write_memory", '{"content": "The user likes tea", "occurred_at": "0001-01-01T00:00:00+14:00"}', "occurred_at"),
    ("write_memory", '{"content": "The user likes tea", "occurred_at": "9999-12-31T23:59:59-14:00"}', "occurred_at"),
    ("write_memory", '{"content": "The demo is tomorrow", "occurred_at": "9999-12-30T12:00:00Z"}', "occurred_at"),
    ("write_memory", '{"content": "The user likes tea", "session_id": "s\\u0000"}', "session_id"),
    (
        "record_turn",
        '{"session_id": "s-1", "role": "user", "content": "hi", "occurred_at": "0001-01-01T00:00:00+14:00"}',
        "occurred_at",
    ),
    ("record_turn", '{"session_id": "s-1", "role": "user", "content": "a\\u0000b"}', "content"),
    ("update_working_memory", '{"session_id": "s-1", "state": {"progress": NaN}}', "state.progress"),
    ("update_working_memory", '{"session_id": "s-1", "state": {"note": "a\\u0000"}}', "state.note"),
    ("update_working_memory", '{"session_id": "s-1", "state": {"tree": ' + deep(60) + "}}", "state nests"),
    ("recall_memory", '{"query": "tea\\u0000"}', "query"),
    ("recall_memory", '{"query": "tea", "since": "0001-01-01T00:00:00+14:00"}', "since"),
    ("recall_memory", '{"query": "tea", "until": "9999-12-31T23:59:59-14:00"}', "until"),
    ("forget_memory", '{"id": "' + MEMORY_ID + '", "reason": "gone\\u0000"}', "reason"),
    *[
        (
            "import_memories",
            '{"namespace": "user:1", "records": [{"content": "The user likes tea"}, '
            f'{{"content": "The user likes coffee", "{field}": "0001-01-01T00:00:00+14:00"}}]}}',
            f"records[1].{field}",
        )
        for field in ("created_at", "updated_at", "deleted_at", "last_accessed_at", "expires_at", "archived_at")
    ],
    ("import_memories", '{"namespace": "user:1", "records": [{"content": "ok"}, {"content": 5}]}', "records[1]"),
    ("import_memories", '{"namespace": "user:1", "records": [{"content": "ok", "tenant": "globex"}]}', "tenant"),
    ("import_memories", '{"namespace": "user:1", "records": [{"content": "ok", "importance": "0.5"}]}', "importance"),
    ("import_memories", '{"namespace": "user:1", "records": [{"content": "ok", "metadata": {"x": NaN}}]}', "x"),
    (
        "import_memories",
        '{"namespace": "user:1", "records": [{"content": "ok", "archived_at": "2026-01-01T00:00:00Z", '
        '"archive_reason": 5}]}',
        "records[0]: archive_reason",
    ),
]


async def post(http: httpx2.AsyncClient, token: str, body: bytes) -> httpx2.Response:
    return await http.post("/mcp", content=body, headers={**HEADERS, "authorization": f"Bearer {token}"})


@pytest.mark.parametrize(("tool", "arguments", "says"), UNSTORABLE)
async def test_a_value_the_stores_could_not_read_back_is_invalid_argument_and_nothing_is_written(
    app: Starlette, http: httpx2.AsyncClient, mint: Mint, tool: str, arguments: str, says: str
) -> None:
    token = mint(admin=True)
    response = await post(http, token, call(tool, arguments))
    assert response.status_code == 200
    result = response.json()["result"]
    assert result["isError"] is True
    assert "structuredContent" not in result
    error = json.loads(result["content"][0]["text"])["error"]
    assert error["code"] == "invalid_argument"
    assert error["retryable"] is False
    assert says in error["message"]
    async with mcp_session(app, token) as client:
        assert await nothing_stored(client)


async def test_a_body_nested_10k_deep_gets_a_json_rpc_parse_error_not_a_500(
    app: Starlette, http: httpx2.AsyncClient, mint: Mint
) -> None:
    token = mint()
    body = call("write_memory", '{"content": "The user likes tea", "metadata": {"a": ' + deep(10_000) + "}}")
    response = await post(http, token, body)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32700  # JSON-RPC parse error, from the MCP SDK's parser
    async with mcp_session(app, token) as client:
        assert await nothing_stored(client)
        assert data(await client.call_tool("whoami", {}))["subject"] == "agent-1"  # the gateway still serves


async def test_a_lone_surrogate_never_reaches_a_tool_the_sdk_parser_refuses_it(
    app: Starlette, http: httpx2.AsyncClient, mint: Mint
) -> None:
    """The engine refuses lone surrogates too (tests/memory/test_values.py), for callers other than MCP."""
    token = mint()
    response = await post(http, token, call("write_memory", '{"content": "The user likes \\ud800 tea"}'))
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32700
    async with mcp_session(app, token) as client:
        assert await nothing_stored(client)


async def test_a_rejected_forget_leaves_the_memory_live(app: Starlette, http: httpx2.AsyncClient, mint: Mint) -> None:
    token = mint()
    async with mcp_session(app, token) as client:
        written = data(await client.call_tool("write_memory", {"content": "The build server is named atlas"}))
    response = await post(http, token, call("forget_memory", f'{{"id": "{written["id"]}", "reason": "a\\u0000"}}'))
    assert json.loads(response.json()["result"]["content"][0]["text"])["error"]["code"] == "invalid_argument"
    async with mcp_session(app, token) as client:
        listed = data(await client.call_tool("list_memories", {}))
    assert [m["id"] for m in listed["memories"]] == [written["id"]]


def test_an_import_accepts_exactly_the_fields_an_export_writes() -> None:
    memory = make_memory("The user likes tea", tenant="acme")
    memory.deleted_at, memory.delete_reason = memory.created_at, "asked to forget"  # a forgotten one says why
    record = memory_json(memory)
    assert set(record) == RECORD_FIELDS
    assert set(TIME_FIELDS) <= RECORD_FIELDS

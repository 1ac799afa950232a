"""Schemas an LLM and a validator can trust, and lean answers (issue #15.4, #15.5): every tool publishes an
`outputSchema` its real answers validate against, its `inputSchema` carries the engine's bounds, `tools/list`
shows a token only the tools its scopes allow, a recall hit is lean unless asked for more, and `token_budget`
bounds the whole answer. Checked with the official SDK client against the real app."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from mcp import Client
from starlette.applications import Starlette

from memory.recall.scoring import estimate_tokens
from memory.text.tokens import count_tokens
from ops.config import Settings
from tests.conftest import Mint, data, error_code, mcp_session, tool_error

pytestmark = pytest.mark.anyio

ADMIN_TOOLS = {
    "export_memories",
    "import_memories",
    "consolidate",
    "purge_namespace",
    "reextract",
    "export_events",
    "import_events",
    "recall_log",
    "debug_session",
    "select_memories",
    "forget_selected_memories",
    "erase_selected_memories",
}
WRITE_TOOLS = {
    "write_memory",
    "write_memories",
    "forget_memory",
    "restore_memory",
    "record_turn",
    "update_working_memory",
    "start_session",
    "record_event",
    "end_session",
    "feedback",
}
READ_TOOLS = {"recall_memory", "list_memories", "get_working_memory", "whoami", "list_events"}
OPERATOR_TOOLS = {"reembed"}  # gateway-wide: only the hindsight:operator scope lists them
LEAN = {"id", "namespace", "content", "when", "score"}
# eight memories of the length the issue measured (~47 characters each)
MEMORIES = [
    "The user prefers dark roast coffee in the morning",
    "The user's deploy target is AWS eu-west-1 region",
    "The user has a dog named Pepper, a border collie",
    "The user is learning Japanese on Tuesday evenings",
    "The user's team ships releases every other Friday",
    "The user dislikes long answers with much preamble",
    "The user moved from Berlin to Lisbon last spring",
    "The user's daughter Mia plays the violin at school",
]


async def schemas(client: Client) -> dict[str, Any]:
    return {tool.name: tool for tool in (await client.list_tools()).tools}


async def one_call_of_each_tool(client: Client) -> dict[str, dict[str, Any]]:
    """A successful answer of every tool, in an order that gives each something to act on."""
    answers: dict[str, dict[str, Any]] = {}

    async def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        answers[name] = data(await client.call_tool(name, arguments))
        return answers[name]

    written = await call("write_memory", {"content": MEMORIES[0], "tags": ["prefs"], "explain": True})
    await call("write_memories", {"items": [{"content": MEMORIES[2], "request_id": "batch-1"}, {"content": "ok"}]})
    await client.call_tool("write_memory", {"content": MEMORIES[1], "occurred_at": "2026-01-05T10:00:00Z"})
    await call("recall_memory", {"query": "coffee", "detail": "full", "explain": True})
    await call("list_memories", {})
    await call("feedback", {"used": [written["id"]], "request_id": "feedback-1"})
    await call("forget_memory", {"id": written["id"], "reason": "test"})
    await call("restore_memory", {"id": written["id"]})
    await call("record_turn", {"session_id": "s1", "role": "user", "content": "Hello there, planning a trip"})
    await call("update_working_memory", {"session_id": "s1", "state": {"goal": "trip"}})
    await call("get_working_memory", {"session_id": "s1"})
    await call("whoami", {})
    await call("start_session", {"session_id": "t1", "goal": "plan a trip"})
    await call("record_event", {"session_id": "t1", "type": "user_message", "content": "I fly to Lisbon on Friday."})
    await call(
        "record_event",
        {"session_id": "t1", "type": "tool_call", "content": "{}", "metadata": {"call_id": "c1", "tool": "search"}},
    )
    await call(
        "record_event",
        {"session_id": "t1", "type": "tool_result", "content": "2 flights", "metadata": {"call_id": "c1"}},
    )
    await call("list_events", {"session_id": "t1"})
    await call("end_session", {"session_id": "t1"})
    await call("reextract", {"session_id": "t1", "namespace": "user:1"})
    await call("debug_session", {"session_id": "t1", "namespace": "user:1"})
    await call("recall_log", {"limit": 10})
    sessions = await call("export_events", {"namespace": "user:1"})
    await call("import_events", {"namespace": "user:2", "sessions": sessions["sessions"]})
    exported = await call("export_memories", {"namespace": "user:1"})
    await call("import_memories", {"namespace": "user:2", "records": exported["records"]})
    await call("consolidate", {"namespace": "user:1"})
    await call("select_memories", {"criteria": {"written_by": "agent-1"}, "limit": 5})
    await call("forget_selected_memories", {"criteria": {"tag": "prefs"}})
    await call("erase_selected_memories", {"criteria": {"tag": "prefs"}, "confirm": "prefs"})
    await call("purge_namespace", {"namespace": "user:2", "confirm": "user:2"})
    return answers


async def test_every_tool_s_real_answer_validates_against_the_output_schema_it_publishes(
    app: Starlette, mint: Mint
) -> None:
    admin = mint(read=["user:1", "user:2"], write=["user:1", "user:2"], admin=True)
    async with mcp_session(app, admin) as client:
        tools = await schemas(client)
        answers = await one_call_of_each_tool(client)

    assert set(answers) == set(tools) == ADMIN_TOOLS | WRITE_TOOLS | READ_TOOLS
    for name, answer in answers.items():
        schema = tools[name].output_schema
        assert schema is not None and schema["type"] == "object", name
        jsonschema.validate(answer, schema, format_checker=jsonschema.FormatChecker())


async def test_times_in_answers_are_published_as_date_time_and_refused_when_not_one(app: Starlette, mint: Mint) -> None:
    async with mcp_session(app, mint()) as client:
        tools = await schemas(client)
        refused = await client.call_tool("write_memory", {"content": "x happened", "occurred_at": "last Tuesday"})

    hit = tools["recall_memory"].output_schema["$defs"]["Hit"]  # type: ignore[index]
    assert hit["properties"]["when"]["format"] == "date-time"
    assert tools["write_memory"].input_schema["properties"]["occurred_at"]["format"] == "date-time"
    assert error_code(refused) == "invalid_argument"


async def test_input_schemas_carry_the_engine_s_bounds_from_settings(app: Starlette, mint: Mint) -> None:
    async with mcp_session(app, mint()) as client:
        tools = await schemas(client)

    write = tools["write_memory"].input_schema["properties"]
    recall = tools["recall_memory"].input_schema["properties"]
    content = write["content"]
    assert (content["type"], content["maxLength"]) == ("string", 8000)
    assert write["importance"] | {"type": "number", "minimum": 0, "maximum": 1} == write["importance"]
    assert write["request_id"] == {"type": "string"}  # its pattern is not worth its tokens in every tool
    assert write["tags"]["maxItems"] == 32
    assert recall["top_k"]["maximum"] == 50
    assert recall["query"]["maxLength"] == 2000
    assert recall["token_budget"]["maximum"] == 32_000
    assert tools["list_memories"].input_schema["properties"]["limit"]["maximum"] == 200
    for tool in tools.values():
        assert "additionalProperties" not in tool.input_schema, tool.name  # refused all the same (strict model)
        assert tool.description and "\n" not in tool.description and "  " not in tool.description, tool.name


async def test_a_value_outside_a_published_bound_is_refused_naming_the_field(app: Starlette, mint: Mint) -> None:
    async with mcp_session(app, mint()) as client:
        too_important = await client.call_tool("write_memory", {"content": "x is y", "importance": 1.5})
        too_many = await client.call_tool("recall_memory", {"query": "x", "top_k": 51})
        listed = data(await client.call_tool("list_memories", {}))

    assert error_code(too_important) == "invalid_argument" and "importance" in tool_error(too_important)["message"]
    assert error_code(too_many) == "invalid_argument" and "top_k" in tool_error(too_many)["message"]
    assert listed["memories"] == []


@pytest.mark.parametrize(
    ("grant", "expected"),
    [
        ({"scopes": ["memory:read"]}, READ_TOOLS),
        ({"scopes": ["memory:write"]}, WRITE_TOOLS),
        ({}, READ_TOOLS | WRITE_TOOLS),
        ({"admin": True}, READ_TOOLS | WRITE_TOOLS | ADMIN_TOOLS),
        ({"scopes": ["memory:read", "hindsight:operator"]}, READ_TOOLS | OPERATOR_TOOLS),
    ],
    ids=["read-only", "write-only", "read-write", "admin", "operator"],
)
async def test_tools_list_shows_a_token_only_the_tools_its_scopes_allow(
    app: Starlette, mint: Mint, grant: dict[str, Any], expected: set[str]
) -> None:
    async with mcp_session(app, mint(**grant)) as client:
        assert set(await schemas(client)) == expected


async def test_a_recall_hit_is_lean_by_default_and_full_on_request(app: Starlette, mint: Mint) -> None:
    async with mcp_session(app, mint()) as client:
        for content in MEMORIES:
            data(await client.call_tool("write_memory", {"content": content}))
        lean = await client.call_tool("recall_memory", {"query": "what does the user like"})
        full = await client.call_tool("recall_memory", {"query": "what does the user like", "detail": "full"})

    lean_hits, full_hits = data(lean)["memories"], data(full)["memories"]
    assert len(lean_hits) == len(full_hits) == 8
    assert all(set(hit) == LEAN for hit in lean_hits)
    assert {"kind", "importance", "tags", "metadata", "created_at", "source"} <= set(full_hits[0])
    assert [h["id"] for h in lean_hits] == [h["id"] for h in full_hits]
    lean_chars, full_chars = len(lean.content[0].text), len(full.content[0].text)  # type: ignore[union-attr]
    assert full_chars >= 3 * lean_chars  # the bar: answers at least 3x smaller by default


@pytest.mark.parametrize("budget", [20, 60, 120, 250])
async def test_token_budget_bounds_the_whole_answer_and_says_how_many_hits_it_left_out(
    app: Starlette, mint: Mint, budget: int
) -> None:
    async with mcp_session(app, mint()) as client:
        for content in MEMORIES:
            data(await client.call_tool("write_memory", {"content": content}))
        everything = data(await client.call_tool("recall_memory", {"query": "the user"}))
        result = await client.call_tool("recall_memory", {"query": "the user", "token_budget": budget})

    answer = data(result)
    assert estimate_tokens(result.content[0].text) <= budget  # type: ignore[union-attr]
    assert answer["omitted"] == len(everything["memories"]) - len(answer["memories"])
    kept = [h["id"] for h in answer["memories"]]
    assert kept == [h["id"] for h in everything["memories"] if h["id"] in kept]  # best first, in order


def test_a_cjk_character_costs_a_token_of_the_budget() -> None:
    assert estimate_tokens("用户喜欢喝深烘咖啡") == 9
    assert estimate_tokens("The user prefers dark roast") == 7


async def test_the_bounds_follow_the_configured_limits(settings: Settings, mint: Mint) -> None:
    from gateway.web.app import create_app
    from tests.conftest import running

    app = create_app(settings.replaced(max_content_chars=500, max_top_k=20))
    async with running(app), mcp_session(app, mint()) as client:
        tools = await schemas(client)
    assert tools["write_memory"].input_schema["properties"]["content"]["maxLength"] == 500
    assert tools["recall_memory"].input_schema["properties"]["top_k"]["maximum"] == 20
    assert json.dumps(tools["recall_memory"].input_schema).count('"format": "date-time"') == 3  # since, until, as_of


# What the tool definitions a read/write token lists may cost an agent, which pays for them in its context on
# every turn (issue #30): each tool's name, description and inputSchema as JSON, in cl100k tokens (outputSchema
# aside; 6,897 before issue #30, 1,958 after, 2,000 with as_of and history_of (#34); docs/TOOLS.md is the manual).
TOOL_LIST_BUDGET = 2_000


def definition_tokens(tool: Any) -> int:
    definition = {"name": tool.name, "description": tool.description, "input_schema": tool.input_schema}
    return count_tokens(json.dumps(definition))


def schema_nodes(node: object) -> list[dict[str, Any]]:
    """Every JSON Schema of an inputSchema (the values of `properties` and `$defs` maps, not the maps)."""
    if isinstance(node, list):
        return [found for item in node for found in schema_nodes(item)]
    if not isinstance(node, dict):
        return []
    found = [node]
    for key, value in node.items():
        if key in ("properties", "$defs"):
            found += [schema for sub in value.values() for schema in schema_nodes(sub)]
        elif key != "enum":
            found += schema_nodes(value)
    return found


async def test_a_read_write_token_s_tool_definitions_fit_the_budget_with_a_description_each(
    app: Starlette, mint: Mint
) -> None:
    async with mcp_session(app, mint()) as client:
        tools = await schemas(client)

    assert set(tools) == READ_TOOLS | WRITE_TOOLS
    cost = {name: definition_tokens(tool) for name, tool in tools.items()}
    assert sum(cost.values()) <= TOOL_LIST_BUDGET, cost
    for name, tool in tools.items():
        assert tool.description and tool.description.strip(), name


async def test_input_schemas_carry_no_pydantic_noise_and_optional_arguments_are_not_nullable(
    app: Starlette, mint: Mint
) -> None:
    async with mcp_session(app, mint(admin=True)) as client:
        tools = await schemas(client)
        # the strict argument model still decides: null, which the schemas no longer show, is still taken
        written = data(await client.call_tool("write_memory", {"content": "The user likes tea", "tags": None}))

    assert written["status"] == "created"
    for tool in tools.values():
        for schema in schema_nodes(tool.input_schema):
            assert "title" not in schema, tool.name
            assert schema.get("type") != "null" and schema.get("default", 0) is not None, tool.name
            assert "additionalProperties" not in schema or isinstance(schema["additionalProperties"], dict), tool.name
    write = tools["write_memory"].input_schema
    assert write["properties"]["importance"]["type"] == "number" and "anyOf" not in write["properties"]["importance"]
    assert write["required"] == ["content"]

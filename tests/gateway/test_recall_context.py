"""Prompt-ready context (issue #17.4): `recall_memory` with `format: "context"` answers one text block citing each
memory as `[id]` with its day, ordered by score, time or importance, within `token_budget` counted with the real
tokenizer (`memory.tokens.count_tokens`), led by the session's working memory when `session_id` is given. Through
the real app and the official MCP client."""

from __future__ import annotations

import re
from typing import Any

import jsonschema
import pytest
from mcp import Client
from starlette.applications import Starlette

from gateway.errors import json_text
from memory.tokens import count_tokens
from tests.conftest import Mint, data, error_code, mcp_session

pytestmark = pytest.mark.anyio

LINE = re.compile(r"^\[(?P<id>[0-9a-f-]{36})\] (?P<day>\d{4}-\d{2}-\d{2}) (?:\((?P<ns>[^)]+)\) )?(?P<content>.+)$")
# (content, when it happened, importance): written out of time order, importance unrelated to either
TRIP = [
    ("The user booked a hotel near the Bund in Shanghai for the conference", "2026-05-06T09:00:00Z", 0.4),
    ("The user first mentioned the Shanghai conference trip in an email", "2026-05-01T09:00:00Z", 0.3),
    ("The user must be back in Beijing by Friday evening for a family dinner", "2026-05-04T09:00:00Z", 0.9),
    ("The user's company allows economy class only for flights under three hours", "2026-05-03T09:00:00Z", 0.8),
    ("The user prefers Air China and a window seat on morning flights", "2026-05-02T09:00:00Z", 0.6),
]


async def write_all(client: Client, memories: list[tuple[str, str, float]], **extra: Any) -> dict[str, str]:
    """Write each memory; its id by content."""
    ids: dict[str, str] = {}
    for content, occurred_at, importance in memories:
        arguments = {"content": content, "occurred_at": occurred_at, "importance": importance, **extra}
        written = data(await client.call_tool("write_memory", arguments))
        assert written["status"] == "created", written
        ids[content] = written["id"]
    return ids


def memory_lines(context: str) -> list[re.Match[str]]:
    return [match for line in context.split("\n") if (match := LINE.match(line))]


async def recall(client: Client, **arguments: Any) -> tuple[dict[str, Any], str]:
    """The structured answer and the text the client received."""
    result = await client.call_tool("recall_memory", {"query": "the Shanghai trip", **arguments})
    return data(result), result.content[0].text  # type: ignore[union-attr]


async def test_each_context_line_cites_one_returned_memory_with_its_day_and_content(app: Starlette, mint: Mint) -> None:
    async with mcp_session(app, mint()) as client:
        ids = await write_all(client, TRIP)
        answer, _ = await recall(client, format="context")
        schema = {tool.name: tool for tool in (await client.list_tools()).tools}["recall_memory"].output_schema

    jsonschema.validate(answer, schema, format_checker=jsonschema.FormatChecker())  # what it publishes
    assert set(answer) == {"context", "memories", "omitted"} and answer["omitted"] == 0
    header, *rest = answer["context"].split("\n")
    assert header == "Relevant memories (most relevant first):"
    lines = memory_lines(answer["context"])
    assert len(lines) == len(rest) == len(TRIP)
    assert [line["id"] for line in lines] == [hit["id"] for hit in answer["memories"]]
    by_id = {ids[content]: (content, occurred[:10]) for content, occurred, _ in TRIP}
    assert {line["id"]: (line["content"], line["day"]) for line in lines} == by_id
    assert all(line["ns"] is None for line in lines)  # one namespace: not repeated on every line


async def test_order_time_lists_the_memories_chronologically_by_when_they_happened(app: Starlette, mint: Mint) -> None:
    async with mcp_session(app, mint()) as client:
        ids = await write_all(client, TRIP)
        answer, _ = await recall(client, format="context", order="time")
        listed, _ = await recall(client, order="time")

    chronological = [ids[content] for content, _, _ in sorted(TRIP, key=lambda memory: memory[1])]
    assert answer["context"].startswith("Relevant memories (oldest first):\n")
    assert [line["id"] for line in memory_lines(answer["context"])] == chronological
    assert [hit["id"] for hit in answer["memories"]] == chronological
    assert [hit["id"] for hit in listed["memories"]] == chronological  # the JSON format follows `order` too
    assert "context" not in listed


async def test_order_importance_puts_the_most_important_memory_first(app: Starlette, mint: Mint) -> None:
    async with mcp_session(app, mint()) as client:
        ids = await write_all(client, TRIP)
        answer, _ = await recall(client, format="context", order="importance", detail="full")

    importance = [hit["importance"] for hit in answer["memories"]]
    assert importance == sorted(importance, reverse=True) == [0.9, 0.8, 0.6, 0.4, 0.3]
    assert answer["context"].startswith("Relevant memories (most important first):\n")
    assert memory_lines(answer["context"])[0]["id"] == ids[TRIP[2][0]]  # the constraint first


@pytest.mark.parametrize("budget", [15, 100, 250, 400, 1000])
@pytest.mark.parametrize("order", ["score", "time", "importance"])
async def test_the_whole_answer_stays_within_the_token_budget_and_omitted_counts_the_memories_left_out(
    app: Starlette, mint: Mint, budget: int, order: str
) -> None:
    async with mcp_session(app, mint()) as client:
        await write_all(client, TRIP)
        everything, _ = await recall(client, format="context", order=order)
        answer, text = await recall(client, format="context", order=order, token_budget=budget)

    assert count_tokens(text) <= budget
    assert count_tokens(json_text(answer)) <= budget
    kept = [hit["id"] for hit in answer["memories"]]
    assert answer["omitted"] == len(everything["memories"]) - len(kept)
    assert [line["id"] for line in memory_lines(answer["context"])] == kept  # whole lines, exactly the cited ones
    assert kept == [hit["id"] for hit in everything["memories"] if hit["id"] in kept]  # still in `order`
    if budget >= count_tokens(json_text(everything)) + 10:  # 10: room for scores of other digits
        assert answer["omitted"] == 0
    if budget <= 15:
        assert answer == {"context": "", "memories": [], "omitted": len(everything["memories"])}


async def test_a_short_budget_keeps_the_most_relevant_memories_even_in_time_order(app: Starlette, mint: Mint) -> None:
    async with mcp_session(app, mint()) as client:
        await write_all(client, TRIP)
        ranked, _ = await recall(client, query="Which airline and seat does the user prefer?")
        answer, _ = await recall(
            client,
            query="Which airline and seat does the user prefer?",
            format="context",
            order="time",
            top_k=5,
            token_budget=250,
        )

    assert 1 <= len(answer["memories"]) < len(TRIP)
    assert ranked["memories"][0]["id"] in {hit["id"] for hit in answer["memories"]}


async def test_the_session_s_state_and_recent_turns_lead_the_block_and_turns_go_first_when_short(
    app: Starlette, mint: Mint
) -> None:
    async with mcp_session(app, mint()) as client:
        await write_all(client, TRIP[:3], session_id="trip-1")
        await write_all(client, TRIP[3:])  # another session's memories: session_id still filters them out
        state = {"goal": "book the Shanghai flight", "step": 2}
        data(await client.call_tool("update_working_memory", {"session_id": "trip-1", "state": state}))
        for role, content in [("user", "Find me a morning flight to Shanghai"), ("assistant", "Air China at 8:05?")]:
            data(await client.call_tool("record_turn", {"session_id": "trip-1", "role": role, "content": content}))
        answer, _ = await recall(client, format="context", order="time", session_id="trip-1")
        without_session, _ = await recall(client, format="context", order="time")

        lines = answer["context"].split("\n")
        assert lines[:5] == [
            'Session trip-1 state: {"goal":"book the Shanghai flight","step":2}',
            "Session trip-1 recent turns (oldest first):",
            "user: Find me a morning flight to Shanghai",
            "assistant: Air China at 8:05?",
            "Relevant memories (oldest first):",
        ]
        assert len(memory_lines(answer["context"])) == len(answer["memories"]) == 3
        assert not without_session["context"].startswith("Session")

        # a budget for the state and the memories but not the turns: the turns are left out, the memories kept
        no_turns = {**answer, "context": "\n".join([lines[0], *lines[4:]])}
        budget = count_tokens(json_text(no_turns)) + 10  # room for a score of other digits, not for the turns
        assert count_tokens(json_text(answer)) > budget + 10
        short, text = await recall(client, format="context", order="time", session_id="trip-1", token_budget=budget)

    assert short["context"] == no_turns["context"]
    assert [hit["id"] for hit in short["memories"]] == [hit["id"] for hit in answer["memories"]]
    assert short["omitted"] == 0
    assert count_tokens(text) <= budget


async def test_a_session_without_working_memory_adds_nothing_to_the_block(app: Starlette, mint: Mint) -> None:
    async with mcp_session(app, mint()) as client:
        await write_all(client, TRIP[:2], session_id="quiet")
        answer, _ = await recall(client, format="context", session_id="quiet")

    assert answer["context"].startswith("Relevant memories (most relevant first):\n")
    assert len(answer["memories"]) == 2


async def test_chinese_memories_make_a_context_block_within_the_budget(app: Starlette, mint: Mint) -> None:
    chinese = [
        ("用户计划明天上午从北京飞往上海，最好乘坐国航", "2026-05-04T01:00:00Z", 0.7),
        ("用户对花生过敏，订餐时要避开含花生的菜", "2026-05-02T01:00:00Z", 0.9),
        ("用户喜欢喝深烘咖啡，每天早上一杯", "2026-05-03T01:00:00Z", 0.3),
    ]
    async with mcp_session(app, mint()) as client:
        ids = await write_all(client, chinese)
        full, _ = await client_recall_chinese(client, None)
        answer, text = await client_recall_chinese(client, 200)

    chronological = [content for content, _, _ in sorted(chinese, key=lambda memory: memory[1])]
    assert [line["content"] for line in memory_lines(full["context"])] == chronological
    assert [line["id"] for line in memory_lines(full["context"])] == [ids[content] for content in chronological]
    assert count_tokens(text) <= 200 < count_tokens(json_text(full))
    assert 1 <= len(answer["memories"]) < 3 and answer["omitted"] == 3 - len(answer["memories"])
    assert [line["id"] for line in memory_lines(answer["context"])] == [hit["id"] for hit in answer["memories"]]


async def client_recall_chinese(client: Client, budget: int | None) -> tuple[dict[str, Any], str]:
    arguments: dict[str, Any] = {"query": "用户的出行和饮食偏好", "format": "context", "order": "time"}
    if budget is not None:
        arguments["token_budget"] = budget
    result = await client.call_tool("recall_memory", arguments)
    return data(result), result.content[0].text  # type: ignore[union-attr]


async def test_each_line_names_its_namespace_when_the_memories_span_several(app: Starlette, mint: Mint) -> None:
    token = mint(read=["user:1", "shared:travel"], write=["user:1", "shared:travel"])
    async with mcp_session(app, token) as client:
        await write_all(client, TRIP[:2])
        await write_all(client, TRIP[3:4], namespace="shared:travel")
        answer, _ = await recall(client, format="context")

    lines = memory_lines(answer["context"])
    assert {line["ns"] for line in lines} == {"user:1", "shared:travel"}
    assert [line["ns"] for line in lines] == [hit["namespace"] for hit in answer["memories"]]


async def test_the_default_format_answers_the_memories_as_before(app: Starlette, mint: Mint) -> None:
    async with mcp_session(app, mint()) as client:
        await write_all(client, TRIP)
        default, _ = await recall(client)
        explicit, _ = await recall(client, format="memories", order="score")
        budgeted, _ = await recall(client, token_budget=100)

    assert set(default) == {"memories"}
    assert [hit["id"] for hit in default["memories"]] == [hit["id"] for hit in explicit["memories"]]
    assert set(budgeted) == {"memories", "omitted"}


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"format": "text"}, "format"),
        ({"format": "CONTEXT"}, "format"),
        ({"format": None}, "format"),
        ({"order": "newest"}, "order"),
        ({"order": 1}, "order"),
        ({"format": "context", "order": "recency"}, "order"),
    ],
)
async def test_an_unknown_format_or_order_is_refused_naming_the_field(
    app: Starlette, mint: Mint, arguments: dict[str, Any], field: str
) -> None:
    async with mcp_session(app, mint()) as client:
        result = await client.call_tool("recall_memory", {"query": "trip", **arguments})

    assert error_code(result) == "invalid_argument"
    assert result.structured_content is not None
    assert f"{field}:" in result.structured_content["error"]["message"]

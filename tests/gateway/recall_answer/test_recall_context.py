"""What the model reads of a recall (issue #30): the text content of `recall_memory` is prompt-ready lines, `[n]
score content` under a header per day, `[n]` mapped to the n-th memory (or citation) of the structured content;
`format: "context"` leads them with the session's working memory; `token_budget` bounds that text, counted with the
real tokenizer (`memory.text.tokens.count_tokens`), filled with the best memories whole and cutting the best one with a
visible mark rather than answering nothing. Through the real app and the official MCP client."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import jsonschema
import pytest
from mcp import Client
from starlette.applications import Starlette

from gateway.recall_answer.lines import CUT_MARK
from memory.text.tokens import count_tokens
from tests.conftest import Mint, data, error_code, mcp_session, text_of, tool_error

pytestmark = pytest.mark.anyio

MEMORY = re.compile(
    r"^\[(?P<ref>\d+)\] (?P<score>\d\.\d\d) (?P<flags>(?:\((?:past plan|archived)\) )*)(?P<content>.+)$"
)
DAY = re.compile(r"^(?P<day>\d{1,2} [A-Z][a-z]+ \d{4})(?: · (?P<ns>\S+))?$")
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-")
# (content, when it happened, importance): written out of time order, importance unrelated to either
TRIP = [
    ("The user booked a hotel near the Bund in Shanghai for the conference", "2026-05-06T09:00:00Z", 0.4),
    ("The user first mentioned the Shanghai conference trip in an email", "2026-05-01T09:00:00Z", 0.3),
    ("The user must be back in Beijing by Friday evening for a family dinner", "2026-05-04T09:00:00Z", 0.9),
    ("The user's company allows economy class only for flights under three hours", "2026-05-03T09:00:00Z", 0.8),
    ("The user prefers Air China and a window seat on morning flights", "2026-05-02T09:00:00Z", 0.6),
]
DAYS = {"2026-05-01": "1 May 2026", "2026-05-02": "2 May 2026", "2026-05-03": "3 May 2026"}
DAYS |= {"2026-05-04": "4 May 2026", "2026-05-06": "6 May 2026"}


@dataclass(frozen=True)
class Line:
    ref: int
    score: float
    content: str
    day: str
    namespace: str | None


def parsed(text: str) -> list[Line]:
    """The memory lines of a recall's text, each with the day header (and namespace) it sits under; every line
    of the text is a header, a memory line or part of the session's working memory."""
    lines: list[Line] = []
    day, namespace = "", None
    for line in text.split("\n"):
        if header := DAY.match(line):
            day, namespace = header["day"], header["ns"]
        elif memory := MEMORY.match(line):
            lines.append(Line(int(memory["ref"]), float(memory["score"]), memory["content"], day, namespace))
    return lines


async def write_all(client: Client, memories: list[tuple[str, str, float]], **extra: Any) -> dict[str, str]:
    """Write each memory; its id by content."""
    ids: dict[str, str] = {}
    for content, occurred_at, importance in memories:
        arguments = {"content": content, "occurred_at": occurred_at, "importance": importance, **extra}
        written = data(await client.call_tool("write_memory", arguments))
        assert written["status"] == "created", written
        ids[content] = written["id"]
    return ids


async def recall(client: Client, **arguments: Any) -> tuple[dict[str, Any], str]:
    """The structured answer and the text the client received."""
    result = await client.call_tool("recall_memory", {"query": "the Shanghai trip", **arguments})
    return data(result), text_of(result)


async def test_the_context_text_is_the_block_citing_each_memory_by_a_short_ref_mapped_to_its_id(
    app: Starlette, mint: Mint
) -> None:
    async with mcp_session(app, mint()) as client:
        ids = await write_all(client, TRIP)
        answer, text = await recall(client, format="context")
        schema = {tool.name: tool for tool in (await client.list_tools()).tools}["recall_memory"].output_schema

    jsonschema.validate(answer, schema, format_checker=jsonschema.FormatChecker())  # what it publishes
    assert set(answer) == {"context", "citations", "omitted"} and answer["omitted"] == 0
    assert text == answer["context"]  # the text content is the block itself, not JSON around it
    assert not UUID.search(text)
    lines = parsed(text)
    assert [line.ref for line in lines] == [c["ref"] for c in answer["citations"]] == [1, 2, 3, 4, 5]
    by_id = {ids[content]: (content, DAYS[occurred[:10]]) for content, occurred, _ in TRIP}
    assert {c["id"]: (line.content, line.day) for c, line in zip(answer["citations"], lines, strict=True)} == by_id
    assert [line.score for line in lines] == [round(c["score"], 2) for c in answer["citations"]]
    assert all("content" not in c for c in answer["citations"])  # the content is in the block, once
    assert all(line.namespace is None for line in lines)  # one namespace: not named


async def test_lines_that_share_a_day_share_one_header(app: Starlette, mint: Mint) -> None:
    same_day = [(content, "2026-05-06T09:00:00Z", 0.5) for content, _, _ in TRIP]
    async with mcp_session(app, mint()) as client:
        await write_all(client, same_day)
        answer, text = await recall(client)

    assert text.split("\n")[0] == "6 May 2026"
    assert text.count("6 May 2026") == 1
    assert len(parsed(text)) == len(answer["memories"]) == 5


async def test_the_default_text_is_lean_lines_in_the_order_of_the_score_shown(app: Starlette, mint: Mint) -> None:
    async with mcp_session(app, mint()) as client:
        await write_all(client, TRIP)
        answer, text = await recall(client)

    assert set(answer) == {"memories"}
    lean = {"id", "namespace", "content", "when", "score"}
    assert all(lean <= set(hit) <= {*lean, "passed_plan"} for hit in answer["memories"])  # a flag only when set
    lines = parsed(text)
    assert [line.content for line in lines] == [hit["content"] for hit in answer["memories"]]
    scores = [hit["score"] for hit in answer["memories"]]
    assert scores == sorted(scores, reverse=True)
    assert [line.score for line in lines] == [round(score, 2) for score in scores]
    overhead = count_tokens(text) - sum(count_tokens(hit["content"]) for hit in answer["memories"])
    assert overhead <= 15 * len(lines)


async def test_detail_full_or_explain_answers_every_field_as_json_text(app: Starlette, mint: Mint) -> None:
    async with mcp_session(app, mint()) as client:
        await write_all(client, TRIP)
        full = await client.call_tool("recall_memory", {"query": "the Shanghai trip", "detail": "full"})
        explained = await client.call_tool("recall_memory", {"query": "the Shanghai trip", "explain": True})

    assert text_of(full).startswith("{") and data(full)["memories"][0]["importance"] is not None
    assert text_of(explained).startswith("{") and "scores" in data(explained)["memories"][0]


async def test_order_time_lists_the_memories_chronologically_by_when_they_happened(app: Starlette, mint: Mint) -> None:
    async with mcp_session(app, mint()) as client:
        ids = await write_all(client, TRIP)
        answer, text = await recall(client, format="context", order="time")
        listed, listed_text = await recall(client, order="time")

    chronological = [ids[content] for content, _, _ in sorted(TRIP, key=lambda memory: memory[1])]
    assert text.startswith("Memories (oldest first):\n")
    assert [c["id"] for c in answer["citations"]] == chronological
    assert [hit["id"] for hit in listed["memories"]] == chronological  # the default format follows `order` too
    assert [line.content for line in parsed(listed_text)] == [hit["content"] for hit in listed["memories"]]


async def test_order_importance_puts_the_most_important_memory_first(app: Starlette, mint: Mint) -> None:
    async with mcp_session(app, mint()) as client:
        ids = await write_all(client, TRIP)
        answer, _ = await recall(client, order="importance", detail="full")
        block, block_text = await recall(client, format="context", order="importance")

    importance = [hit["importance"] for hit in answer["memories"]]
    assert importance == sorted(importance, reverse=True) == [0.9, 0.8, 0.6, 0.4, 0.3]
    assert block_text.startswith("Memories (most important first):\n")
    assert block["citations"][0]["id"] == ids[TRIP[2][0]]  # the constraint first


@pytest.mark.parametrize("budget", [20, 40, 100, 250, 1000])
@pytest.mark.parametrize("order", ["score", "time", "importance"])
@pytest.mark.parametrize("form", ["memories", "context"])
async def test_the_text_stays_within_the_token_budget_and_omitted_counts_the_memories_left_out(
    app: Starlette, mint: Mint, budget: int, order: str, form: str
) -> None:
    async with mcp_session(app, mint()) as client:
        await write_all(client, TRIP)
        everything, whole = await recall(client, format=form, order=order)
        answer, text = await recall(client, format=form, order=order, token_budget=budget)

    listed = "citations" if form == "context" else "memories"
    kept = [hit["id"] for hit in answer[listed]]
    assert count_tokens(text) <= budget
    assert len(kept) + answer["omitted"] <= len(everything[listed])  # omitted: recalled, left out of the text
    assert answer["omitted"] >= (1 if len(kept) < len(everything[listed]) else 0)  # says when there is more
    assert kept == [hit["id"] for hit in everything[listed] if hit["id"] in kept]  # still in `order`
    assert [line.ref for line in parsed(text)] == list(range(1, len(kept) + 1))  # exactly the listed ones
    assert kept, "never empty while the start of the best memory fits"
    if budget >= count_tokens(whole):
        assert answer["omitted"] == 0 and text == whole


async def test_a_memory_longer_than_the_whole_budget_is_cut_with_a_visible_mark(app: Starlette, mint: Mint) -> None:
    long = " ".join(f"The user wrote a long note about the Shanghai trip, part {n}." for n in range(40))
    async with mcp_session(app, mint()) as client:
        await write_all(client, [(long, "2026-05-01T09:00:00Z", 0.5)])
        answer, text = await recall(client, token_budget=60)
        block, block_text = await recall(client, format="context", token_budget=60)

    assert 50 <= count_tokens(text) <= 60
    [line] = parsed(text)
    assert line.content.endswith(CUT_MARK) and long.startswith(line.content.removesuffix(CUT_MARK))
    assert answer["memories"][0]["truncated"] is True and answer["memories"][0]["content"] == long
    assert answer["omitted"] == 0
    assert block_text == text and block["citations"][0]["truncated"] is True


async def test_a_budget_without_top_k_holds_as_many_memories_as_fit(app: Starlette, mint: Mint) -> None:
    many = [
        (f"The user visited Shanghai museum number {n} on the trip", "2026-05-02T09:00:00Z", 0.5) for n in range(14)
    ]
    async with mcp_session(app, mint()) as client:
        await write_all(client, many)
        default, _ = await recall(client)
        budgeted, text = await recall(client, token_budget=1000)
        capped, _ = await recall(client, token_budget=1000, top_k=3)

    assert len(default["memories"]) == 8
    assert len(budgeted["memories"]) == 14 and budgeted["omitted"] == 0
    assert len(capped["memories"]) == 3
    assert count_tokens(text) <= 1000


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
        answer, text = await recall(client, format="context", order="time", session_id="trip-1")
        without_session, other_text = await recall(client, format="context", order="time")

        lines = text.split("\n")
        assert lines[:5] == [
            'Session trip-1 state: {"goal":"book the Shanghai flight","step":2}',
            "Session trip-1 recent turns (oldest first):",
            "user: Find me a morning flight to Shanghai",
            "assistant: Air China at 8:05?",
            "Memories (oldest first):",
        ]
        assert len(parsed(text)) == len(answer["citations"]) == 3
        assert not other_text.startswith("Session") and len(without_session["citations"]) == 5

        # a budget for the state and the memories but not the turns: the turns are left out, the memories kept
        no_turns = "\n".join([lines[0], *lines[4:]])
        budget = count_tokens(no_turns) + 2
        assert count_tokens(text) > budget + 2
        short, short_text = await recall(
            client, format="context", order="time", session_id="trip-1", token_budget=budget
        )

    assert short_text == no_turns == short["context"]
    assert [c["id"] for c in short["citations"]] == [c["id"] for c in answer["citations"]]
    assert short["omitted"] == 0


async def test_a_session_without_working_memory_adds_nothing_to_the_block(app: Starlette, mint: Mint) -> None:
    async with mcp_session(app, mint()) as client:
        await write_all(client, TRIP[:2], session_id="quiet")
        answer, text = await recall(client, format="context", session_id="quiet")

    assert DAY.match(text.split("\n")[0])
    assert len(answer["citations"]) == 2


async def test_chinese_memories_make_a_context_block_within_the_budget(app: Starlette, mint: Mint) -> None:
    chinese = [
        ("用户计划明天上午从北京飞往上海，最好乘坐国航", "2026-05-04T01:00:00Z", 0.7),
        ("用户对花生过敏，订餐时要避开含花生的菜", "2026-05-02T01:00:00Z", 0.9),
        ("用户喜欢喝深烘咖啡，每天早上一杯", "2026-05-03T01:00:00Z", 0.3),
    ]
    arguments = {"query": "用户的出行和饮食偏好", "format": "context", "order": "time"}
    async with mcp_session(app, mint()) as client:
        ids = await write_all(client, chinese)
        full = await client.call_tool("recall_memory", arguments)
        short = await client.call_tool("recall_memory", {**arguments, "token_budget": 45})

    chronological = [content for content, _, _ in sorted(chinese, key=lambda memory: memory[1])]
    assert [line.content for line in parsed(text_of(full))] == chronological
    assert [c["id"] for c in data(full)["citations"]] == [ids[content] for content in chronological]
    assert count_tokens(text_of(short)) <= 45 < count_tokens(text_of(full))
    answer = data(short)
    assert 1 <= len(answer["citations"]) < 3 and answer["omitted"] == 3 - len(answer["citations"])


async def test_each_day_header_names_its_namespace_when_the_memories_span_several(app: Starlette, mint: Mint) -> None:
    token = mint(read=["user:1", "shared:travel"], write=["user:1", "shared:travel"])
    async with mcp_session(app, token) as client:
        await write_all(client, TRIP[:2])
        await write_all(client, TRIP[3:4], namespace="shared:travel")
        answer, text = await recall(client, format="context")

    lines = parsed(text)
    assert {line.namespace for line in lines} == {"user:1", "shared:travel"}
    assert [line.namespace for line in lines] == [c["namespace"] for c in answer["citations"]]


async def test_a_recall_that_finds_nothing_says_so(app: Starlette, mint: Mint) -> None:
    async with mcp_session(app, mint()) as client:
        answer, text = await recall(client)

    assert answer == {"memories": []}
    assert text == "No memories matched."


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
    assert f"{field}:" in tool_error(result)["message"]

"""The LLM extractor against a real OpenAI-compatible chat server on a free port (`tests/chat_server.py`,
standing in for the external LLM): its facts and provenance when the answer is valid, and the rule-based fallback
(with the reason) when the answer cites an unknown event, is malformed, the server fails, or it never answers."""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from memory.extraction import ExtractedFact, LlmExtractor, RuleExtractor, SourceEvent, parse_facts
from memory.extraction.llm import SYSTEM_PROMPT, InvalidAnswer
from memory.extraction.model import MAX_FACT_CHARS
from memory.llm import ChatClient, ChatConfig
from tests.chat_server import ChatRequest, ChatServer, Reply

pytestmark = pytest.mark.anyio

SAID = datetime(2026, 12, 2, 9, 30, tzinfo=ZoneInfo("Asia/Shanghai"))
EVENTS = [
    SourceEvent("e1", "user_message", "帮我查一下北京到上海的航班，要明天上午的，最好国航", SAID, speaker="小王"),
    SourceEvent("s1", "system", "tool budget: 3 calls", SAID),
    SourceEvent("c1", "tool_call", '{"from": "PEK", "to": "SHA"}', SAID, call_id="k1", tool="search_flights"),
    SourceEvent(
        "r1",
        "tool_result",
        '{"cheapest": "CA1501 08:00"}',
        SAID + timedelta(seconds=3),
        call_id="k1",
        tool="search_flights",
    ),
]
GOOD = [
    {"content": "小王计划明天（2026-12-03）上午从北京飞上海，偏好国航", "source_event_ids": ["e1"], "kind": "episodic"},
    {"content": "小王偏好国航", "source_event_ids": ["e1", "e1"], "kind": "semantic"},
    {"content": "北京到上海最便宜的航班是CA1501，08:00起飞", "source_event_ids": ["c1", "r1"], "kind": "episodic"},
]


def answering(answer: str | int) -> Reply:
    def reply(request: ChatRequest) -> str | int:
        return answer

    return reply


def extractor(chat: ChatClient, timeout: float = 5.0) -> LlmExtractor:
    return LlmExtractor(chat, RuleExtractor(), timeout_seconds=timeout)


def chat_for(server: ChatServer) -> ChatClient:
    return ChatClient(ChatConfig(base_url=server.url, model="small", api_key="k-1"))


async def test_a_valid_answer_gives_the_llms_facts_with_its_provenance(chat_server: ChatServer) -> None:
    chat_server.reply = answering(json.dumps(GOOD, ensure_ascii=False))
    async with chat_for(chat_server) as chat:
        extraction = await extractor(chat).run(EVENTS)
    assert extraction.method == "llm" and extraction.fallback_reason is None
    assert list(extraction.facts) == [
        ExtractedFact(GOOD[0]["content"], ("e1",), "episodic", SAID),  # type: ignore[arg-type]
        ExtractedFact(GOOD[1]["content"], ("e1",), "semantic", SAID),  # type: ignore[arg-type]
        ExtractedFact(GOOD[2]["content"], ("c1", "r1"), "episodic", SAID + timedelta(seconds=3)),  # type: ignore[arg-type]
    ]


async def test_the_prompt_carries_each_events_id_type_speaker_time_and_content_but_no_system_event(
    chat_server: ChatServer,
) -> None:
    chat_server.reply = answering("[]")
    async with chat_for(chat_server) as chat:
        extraction = await extractor(chat).run(EVENTS)
    assert extraction.method == "llm" and extraction.facts == ()  # nothing worth remembering is an answer
    [request] = chat_server.requests
    assert request.system == SYSTEM_PROMPT and request.authorization == "Bearer k-1"
    sent = json.loads(request.prompt)["events"]
    assert [e["id"] for e in sent] == ["e1", "c1", "r1"]
    assert sent[0] == {
        "id": "e1",
        "type": "user_message",
        "time": "2026-12-02T09:30:00+08:00",
        "speaker": "小王",
        "content": EVENTS[0].content,
    }
    assert sent[2]["call_id"] == "k1" and sent[2]["tool"] == "search_flights"


async def test_an_answer_citing_an_unknown_event_falls_back_to_the_rules(chat_server: ChatServer) -> None:
    invented = [*GOOD, {"content": "The user lives in Hangzhou", "source_event_ids": ["e9"], "kind": "semantic"}]
    chat_server.reply = answering(json.dumps(invented))
    async with chat_for(chat_server) as chat:
        extraction = await extractor(chat).run(EVENTS)
    assert extraction.method == "rules"
    assert extraction.fallback_reason == "invalid_answer: item 3 cites an unknown source event id 'e9'"
    assert list(extraction.facts) == RuleExtractor().extract_sync(EVENTS)
    assert "小王偏好国航" in [f.content for f in extraction.facts]


async def test_a_system_event_id_is_unknown_to_the_llm(chat_server: ChatServer) -> None:
    chat_server.reply = answering(json.dumps([{"content": "x", "source_event_ids": ["s1"], "kind": "episodic"}]))
    async with chat_for(chat_server) as chat:
        extraction = await extractor(chat).run(EVENTS)
    assert extraction.method == "rules" and "unknown source event id 's1'" in str(extraction.fallback_reason)


async def test_an_http_500_falls_back_to_the_rules_after_one_attempt(chat_server: ChatServer) -> None:
    chat_server.reply = answering(500)
    async with chat_for(chat_server) as chat:
        extraction = await extractor(chat).run(EVENTS)
    assert extraction.method == "rules"
    assert extraction.fallback_reason == "backend_unavailable: LLM API unavailable: HTTP 500"
    assert list(extraction.facts) == RuleExtractor().extract_sync(EVENTS)
    assert len(chat_server.requests) == 1


async def test_a_stalled_llm_falls_back_to_the_rules_within_the_timeout(chat_server: ChatServer) -> None:
    chat_server.stall()
    async with chat_for(chat_server) as chat:
        started = time.monotonic()
        extraction = await extractor(chat, timeout=0.5).run(EVENTS)
        elapsed = time.monotonic() - started
    assert extraction.method == "rules" and extraction.fallback_reason == "timeout: no answer within 0.5 s"
    assert list(extraction.facts) == RuleExtractor().extract_sync(EVENTS)
    assert 0.5 <= elapsed < 10.0  # it waited for the deadline, and did not wait for the stalled server
    assert len(chat_server.requests) <= 1  # never retried (on a loaded machine the one request may not have landed)


async def test_a_prose_answer_falls_back_and_extract_returns_the_facts_alone(chat_server: ChatServer) -> None:
    chat_server.reply = answering("Sure! Here are the facts: the user flies tomorrow.")
    async with chat_for(chat_server) as chat:
        llm = extractor(chat)
        facts = await llm.extract(EVENTS)
        extraction = await llm.run(EVENTS)
    assert facts == list(extraction.facts) == RuleExtractor().extract_sync(EVENTS)
    assert str(extraction.fallback_reason).startswith("invalid_answer: not JSON")


async def test_only_system_events_make_no_call(chat_server: ChatServer) -> None:
    async with chat_for(chat_server) as chat:
        extraction = await extractor(chat).run([EVENTS[1]])
    assert extraction.facts == () and chat_server.requests == []


def item(**overrides: object) -> str:
    fact: dict[str, object] = {"content": "The user prefers Air China", "source_event_ids": ["e1"], "kind": "semantic"}
    fact.update(overrides)
    return json.dumps([fact])


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("not json", "not JSON"),
        (json.dumps({"content": "x", "source_event_ids": ["e1"], "kind": "semantic"}), "not an array"),
        (json.dumps(["just a string"]), "item 0 is not an object"),
        (item(content="   "), "item 0 has no content"),
        (item(content="x" * (MAX_FACT_CHARS + 1)), f"longer than {MAX_FACT_CHARS}"),
        (item(source_event_ids=[]), "no list of source event ids"),
        (item(source_event_ids="e1"), "no list of source event ids"),
        (item(source_event_ids=["e1", 7]), "no list of source event ids"),
        (item(kind="preference"), "kind 'preference'"),
        (json.dumps([json.loads(item())[0]] * 201), "more than 200"),
    ],
)
def test_a_malformed_answer_is_refused_whole(answer: str, reason: str) -> None:
    with pytest.raises(InvalidAnswer, match=reason):
        parse_facts(answer, EVENTS)


def test_a_fenced_answer_after_a_reasoning_preamble_is_read() -> None:
    answer = "<think>the user wants Air China</think>\n```json\n" + item() + "\n```"
    assert parse_facts(answer, EVENTS) == [ExtractedFact("The user prefers Air China", ("e1",), "semantic", SAID)]

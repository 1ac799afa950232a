"""`bench.budget`: evidence delivered, the packing of the previous answer and of BM25 lines within a budget, and
one end-to-end measure on a tiny hand-written fixture through the real in-process app (no shared datasets)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import anyio

from bench import budget
from bench.budget_text import (
    PREVIOUS_HEADER,
    Bm25Lines,
    delivered,
    evidence_delivered,
    pack,
    previous_answer,
    readable,
)
from bench.sections import replace_section
from gateway.evaluation import locomo, memorybank
from gateway.evaluation.formats import BY_NAME
from memory.text.tokens import count_tokens

LOCOMO_SAMPLE: dict[str, Any] = {
    "sample_id": "tiny-1",
    "conversation": {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1_date_time": "1:10 pm on 27 March, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a grey cat named Pixel last weekend."},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "Congrats! I am training for the Berlin marathon."},
            {"speaker": "Ana", "dia_id": "D1:3", "text": "Pixel sleeps on my keyboard all day."},
        ],
        "session_2_date_time": "9:00 am on 4 April, 2023",
        "session_2": [
            {"speaker": "Ben", "dia_id": "D2:1", "text": "I finished the Berlin marathon in four hours!"},
            {"speaker": "Ana", "dia_id": "D2:2", "text": "Amazing. I started pottery classes on Tuesdays."},
        ],
    },
    "qa": [
        {"question": "What is the name of Ana's cat?", "answer": "Pixel", "evidence": ["D1:1"], "category": 4},
        {"question": "Which marathon did Ben run?", "answer": "Berlin", "evidence": ["D1:2", "D2:1"], "category": 1},
    ],
}
MEMORYBANK_HISTORY = {
    "小林": {
        "history": {
            "2023-04-27": [
                {"query": "我最近开始学习弹钢琴，每天练习一个小时。", "response": "太棒了，坚持下去！"},
                {"query": "我的狗叫豆豆，它很喜欢在公园里跑。", "response": "豆豆一定很开心。"},
            ],
            "2023-04-28": [
                {"query": "今天我去医院检查了牙齿。", "response": "希望一切都好。"},
                {"query": "下个月我要去杭州旅游，看看西湖。", "response": "西湖很美，祝你玩得开心。"},
            ],
        }
    }
}


def tiny_datasets(tmp_path: Path) -> list[budget.Dataset]:
    conversation = locomo.parse_conversation(LOCOMO_SAMPLE)
    (tmp_path / "memory_bank_cn.json").write_text(json.dumps(MEMORYBANK_HISTORY, ensure_ascii=False), "utf-8")
    (tmp_path / "probing_questions_cn.jsonl").write_text(json.dumps({"小林": ["我的狗叫什么名字？"]}), "utf-8")
    labels = tmp_path / "evidence.jsonl"
    labels.write_text(json.dumps({"user": "小林", "q": 0, "evidence": ["2023-04-27:1"]}) + "\n", "utf-8")
    users = memorybank.load(tmp_path, evidence=labels)
    assert [len(u.questions) for u in users] == [1] and len(conversation.questions) == 2
    return [
        budget.Dataset("LoCoMo dev", BY_NAME["plain"], [conversation]),
        budget.Dataset("MemoryBank, Chinese", BY_NAME["occurred_at"], users),
    ]


def hit(index: int, content: str, namespace: str = "user:1") -> dict[str, Any]:
    uuid = f"0190a0b0-0000-7000-8000-{index:012d}"
    return {"id": uuid, "namespace": namespace, "content": content, "when": "2023-03-27T13:10:00Z", "score": 0.5}


def test_a_turn_is_delivered_when_its_words_appear_contiguously() -> None:
    turn = "Ana: I adopted a grey cat named Pixel."
    assert delivered(turn, "[2023-03-27] Ana: I adopted a GREY cat, named Pixel!\n[2023-03-28] Ben: hi")
    assert not delivered(turn, "Ana: I adopted a grey dog and a cat named Pixel.")  # not contiguous
    assert not delivered(turn, "adopted a grey cat named Pixel")  # the speaker is part of the turn
    assert not delivered("!!!", "!!! anything")  # a turn without words is never delivered
    assert delivered("我的狗叫豆豆", "记得：我的狗叫豆豆，它很喜欢跑。") and not delivered(
        "我的狗叫豆豆", "我的猫叫豆豆"
    )
    assert evidence_delivered(["Ana: cat Pixel", "Ben: Berlin marathon"], "x Ana: cat Pixel y") == 0.5
    assert evidence_delivered([], "anything") == 0.0


def test_delivery_survives_json_escaping() -> None:
    turn = 'He said "tabs\tand\nnewlines" and 你好 \u001b nothing else'
    for ensure_ascii in (False, True):
        text = json.dumps({"memories": [{"content": turn}]}, ensure_ascii=ensure_ascii)
        assert delivered(turn, text), text
    assert readable('a\\nb \\"c\\" \\u4f60 \\\\n') == 'a b "c" 你 \\n'


def test_the_previous_answer_stays_within_its_budget_best_first() -> None:
    hits = [hit(0, "Ana: " + "very long " * 120), hit(1, "Ana: I adopted a grey cat named Pixel."), hit(2, "Ben: ok")]
    for token_budget in (10, 60, 120, 250, 500, 2000):
        text = previous_answer(hits, token_budget)
        assert count_tokens(text) <= token_budget or not json.loads(text)["memories"]  # the empty answer
        body = json.loads(text)
        kept = [h["id"] for h in body["memories"]]
        assert kept == [h["id"] for h in hits if h["id"] in kept]  # best first
        assert body["omitted"] == len(hits) - len(kept)
        if kept:
            assert body["context"].splitlines()[0] == PREVIOUS_HEADER
            assert f"[{kept[0]}] 2023-03-27 " in body["context"]
    body = json.loads(previous_answer(hits, 250))  # the long first hit is skipped, the shorter ones still fit
    assert [h["id"] for h in body["memories"]] == [hits[1]["id"], hits[2]["id"]]
    several = json.loads(previous_answer([hit(1, "a b"), hit(2, "c\nd", "team:x")], 500))["context"]
    assert several.splitlines()[1:] == [
        f"[{hit(1, '')['id']}] 2023-03-27 (user:1) a b",
        f"[{hit(2, '')['id']}] 2023-03-27 (team:x) c d",
    ]


def test_bm25_lines_are_dated_ranked_and_packed_within_the_budget() -> None:
    texts = [
        "Ana: I adopted a grey cat named Pixel.",
        "Ben: Berlin marathon notes, " + "filler words " * 60,
        "Ben: the Berlin marathon",
        "x",
    ]
    lines = Bm25Lines(texts, ["2023-03-27", "2023-03-27", "2023-04-04", "2023-04-04"])
    assert lines.ranked("berlin marathon")[:2] == [2, 1] and 0 not in lines.ranked("berlin marathon")
    assert lines.text("Pixel the cat", 500).splitlines()[0] == "[2023-03-27] Ana: I adopted a grey cat named Pixel."
    for token_budget in (5, 20, 100, 250):
        assert count_tokens(lines.text("berlin marathon cat", token_budget)) <= token_budget
    assert lines.text("berlin marathon", 30) == "[2023-04-04] Ben: the Berlin marathon"  # the long line skipped
    assert pack(["a b c", "d"], 0) == "" and count_tokens(pack(["word"] * 50, 17)) <= 17


def test_measure_on_a_tiny_fixture_through_the_in_process_app(tmp_path: Path) -> None:
    logging.getLogger().setLevel(logging.WARNING)
    (tmp_path / "data").mkdir()
    chosen = tiny_datasets(tmp_path / "data")
    (tmp_path / "work").mkdir()

    async def run() -> dict[str, Any]:
        return await budget.measure(False, tmp_path / "work", chosen)

    figures = anyio.run(run)
    assert figures["tools"]["tools"] > 0 and figures["tools"]["tokens"] > 0 and figures["tools"]["bytes"] > 0
    for label, questions in (("LoCoMo dev", 2), ("MemoryBank, Chinese", 1)):
        data = figures["datasets"][label]
        assert data["questions"] == questions
        for system in budget.SYSTEMS:
            for token_budget in budget.BUDGETS:
                assert 0.0 <= data["evidence"][f"{system}@{token_budget}"] <= 1.0
                assert 0 < data["used"][f"{system}@{token_budget}"] <= token_budget
        assert data["evidence"]["bm25 lines@500"] == 1.0  # every turn fits in 500 tokens
        assert data["overhead"]["default"]["median"] > 0
    section = budget.render(figures)
    assert section.startswith(budget.BEGIN) and section.rstrip().endswith(budget.END)
    for system in budget.SYSTEMS:
        assert section.count(f"| {system} | ") == 2
    out = tmp_path / "RESULTS.md"
    replace_section(out, section, budget.BEGIN, budget.END)
    replace_section(out, section, budget.BEGIN, budget.END)
    assert out.read_text().count(budget.BEGIN) == 1

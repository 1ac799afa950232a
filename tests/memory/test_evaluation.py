"""The LoCoMo evaluation, engine side: parsing, the turn formats, metrics against hand-worked numbers, the
hidden-state tally, the report, and the in-process runner (the weight grid's) on a tiny conversation in the
LoCoMo format plus a run over the LoCoMo-shaped fixture (tests/fixtures/). The MCP runner is tested in
tests/gateway/evaluation/test_over_mcp.py; the figures on the LoCoMo dev split come from `hindsight eval locomo`
(docs/EVALUATION.md)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from gateway.evaluation import locomo
from gateway.evaluation.formats import FORMATS, HEADER, OCCURRED_AT_ONLY, PLAIN
from gateway.evaluation.metrics import Bm25Baseline, Tally, ndcg_at, recall_at, reciprocal_rank
from gateway.evaluation.report import BEGIN, END, render, write_section
from gateway.evaluation.results import EvalReport, TurnStates, hidden_state
from gateway.evaluation.runner import default_grid, evaluate
from memory.clock import ManualClock
from memory.embedders import WordLlamaEmbedder
from memory.recall.scoring import ScoringWeights
from memory.service import MemoryService
from memory.stores.edge import EdgeVectorStore
from tenancy import Principal, scope_for
from tests.fixtures import LOCOMO


def test_recall_ndcg_and_mrr_match_a_hand_worked_example() -> None:
    ranked = ["D1:4", "D1:2", "D2:1", "D1:9", "D3:3"]
    relevant = ["D1:2", "D3:3", "D9:9"]
    assert recall_at(ranked, relevant, 2) == pytest.approx(1 / 3)
    assert recall_at(ranked, relevant, 5) == pytest.approx(2 / 3)
    # DCG = 1/log2(3) + 1/log2(6); ideal = 1 + 1/log2(3) + 1/log2(4)
    assert ndcg_at(ranked, relevant, 10) == pytest.approx((0.63093 + 0.38685) / (1 + 0.63093 + 0.5), abs=1e-4)
    assert reciprocal_rank(ranked, relevant) == pytest.approx(0.5)
    assert reciprocal_rank(["x"], relevant) == 0.0
    tally = Tally()
    tally.add(ranked, relevant)
    tally.add(["D1:2"], ["D1:2"])
    assert tally.means()["mrr"] == pytest.approx(0.75)
    assert tally.means()["recall@5"] == pytest.approx((2 / 3 + 1) / 2)


def test_malformed_evidence_ids_are_normalised() -> None:
    assert locomo.normalise_evidence(["D8:6; D9:17", "D30:05", "D1:3"]) == ["D8:6", "D9:17", "D30:5", "D1:3"]
    assert locomo.normalise_evidence("garbage") == []


def test_session_times_parse_to_aware_datetimes() -> None:
    assert locomo.parse_session_time("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def test_each_format_writes_the_turn_as_its_definition_says() -> None:
    turn = locomo.Turn(
        "D1:3", "Andrew", "So, I started a new job", 1, datetime(2023, 3, 27, 13, 10, 4, tzinfo=UTC), "a desk"
    )
    assert PLAIN.text(turn) == "Andrew: So, I started a new job [shared a photo: a desk]"
    assert HEADER.text(turn) == "[1:10 pm on 27 March, 2023] Andrew: So, I started a new job [shared a photo: a desk]"
    assert OCCURRED_AT_ONLY.text(turn) == "So, I started a new job [shared a photo: a desk]"
    morning = locomo.Turn("D1:1", "Ana", "Hi", 1, datetime(2023, 5, 8, 0, 5, tzinfo=UTC))
    assert HEADER.text(morning) == "[12:05 am on 8 May, 2023] Ana: Hi"
    assert [f.name for f in FORMATS] == ["plain", "header", "occurred_at"]


def test_a_turn_counts_once_in_the_first_hidden_state_that_applies() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    past, future = datetime(2023, 1, 1, tzinfo=UTC), datetime(2030, 1, 1, tzinfo=UTC)
    assert hidden_state(deleted_at=None, superseded_by=None, expires_at=future, now=now) is None
    assert hidden_state(deleted_at=None, superseded_by=None, expires_at=past, now=now) == "expired"
    assert hidden_state(deleted_at=past, superseded_by=None, expires_at=past, now=now) == "expired"
    assert hidden_state(deleted_at=past, superseded_by=None, expires_at=None, now=now) == "forgotten"
    assert hidden_state(deleted_at=None, superseded_by="m9", expires_at=past, now=now) == "superseded"
    states = TurnStates()
    states.skipped("D1:1")
    states.stored("D1:2", "m1")
    states.stored("D1:3", "m1")  # an exact repeat of D1:2: both texts are still stored as said
    states.stored("D1:4", "m2")
    states.stored("D1:5", "m2", updated=True)  # a near-duplicate rewrote m2 in place
    states.stored("D1:6", "m3")
    assert states.classify({"m1": None, "m2": "expired", "m3": "superseded"}) == []
    assert states.state_of == {"D1:1": "skipped", "D1:4": "merged", "D1:5": "expired", "D1:6": "superseded"}
    assert states.dia_ids_of() == {"m1": ["D1:2", "D1:3"], "m2": ["D1:4", "D1:5"], "m3": ["D1:6"]}
    unlisted = TurnStates()
    unlisted.stored("D1:1", "m1")
    assert unlisted.classify({}) == ["m1"]  # a listing that lacks a written memory is reported, not read as live


def test_plain_bm25_ranks_the_turn_with_the_rare_word_first() -> None:
    bm25 = Bm25Baseline(["a", "b", "c"], ["we went hiking", "my cat Miso sleeps", "we went to the beach"])
    assert bm25.rank("where does Miso sleep", 1) == ["b"]


def tiny_dataset() -> list[dict[str, object]]:
    turns = [
        {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a greyhound named Pixel last week."},
        {"speaker": "Ben", "dia_id": "D1:2", "text": "Congrats! I started learning the cello."},
        {"speaker": "Ana", "dia_id": "D1:3", "text": "My sister lives in Porto and visits in June."},
    ]
    later = [
        {"speaker": "Ben", "dia_id": "D2:1", "text": "My cello teacher is called Mrs. Okafor."},
        {"speaker": "Ana", "dia_id": "D2:2", "text": "Pixel loves the beach near our flat."},
    ]
    conversation = {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1_date_time": "10:00 am on 3 March, 2023",
        "session_1": turns,
        "session_2_date_time": "6:30 pm on 20 March, 2023",
        "session_2": later,
    }
    qa = [
        {"question": "What is the name of Ana's dog?", "answer": "Pixel", "evidence": ["D1:1"], "category": 4},
        {"question": "Who teaches Ben the cello?", "answer": "Mrs. Okafor", "evidence": ["D2:1"], "category": 4},
        {"question": "Where does Ana's sister live?", "answer": "Porto", "evidence": ["D1:3"], "category": 1},
        {"question": "Broken evidence", "answer": "x", "evidence": ["D7:1"], "category": 2},
    ]
    return [{"sample_id": "tiny-1", "conversation": conversation, "qa": qa}]


def load_one(tmp_path: Path, dataset: list[dict[str, object]]) -> locomo.Conversation:
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(dataset))
    [conversation] = locomo.load(path)
    return conversation


async def evaluated(tmp_path: Path, embedder: WordLlamaEmbedder, conversation: locomo.Conversation) -> EvalReport:
    """The evaluation of one conversation through a fresh engine (its own store and clock)."""
    clock = ManualClock()
    store = EdgeVectorStore.open(tmp_path / "v", model_id=embedder.model_id, dimension=embedder.dimension)
    try:
        service = MemoryService(store, embedder, clock)
        admin = scope_for(Principal(subject="eval", tenant="eval", scopes=frozenset({"memory:admin"})))
        return await evaluate(service, admin, clock, [conversation])
    finally:
        await store.close()


@pytest.mark.anyio
async def test_a_tiny_conversation_is_evaluated_through_the_engine(tmp_path: Path, embedder: WordLlamaEmbedder) -> None:
    conversation = load_one(tmp_path, tiny_dataset())
    assert len(conversation.turns) == 5 and len(conversation.questions) == 3 and conversation.unresolved_evidence == 1
    report = await evaluated(tmp_path, embedder, conversation)
    assert (report.conversations, report.turns, report.questions, report.unresolved_evidence) == (1, 5, 3, 1)
    hindsight = report.systems["hindsight"].overall.means()
    assert hindsight["recall@10"] == pytest.approx(1.0)  # 5 turns, top 10: every evidence turn is returned
    assert report.systems["bm25"].overall.means()["recall@5"] == pytest.approx(1.0)
    assert set(report.systems["hindsight"].by_category) == {1, 4}
    section = render([report], "tiny")
    results = tmp_path / "RESULTS.md"
    results.write_text("# Bench\n\nkeep me\n")
    write_section(results, section)
    write_section(results, section)  # a rerun replaces the section
    text = results.read_text()
    assert "keep me" in text and text.count(BEGIN) == 1 and text.count(END) == 1


@pytest.mark.anyio
async def test_the_grid_scores_each_setting_on_both_halves_and_shows_the_best_and_the_defaults(
    tmp_path: Path, embedder: WordLlamaEmbedder
) -> None:
    first = load_one(tmp_path, tiny_dataset())
    second_json = tiny_dataset()
    second_json[0]["sample_id"] = "tiny-2"
    second = load_one(tmp_path, second_json)
    clock = ManualClock()
    store = EdgeVectorStore.open(tmp_path / "v", model_id=embedder.model_id, dimension=embedder.dimension)
    defaults = ScoringWeights()
    grid = default_grid(defaults)
    try:
        service = MemoryService(store, embedder, clock, weights=defaults)
        admin = scope_for(Principal(subject="eval", tenant="eval", scopes=frozenset({"memory:admin"})))
        report = await evaluate(service, admin, clock, [first, second], grid=grid)
    finally:
        await store.close()

    assert len(grid) == len(set(grid)) == 27 + 24 and defaults in grid
    assert len(report.grid) == len(grid)
    tuned = [t for _, t, _ in report.grid]
    assert tuned == sorted(tuned, reverse=True)  # best first
    assert all(0.0 <= t <= 1.0 and 0.0 <= h <= 1.0 for _, t, h in report.grid)
    assert service.weights == defaults  # the search leaves the service as it found it
    table = render([report], "tiny", grid=report)
    assert "recall@10 held-out" in table and table.count("(defaults)") == 1


@pytest.mark.anyio
async def test_evidence_in_a_plan_whose_day_passed_before_the_question_is_not_hidden_but_recalled_as_history(
    tmp_path: Path, embedder: WordLlamaEmbedder
) -> None:
    dataset = tiny_dataset()
    conversation_json: Any = dataset[0]["conversation"]
    conversation_json["session_1"].append(
        {"speaker": "Ben", "dia_id": "D1:4", "text": "I have a dentist appointment tomorrow at 3pm."}
    )
    qa: Any = dataset[0]["qa"]
    qa.append(
        {"question": "When was Ben's dentist appointment?", "answer": "4 March", "evidence": ["D1:4"], "category": 2}
    )
    report = await evaluated(tmp_path, embedder, load_one(tmp_path, dataset))

    # asked on 21 March: the appointment of 4 March has passed, and is still found, demoted
    assert report.evidence_expired == 0 and not +report.turns_hidden
    assert report.systems["hindsight"].by_category[2].means()["recall@10"] == 1.0
    assert "| plain text | evidence turns | 0 | 0 | 0 | 0 | 0 | 0 of 4 (0.0%) |" in render([report], "tiny")


@pytest.mark.anyio
async def test_two_locomo_shaped_conversations_run_with_every_metric_and_both_baselines(
    tmp_path: Path, embedder: WordLlamaEmbedder
) -> None:
    two = locomo.load(LOCOMO)
    assert [(len(c.turns), len(c.questions), c.unresolved_evidence) for c in two] == [(20, 11, 1), (18, 9, 0)]
    # the malformed evidence ids of the file ("D1:4; D2:01", "D3:03") are read as the turns they name
    evidence = [[q.evidence for q in c.questions] for c in two]
    assert ("D1:4", "D2:1") in evidence[0] and ("D3:3",) in evidence[1]
    clock = ManualClock()
    store = EdgeVectorStore.open(tmp_path / "v", model_id=embedder.model_id, dimension=embedder.dimension)
    try:
        service = MemoryService(store, embedder, clock)
        admin = scope_for(Principal(subject="eval", tenant="eval", scopes=frozenset({"memory:admin"})))
        report = await evaluate(service, admin, clock, two)
    finally:
        await store.close()
    assert report.conversations == 2 and report.questions == sum(len(c.questions) for c in two)
    assert report.unresolved_evidence == 1
    for name in ("hindsight", "bm25", "dense"):
        means = report.systems[name].overall.means()
        assert set(means) == {"recall@5", "recall@10", "ndcg@10", "mrr"}
        assert 0.0 < means["recall@10"] <= 1.0
        assert means["recall@5"] <= means["recall@10"]

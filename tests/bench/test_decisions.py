"""The labelled decision set (`bench/decisions/`) and its harness (`bench.decisions`, `bench.decision_corpora`).

The set is checked for integrity as its files say it (size, language balance, every decision kind in both
languages, valid labels, the data sets its references name; its own texts parsed whole); references are resolved
against the LoCoMo- and MemoryBank-shaped fixture of tests/fixtures/, and a handful of cases and a slice of a corpus
run through the real write path. That every reference of the set resolves in the real data is checked where the
data is beside the repository (`../shared/datasets`, docs/EVALUATION.md), and by `python -m bench.decisions`, which
loads the whole set. Nothing here asserts how well today's pipeline decides: that is what the harness measures
(`make bench`), and it moves as the rules change.
"""

from __future__ import annotations

import collections
import json
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

from bench import decision_corpora, decisions
from bench.decision_set import CASES_DIR, FORMATS, KINDS, LANGUAGES, Case, SetError, load, parse_case
from memory.clock import ManualClock
from memory.embedders import WordLlamaEmbedder
from memory.service import MemoryService
from memory.stores.edge import EdgeVectorStore
from tests.fixtures import DATASETS

REAL_DATA = Path(__file__).resolve().parents[3] / "shared" / "datasets"  # a developer's checkout, not a clone's


def memories(raw: dict[str, Any]) -> list[dict[str, Any]]:
    return [*raw.get("earlier", []), raw["statement"]]


def source(memory: dict[str, Any]) -> str:
    """The source a memory of the set resolves to (`decision_set.Text.source`), read from its line alone."""
    ref = memory.get("ref")
    if ref is None:
        return "own"
    return "locomo_facts" if ref["dataset"] == "locomo" and "field" in ref else str(ref["dataset"])


@pytest.fixture(scope="module")
def lines() -> list[dict[str, Any]]:
    """Every case of the set as its line says it, references unresolved (the data they name is not here)."""
    found = []
    for path in sorted(CASES_DIR.glob("*.jsonl")):
        found += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return found


@pytest.fixture(scope="module")
def cases(lines: list[dict[str, Any]]) -> list[Case]:
    """The cases of the set's own making, parsed whole (no reference to resolve)."""
    return [parse_case(raw) for raw in lines if all(source(m) == "own" for m in memories(raw))]


def test_the_set_references_every_data_set_and_writes_most_cases_itself(
    lines: list[dict[str, Any]], cases: list[Case]
) -> None:
    referenced = [m for raw in lines for m in memories(raw) if source(m) != "own"]
    assert {source(m) for m in referenced} == {"locomo", "locomo_facts", "memorybank_cn", "memorybank_en"}
    assert len(cases) >= len(lines) / 2 and all(m.source == "own" for c in cases for m in (*c.earlier, c.statement))


def test_every_reference_of_the_set_resolves_to_a_turn_of_the_real_data_with_an_expiry_not_before_it() -> None:
    if not REAL_DATA.is_dir():
        pytest.skip(f"LoCoMo and MemoryBank are not beside the repository ({REAL_DATA}): docs/EVALUATION.md")
    every = load(CASES_DIR, REAL_DATA)
    referenced = [m for c in every for m in (*c.earlier, c.statement) if m.source != "own"]
    assert referenced and all(m.text.strip() for m in referenced)
    assert all(c.day is None or c.day >= c.statement.at.date() for c in every)


def test_the_held_out_cases_are_a_census_of_lo_co_mo_s_notes_or_written_blind_in_both_languages(
    lines: list[dict[str, Any]],
) -> None:
    held_out = [raw for raw in lines if decisions.HELD_OUT in raw.get("tags", [])]
    census = [r for r in held_out if source(r["statement"]) == "locomo_facts" and r["id"].startswith("census-")]
    blind = [r for r in held_out if "blind" in r["tags"] and source(r["statement"]) == "own"]
    assert len(census) >= 10 and len(census) + len(blind) == len(held_out)
    assert collections.Counter(r["lang"] for r in blind) == {"en": 480, "zh": 480}


def test_the_set_holds_at_least_300_statements_about_half_of_them_chinese(lines: list[dict[str, Any]]) -> None:
    assert len(lines) >= 300
    chinese = sum(r["lang"] == "zh" for r in lines) / len(lines)
    assert 0.4 <= chinese <= 0.6, f"{chinese:.0%} Chinese"
    assert len({r["id"] for r in lines}) == len(lines)


def test_every_decision_kind_is_labelled_in_both_languages_often_enough_to_measure_recall(
    lines: list[dict[str, Any]],
) -> None:
    counts = collections.Counter((r["lang"], r["expected"]) for r in lines)
    assert set(counts) <= {(lang, kind) for lang in LANGUAGES for kind in KINDS}
    for lang in LANGUAGES:
        for kind in KINDS:
            assert counts[(lang, kind)] >= 5, f"{kind} in {lang}: {counts[(lang, kind)]}"


def test_labels_name_a_day_not_before_the_statement_and_an_earlier_memory_of_the_scenario(
    lines: list[dict[str, Any]], cases: list[Case]
) -> None:
    for raw in lines:
        if raw["expected"] == "expire":
            assert date.fromisoformat(raw["day"]), raw["id"]
        if raw["expected"] in ("supersede", "merge"):
            assert 0 <= raw["target"] < len(raw.get("earlier", [])), raw["id"]
    for case in cases:  # a referenced statement's date is in the data (the real-data test above)
        if case.expected == "expire":
            assert case.day is not None and case.day >= case.statement.at.date(), case.id
    formats = collections.Counter(r.get("format", "occurred_at") for r in lines)
    assert set(formats) == set(FORMATS)


def test_the_hard_negatives_of_issue_13_are_in_the_set(cases: list[Case]) -> None:
    by_id = {c.id: c for c in cases}
    billing = by_id["own-en-billing"]
    assert billing.expected == "supersede" and billing.target == 0 and len(billing.earlier) == 3
    assert by_id["own-zh-lisa-notebook"].expected == "keep" and "换成" in by_id["own-zh-lisa-notebook"].statement.text
    shared = by_id["own-en-two-subjects-city"]
    assert shared.expected == "keep" and shared.earlier[0].subject != shared.statement.subject
    assert by_id["own-zh-course-durations"].statement.text.endswith("的持续时间是八个周")


def test_references_resolve_to_the_turn_its_speaker_and_its_time_and_a_missing_one_is_refused() -> None:
    def case(ref: dict[str, Any]) -> dict[str, Any]:
        return {"id": "x", "lang": "en", "expected": "keep", "statement": {"ref": ref}}

    turn = parse_case(case({"dataset": "locomo", "sample_id": "fixture-1", "dia_id": "D1:3"}), DATASETS).statement
    assert (turn.speaker, turn.source, turn.at) == ("Nadia", "locomo", datetime(2023, 2, 6, 14, 15, tzinfo=UTC))
    assert turn.content("header") == (
        "[2:15 pm on 6 February, 2023] Nadia: That's huge! I just adopted a three-legged cat called Biscuit."
    )
    note = {"dataset": "locomo", "sample_id": "fixture-2", "field": "observation", "session": 3, "speaker": "Priya"}
    fact = parse_case(case(note | {"index": 1}), DATASETS).statement
    assert (fact.text, fact.speaker, fact.source) == ("Priya's sister Meera lives in Toronto.", None, "locomo_facts")
    said = {"dataset": "memorybank_cn", "user": "林晓雨", "date": "2023-05-02", "index": 2}
    query = parse_case(case(said), DATASETS).statement
    assert query.text.startswith("好主意。我对芒果过敏") and query.at == datetime(2023, 5, 2, 12, 2, tzinfo=UTC)
    assert (query.speaker, query.named, query.content("plain")) == ("林晓雨", False, query.text)
    reply = parse_case(case(said | {"field": "response"}), DATASETS).statement
    assert reply.speaker is None and reply.text == "真遗憾，下次可以带一份自己能吃的甜点。"

    raw = case({"dataset": "locomo", "sample_id": "fixture-1", "dia_id": "D99:1"})
    with pytest.raises(SetError, match="no LoCoMo turn"):
        parse_case(raw, DATASETS)
    with pytest.raises(SetError, match="no MemoryBank turn"):
        parse_case(case(said | {"index": 9}), DATASETS)
    with pytest.raises(SetError, match="'day'"):
        parse_case({**raw, "expected": "expire", "statement": {"text": "x", "at": "2024-03-04T09:00:00Z"}}, DATASETS)


@pytest.mark.anyio
async def test_a_handful_of_cases_run_through_the_real_write_path_and_are_scored(
    cases: list[Case], tmp_path: Path
) -> None:
    wanted = ["own-en-thumbs-up", "own-en-billing", "own-zh-lisa-notebook"]
    by_id = {c.id: c for c in cases}
    referenced = [
        parse_case(
            {"id": "fixture-locomo-D2:5", "lang": "en", "format": "header", "expected": "expire", "day": "2023-02-20",
             "statement": {"ref": {"dataset": "locomo", "sample_id": "fixture-1", "dia_id": "D2:5"}}},
            DATASETS,
        ),
        parse_case(
            {"id": "fixture-mbcn-dog", "lang": "zh", "expected": "keep",
             "statement": {"ref": {"dataset": "memorybank_cn", "user": "林晓雨", "date": "2023-05-01", "index": 1}}},
            DATASETS,
        ),
    ]  # fmt: skip
    repeat = parse_case(
        {
            "id": "repeat",
            "lang": "en",
            "expected": "merge",
            "target": 0,
            "earlier": [{"text": "I keep bees", "at": "2024-03-01T09:00:00Z"}],
            "statement": {"text": "I keep bees", "at": "2024-03-04T09:00:00Z"},
        }
    )
    judged = await decisions.judge([*(by_id[i] for i in wanted), *referenced, repeat], tmp_path)

    got = {j.case.id: j.got for j in judged}
    assert got["own-en-thumbs-up"].kinds == ("skip",)  # an emoji alone is never stored
    assert got["repeat"].kinds == ("merge",) and got["repeat"].targets == (0,)  # an exact repeat resolves to #0
    results = decisions.DecisionResults(judged)
    for kind, score in results.scores().items():
        assert score.true <= min(score.expected, score.predicted), kind
    assert sum(s.expected for s in results.scores().values()) == len(judged)
    section = decisions.render(results)
    assert section.startswith(decisions.BEGIN) and decisions.HEADING in section
    assert all(j.case.id in section for j in results.wrong)


@pytest.mark.anyio
async def test_a_corpus_slice_ingested_through_the_write_path_accounts_for_every_turn(
    tmp_path: Path, embedder: WordLlamaEmbedder
) -> None:
    turns = list(decision_corpora.locomo_turns(DATASETS))[:30]
    store = EdgeVectorStore.open(tmp_path / "store", model_id=embedder.model_id, dimension=embedder.dimension)
    try:
        service = MemoryService(store, embedder, ManualClock(datetime(2026, 1, 1, tzinfo=UTC)))
        clock = service.clock
        assert isinstance(clock, ManualClock)
        hidden = await decision_corpora.ingest(service, store, clock, "slice", turns)
    finally:
        await store.close()
    assert hidden.written == 30
    assert hidden.memories == hidden.written - hidden.skipped - hidden.duplicates - hidden.merged
    assert hidden.visible <= hidden.memories and hidden.passed_plans + hidden.plans_ahead <= hidden.memories
    assert "| slice | 30 |" in "\n".join(decision_corpora.render([hidden]))


@pytest.fixture(scope="module")
def embedder() -> WordLlamaEmbedder:
    return WordLlamaEmbedder()

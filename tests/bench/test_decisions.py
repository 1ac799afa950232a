"""The labelled decision set (`bench/decisions/`) and its harness (`bench.decisions`, `bench.decision_corpora`).

The set is checked for integrity (every reference resolves in the datasets beside the repository, size, language
balance, every decision kind in both languages, valid labels); a handful of cases and a slice of a corpus run
through the real write path. Nothing here asserts how well today's pipeline decides: that is what the harness
measures, and it moves as the rules change.
"""

from __future__ import annotations

import collections
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bench import decision_corpora, decisions
from bench.decision_set import CASES_DIR, KINDS, LANGUAGES, Case, SetError, load, parse_case
from memory.clock import ManualClock
from memory.embedders import WordLlamaEmbedder
from memory.service import MemoryService
from memory.stores.edge import EdgeVectorStore

DATASETS = Path(__file__).resolve().parents[3] / "shared" / "datasets"


@pytest.fixture(scope="module")
def cases() -> list[Case]:
    assert DATASETS.exists(), f"the evaluation data must be beside the repository at {DATASETS} (shared/)"
    return load(CASES_DIR, DATASETS)


def test_every_reference_of_the_set_resolves_to_a_turn_of_the_datasets(cases: list[Case]) -> None:
    referenced = [m for c in cases for m in (*c.earlier, c.statement) if m.source != "own"]
    assert referenced and all(m.text.strip() for m in referenced)
    assert {m.source for m in referenced} == {"locomo", "locomo_facts", "memorybank_cn", "memorybank_en"}


def test_the_held_out_cases_are_a_census_of_lo_co_mo_s_notes_or_written_blind_in_both_languages(
    cases: list[Case],
) -> None:
    held_out = [c for c in cases if decisions.HELD_OUT in c.tags]
    census = [c for c in held_out if c.statement.source == "locomo_facts" and c.id.startswith("census-")]
    blind = [c for c in held_out if "blind" in c.tags and c.statement.source == "own"]
    assert len(census) >= 10 and len(census) + len(blind) == len(held_out)
    assert collections.Counter(c.lang for c in blind) == {"en": 480, "zh": 480}


def test_the_set_holds_at_least_300_statements_about_half_of_them_chinese(cases: list[Case]) -> None:
    assert len(cases) >= 300
    chinese = sum(c.lang == "zh" for c in cases) / len(cases)
    assert 0.4 <= chinese <= 0.6, f"{chinese:.0%} Chinese"
    assert len({c.id for c in cases}) == len(cases)


def test_every_decision_kind_is_labelled_in_both_languages_often_enough_to_measure_recall(cases: list[Case]) -> None:
    counts = collections.Counter((c.lang, c.expected) for c in cases)
    for lang in LANGUAGES:
        for kind in KINDS:
            assert counts[(lang, kind)] >= 5, f"{kind} in {lang}: {counts[(lang, kind)]}"


def test_labels_name_a_day_not_before_the_statement_and_an_earlier_memory_of_the_scenario(cases: list[Case]) -> None:
    for case in cases:
        if case.expected == "expire":
            assert case.day is not None and case.day >= case.statement.at.date(), case.id
        if case.expected in ("supersede", "merge"):
            assert case.target is not None and 0 <= case.target < len(case.earlier), case.id
    formats = collections.Counter(c.format for c in cases)
    assert set(formats) == {"plain", "header", "occurred_at"}


def test_the_hard_negatives_of_issue_13_are_in_the_set(cases: list[Case]) -> None:
    by_id = {c.id: c for c in cases}
    billing = by_id["own-en-billing"]
    assert billing.expected == "supersede" and billing.target == 0 and len(billing.earlier) == 3
    assert by_id["own-zh-lisa-notebook"].expected == "keep" and "换成" in by_id["own-zh-lisa-notebook"].statement.text
    shared = by_id["own-en-two-subjects-city"]
    assert shared.expected == "keep" and shared.earlier[0].subject != shared.statement.subject
    assert by_id["own-zh-course-durations"].statement.text.endswith("的持续时间是八个周")


def test_a_reference_to_a_missing_turn_is_refused() -> None:
    raw = {
        "id": "bad",
        "lang": "en",
        "expected": "keep",
        "statement": {"ref": {"dataset": "locomo", "sample_id": "conv-26", "dia_id": "D99:1"}},
    }
    with pytest.raises(SetError, match="no LoCoMo turn"):
        parse_case(raw, DATASETS)
    with pytest.raises(SetError, match="'day'"):
        parse_case({**raw, "expected": "expire", "statement": {"text": "x", "at": "2024-03-04T09:00:00Z"}}, DATASETS)


@pytest.mark.anyio
async def test_a_handful_of_cases_run_through_the_real_write_path_and_are_scored(
    cases: list[Case], tmp_path: Path
) -> None:
    wanted = ["own-en-thumbs-up", "own-en-billing", "own-zh-lisa-notebook", "locomo-conv-26-D1:3", "mbcn-u00-04-27-1"]
    by_id = {c.id: c for c in cases}
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
    judged = await decisions.judge([*(by_id[i] for i in wanted), repeat], tmp_path)

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

"""The census of the write pipeline's hides (`bench/decision_census.py`) on the LoCoMo- and MemoryBank-shaped
fixture of tests/fixtures/ (every corpus the census reads, laid out as the real data is). The census of the real
corpora is `python -m bench.decision_census` (docs/EVALUATION.md)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from bench import decision_census
from bench.decision_set import parse_case
from memory.clock import ManualClock
from memory.embedders import WordLlamaEmbedder
from memory.service import MemoryService
from memory.stores.edge import EdgeVectorStore
from tests.fixtures import DATASETS

pytestmark = pytest.mark.anyio


@pytest.fixture
async def service(tmp_path: Path) -> MemoryService:
    embedder = WordLlamaEmbedder()
    store = EdgeVectorStore.open(tmp_path / "store", model_id=embedder.model_id, dimension=embedder.dimension)
    return MemoryService(store, embedder, ManualClock(datetime(2026, 1, 1, tzinfo=UTC)))


def test_every_corpus_is_read_with_references_the_set_resolves_to_the_same_text() -> None:
    sizes = {name: len(decision_census.corpus(name, DATASETS)) for name in decision_census.CORPORA}
    # 38 turns; the query and the response of 30 Chinese and 10 English exchanges; 21 observations, 10 events (the
    # empty lists and the "date" of each session left out) and 6 summaries
    assert sizes == {
        "locomo-header": 38,
        "memorybank-cn": 60,
        "memorybank-en": 20,
        "locomo-observations": 21,
        "locomo-events": 10,
        "locomo-summaries": 6,
    }
    for name in decision_census.CORPORA:
        turns = decision_census.corpus(name, DATASETS)
        for said in turns:
            raw = {"id": "x", "lang": said.lang, "format": said.fmt, "expected": "keep"}
            case = parse_case(raw | {"statement": decision_census.memory_of(said)}, DATASETS)
            assert said.content.endswith(case.statement.text), name
            assert case.statement.at == said.at and case.statement.subject == said.subject


async def test_a_census_lists_each_hide_once_as_a_case_that_loads_when_labelled(service: MemoryService) -> None:
    turns = [t for t in decision_census.corpus("locomo-header", DATASETS) if t.namespace == "locomo:fixture-1"]
    clock = service.clock
    assert isinstance(clock, ManualClock)
    try:
        found = await decision_census.census(turns, service, clock)
    finally:
        await service.store.close()

    kinds = {case["got"].split()[0] for case in found}
    assert {"skip", "expire"} <= kinds  # fixture-1 has a goodbye and a dentist appointment "tomorrow"
    assert len({case["id"] for case in found}) == len(found)
    for case in found:
        assert case["expected"] == "" and case["reason"]
        kind = case["got"].split()[0]
        labelled = case | {"expected": kind}
        if kind == "expire":
            labelled["day"] = case["got"].split()[1]
        if kind in ("merge", "supersede"):
            labelled["target"] = 0
        parsed = parse_case(labelled, DATASETS)
        assert parsed.statement.text in case["text"]

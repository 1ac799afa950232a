"""A small bilingual (English + Chinese) evaluation through the whole engine: facts, updates that supersede
earlier facts, time-bound facts, and paraphrased questions; recall must put the current fact first, never return
a superseded one, and mark a plan whose day has passed as such (fixture: tests/memory/fixtures/bilingual_eval.json)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memory.clock import ManualClock
from memory.embedders import WordLlamaEmbedder
from memory.models import WriteStatus
from memory.requests import RecallRequest, WriteRequest
from memory.service import MemoryService
from memory.stores.edge import EdgeVectorStore
from tests.memory.conftest import scope

pytestmark = pytest.mark.anyio
FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "bilingual_eval.json").read_text())
START = datetime.fromisoformat(FIXTURE["start"])
QUESTIONS: list[dict[str, Any]] = FIXTURE["questions"]
Answer = tuple[list[str], list[str], list[str]]


@pytest.fixture(scope="module")
async def answers(shared_store: EdgeVectorStore, embedder: WordLlamaEmbedder) -> dict[str, Answer]:
    """Write the fixture once, then ask every question at `ask_at`: {query: (top 3 recalled, superseded ids, the
    recalled ones marked as passed plans)}."""
    clock = ManualClock(START)
    service = MemoryService(shared_store, embedder, clock)
    me = scope("bilingual-eval", write=["user:en", "user:zh"])
    superseded: list[str] = []
    for step in FIXTURE["writes"]:
        clock.advance((START + timedelta(minutes=step["at"]) - clock.now()).total_seconds())
        request = WriteRequest(content=step["content"], subject="agent-1", namespace=step["namespace"])
        outcome = await service.write(me, request)
        assert outcome.status is WriteStatus.CREATED, (step["content"], outcome.reason)
        superseded.extend(outcome.superseded)
    clock.advance((START + timedelta(minutes=FIXTURE["ask_at"]) - clock.now()).total_seconds())
    found = {}
    for question in QUESTIONS:
        request = RecallRequest(query=question["query"], namespaces=[question["namespace"]], top_k=3)
        hits = await service.recall(me, request)
        passed = [h.memory.content for h in hits if "passed_plan" in h.scores.cues]
        found[question["query"]] = ([h.memory.content for h in hits], superseded, passed)
    return found


async def test_every_update_in_the_fixture_superseded_exactly_one_older_fact(
    answers: dict[str, Answer],
) -> None:
    superseded = next(iter(answers.values()))[1]

    assert len(superseded) == len(set(superseded)) == 7


@pytest.mark.parametrize("question", QUESTIONS, ids=[q["query"] for q in QUESTIONS])
async def test_recall_puts_the_current_fact_first_never_a_superseded_one_and_marks_a_passed_plan(
    answers: dict[str, Answer], question: dict[str, Any]
) -> None:
    recalled, _, passed = answers[question["query"]]

    if "first" in question:
        assert recalled[0] == question["first"], recalled
    for stale in question.get("absent", []):
        assert stale not in recalled
    for plan in question.get("passed", []):  # kept as history, marked: "dinner tonight" is not a plan any more
        assert plan in passed, recalled

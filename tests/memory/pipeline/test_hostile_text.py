"""Hostile text costs bounded CPU: every text rule of the write pipeline and of recall stays within a CPU-time
bound on each hostile input at the content limit (`bench.hostile_inputs`), and a fuzz test of adversarial text
(trigger fragments repeated and mixed with random unicode, up to the limit) holds the write and query analysis
within their budget, never raising.

CPU time is the calling thread's (`time.thread_time`), so other processes on the machine do not count; a call
over the bound is measured twice more and the cheapest of the three counts (cache and frequency noise)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.hostile_inputs import FAMILIES, LIMIT
from memory.embedders.sparse import Bm25Encoder
from memory.pipeline import claims, conflict, density, expiry, importance
from memory.pipeline.analysis import DEFAULT_BUDGET_SECONDS, analyse_query, analyse_write
from memory.pipeline.settings import PipelineSettings
from memory.recall.cues import query_cues, states_time
from memory.text.budget import CpuBudget
from memory.text.words import numbers, split_speaker, tokenize
from tests.cpu_bounds import cpu_ms
from tests.memory.conftest import START, make_memory

BOUND_MS = 50.0  # per function and hostile input
# the analysis stops at its budget, give or take the one step (a regex scan, the tokenizer) it was in
ANALYSIS_BOUND_MS = DEFAULT_BUDGET_SECONDS * 1000 + 30.0
# a date or weekday costs the most when the day it names is still to come: texts are read as said on both days
REFERENCE = datetime(2026, 12, 1, 20, 0, tzinfo=UTC)  # "Dec 5", "on Fri", "next week" name coming days
MAY = datetime(2026, 5, 4, 10, 30, tzinfo=UTC)  # "5月5日", "May 5" name coming days
ENCODER = Bm25Encoder()
LATER = START + timedelta(days=1)


FUNCTIONS: dict[str, Callable[[str], Any]] = {
    "expiry said on 1 Dec": lambda text: expiry.find_expiry(text, REFERENCE),
    "expiry said on 4 May": lambda text: expiry.find_expiry(text, MAY),
    "density": density.assess,
    "importance": importance.rate,
    "claims": claims.extract,
    "tokenize": tokenize,
    "keyword document": ENCODER.document,
    "keyword query": ENCODER.query,
    "query cues": query_cues,
    "states time": states_time.__wrapped__,  # uncached: the cost of the first look
    "speaker": split_speaker,
    "numbers": numbers,
}


@pytest.mark.parametrize("family", list(FAMILIES))
@pytest.mark.parametrize("function", list(FUNCTIONS))
def test_each_text_rule_stays_within_its_cpu_bound_on_hostile_text_at_the_limit(function: str, family: str) -> None:
    text = FAMILIES[family]

    spent = cpu_ms(lambda: FUNCTIONS[function](text), BOUND_MS)

    assert spent < BOUND_MS, f"{function} on {family!r}: {spent:.1f} ms"


def test_one_long_word_is_cut_into_pieces_that_documents_and_queries_share() -> None:
    document = ENCODER.document("a" * LIMIT)
    query = ENCODER.query("a" * LIMIT)

    assert set(query.indices) == set(document.indices)
    assert max(len(token) for token in tokenize("x" * 1000)) == 64


@pytest.mark.parametrize("family", ["I live in", "mixed", "NFKC 18-fold", "zero-width"])
def test_conflict_decision_over_hostile_candidates_stays_within_its_budget(family: str) -> None:
    text = FAMILIES[family]
    candidates = [(make_memory(f"{text[:-2]}{i:02d}", tenant="acme"), 0.95) for i in range(16)]
    budget_ms = 50.0

    spent = cpu_ms(
        lambda: conflict.decide(text, LATER, candidates, PipelineSettings(), budget=CpuBudget(budget_ms / 1000)),
        budget_ms + 30.0,
    )

    assert spent < budget_ms + 30.0, f"{family!r}: {spent:.1f} ms"


def test_candidates_the_conflict_budget_does_not_reach_are_left_alone_and_counted() -> None:
    old = [(make_memory(f"I live in Berlin, flat {i}", tenant="acme"), 0.9 - i / 100) for i in range(8)]
    ticks = itertools.count()
    budget = CpuBudget(1.0, clock=lambda: next(ticks) * 0.1)  # each read of the clock spends 0.1 s

    decision = conflict.decide("I live in Paris", LATER, old, PipelineSettings(), budget=budget)

    assert decision.unexamined > 0
    assert len(decision.supersede) + decision.unexamined <= len(old)
    unbounded = conflict.decide("I live in Paris", LATER, old, PipelineSettings())
    assert (unbounded.unexamined, len(unbounded.supersede)) == (0, len(old))
    spent = conflict.decide("I live in Paris", LATER, old, PipelineSettings(), budget_seconds=0.0)
    assert (spent.unexamined, spent.action) == (len(old), conflict.ConflictAction.CREATE)


@pytest.mark.parametrize("family", list(FAMILIES))
@pytest.mark.parametrize("said", [REFERENCE, MAY], ids=["said on 1 Dec", "said on 4 May"])
def test_the_write_analysis_of_hostile_text_stays_within_its_budget(family: str, said: datetime) -> None:
    spent = cpu_ms(lambda: analyse_write(FAMILIES[family], said), ANALYSIS_BOUND_MS)

    assert spent < ANALYSIS_BOUND_MS, f"{family!r}: {spent:.1f} ms"


@pytest.mark.parametrize("family", list(FAMILIES))
def test_the_query_analysis_of_hostile_text_stays_within_its_budget(family: str) -> None:
    spent = cpu_ms(lambda: analyse_query(FAMILIES[family], ENCODER), ANALYSIS_BOUND_MS)

    assert spent < ANALYSIS_BOUND_MS, f"{family!r}: {spent:.1f} ms"


# -- fuzz ------------------------------------------------------------------------------------------------------

TRIGGERS = [
    "Dec 5 ",
    "on Fri ",
    "tomorrow ",
    "next week ",
    "in 3 days ",
    "2026-05-05 ",
    "明天",
    "下周三",
    "5月5日",
    "I live in ",
    "我住在",
    "I like ",
    "we switched ",
    "my name is ",
    "remember ",
    "I went ",
    "yesterday. ",
    "Caroline: ",
    "[8 May, 2023] ",
    "a",
    "1",
    "我",
    ". ",
    "!?",
    " ",
    "\u200b",
    "\u200d",
    "😀",
    "👍🏽",
    "\ufdfa",
    "-",
    ":",
    "\t",
    "\n",
]
fragments = st.one_of(
    st.sampled_from(TRIGGERS),
    st.text(max_size=12),  # any unicode, surrogates excluded
    st.integers(min_value=0, max_value=99_999).map(str),
)
# a few fragments, each repeated many times, in any order: long runs of one trigger and mixes of several
pieces = st.tuples(fragments, st.integers(min_value=1, max_value=LIMIT)).map(lambda p: p[0] * p[1])
hostile = st.lists(pieces, min_size=1, max_size=6).map(lambda parts: "".join(parts)[:LIMIT])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(text=hostile, days=st.integers(min_value=-365, max_value=365))
def test_fuzzed_hostile_text_is_analysed_within_the_budget_and_never_raises(text: str, days: int) -> None:
    reference = REFERENCE + timedelta(days=days)

    write_ms = cpu_ms(lambda: analyse_write(text, reference), ANALYSIS_BOUND_MS)
    query_ms = cpu_ms(lambda: analyse_query(text, ENCODER), ANALYSIS_BOUND_MS)

    assert write_ms < ANALYSIS_BOUND_MS
    assert query_ms < ANALYSIS_BOUND_MS

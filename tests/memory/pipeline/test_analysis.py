"""The text analysis under a CPU budget: on normal text it finds what the steps find on their own; when the
budget runs out it skips the remaining steps, records which and why, and never raises."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

import pytest

from memory.embedders.sparse import Bm25Encoder
from memory.pipeline import claims, density, expiry, importance
from memory.pipeline.analysis import INLINE_QUERY_CHARS, analyse_query, analyse_write, analysed_query
from memory.text.budget import CpuBudget

MONDAY = datetime(2026, 5, 4, 10, 30, tzinfo=UTC)
TEXT = "Remember: I live in Berlin and the dentist appointment is tomorrow at 5"


def ticking(step: float) -> CpuBudget:
    """A budget of 1 s on a clock that moves `step` seconds each time it is read (so tests need no real load)."""
    ticks = itertools.count()
    return CpuBudget(1.0, clock=lambda: next(ticks) * step)


def test_the_write_analysis_of_normal_text_finds_what_each_step_finds() -> None:
    found = analyse_write(TEXT, MONDAY)

    bound = expiry.find_expiry(TEXT, MONDAY)
    assert found.expiry == bound
    assert found.density == density.assess(TEXT)
    assert found.importance == importance.rate(TEXT, time_bound=bound is not None)
    assert list(found.claims) == claims.extract(TEXT)
    assert found.skipped == ()
    assert found.notes() is None


def test_steps_not_asked_for_are_neither_run_nor_reported_as_skipped() -> None:
    found = analyse_write(TEXT, MONDAY, with_density=False, with_expiry=False, with_importance=False)

    assert (found.density, found.expiry, found.importance) == (None, None, None)
    assert found.claims
    assert found.skipped == ()


def test_a_spent_budget_skips_the_remaining_steps_and_says_why() -> None:
    found = analyse_write(TEXT, MONDAY, budget=CpuBudget(0.0))

    assert [s.step for s in found.skipped] == ["untrusted", "density", "expiry", "importance", "claims"]
    assert all("spent before the step" in s.reason for s in found.skipped)
    assert (found.untrusted, found.density, found.expiry, found.importance, found.claims) == (
        None,
        None,
        None,
        None,
        (),
    )
    notes = found.notes()
    assert notes is not None
    assert set(notes["skipped"]) == {"untrusted", "density", "expiry", "importance", "claims"}


def test_a_budget_running_out_inside_a_step_abandons_that_step_whole() -> None:
    # each clock read advances 0.1 s of the 1 s budget: it runs out among the expiry rule's matches
    found = analyse_write("on Fri " * 100, MONDAY, budget=ticking(0.1))

    skipped = {s.step: s.reason for s in found.skipped}
    assert "during the step" in skipped["expiry"]
    assert found.expiry is None  # never a half-read expiry (an earlier day than the text names)
    assert set(skipped) >= {"expiry", "importance", "claims"}


def test_a_day_out_of_range_skips_the_expiry_instead_of_raising() -> None:
    last_day = datetime(9999, 12, 31, 12, tzinfo=UTC)

    found = analyse_write("I fly to Rome tomorrow", last_day)

    assert found.expiry is None
    assert [s.step for s in found.skipped] == ["expiry"]
    assert "OverflowError" in found.skipped[0].reason


def test_the_query_analysis_gives_the_keyword_vector_and_cues_and_skips_cues_last() -> None:
    encoder = Bm25Encoder()

    found = analyse_query("When did Caroline move to Paris?", encoder)
    starved = analyse_query("When did Caroline move to Paris?", encoder, budget=CpuBudget(0.0))

    assert found.keywords == encoder.query("When did Caroline move to Paris?")
    assert found.cues.asks_when and "caroline" in found.cues.words
    assert found.skipped == ()
    assert [s.step for s in starved.skipped] == ["keywords", "cues"]
    assert starved.keywords is None
    assert not starved.cues.asks_when and not starved.cues.words


@pytest.mark.anyio
async def test_a_query_is_analysed_alike_inline_when_short_and_in_a_worker_thread_when_long() -> None:
    encoder = Bm25Encoder()
    short = "When did Caroline move to Paris?"
    long = " ".join([short] * (INLINE_QUERY_CHARS // len(short) + 1))

    for text in (short, long):
        got = await analysed_query(text, encoder)
        assert got.keywords == encoder.query(text)
        assert got.cues == analyse_query(text, encoder).cues
        assert got.cues.asks_when and "caroline" in got.cues.words
        assert got.skipped == ()


def test_the_claims_of_a_text_whose_speaker_is_given_beside_it_are_that_speakers() -> None:
    given = analyse_write("I live in Berlin", MONDAY, speaker="caroline")
    prefixed = analyse_write("Caroline: I live in Berlin", MONDAY)
    unknown = analyse_write("I live in Berlin", MONDAY)

    assert [c.attribute for c in given.claims] == [c.attribute for c in prefixed.claims] == ["caroline|lives_in"]
    assert [c.attribute for c in unknown.claims] == ["user|lives_in"]
    assert given.claims[0].first_person is False and unknown.claims[0].first_person is True

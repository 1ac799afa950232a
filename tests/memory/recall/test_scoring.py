"""The recall score: `a·similarity + b·recency + c·importance + d·access_frequency` and its parts."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest

from memory.errors import InvalidArgument
from memory.recall.scoring import ScoringWeights, estimate_tokens, score
from tests.memory.conftest import START, make_memory

DEFAULT = ScoringWeights()


def test_the_default_weights_let_relevance_lead_and_keep_every_signal_of_the_design() -> None:
    others = (DEFAULT.recency, DEFAULT.importance, DEFAULT.access_frequency)
    assert DEFAULT.similarity > sum(others) and all(w > 0 for w in others)
    assert DEFAULT.recency_decay_per_hour == 0.01


@pytest.mark.parametrize(
    "bad",
    [
        {"dense_share": 1.5},
        {"dense_share": -0.1},
        {"context": -1.0},
        {"session": math.nan},
        {"speaker": -0.1},
        {"when": math.inf},
        {"question": 1.2},
    ],
)
def test_relevance_weights_out_of_range_are_refused(bad: dict[str, float]) -> None:
    with pytest.raises(InvalidArgument):
        ScoringWeights(**bad)


@pytest.mark.parametrize(
    "weights",
    [
        DEFAULT,
        ScoringWeights(similarity=1.0, recency=0.0, importance=0.0, access_frequency=0.0),
        ScoringWeights(2, 1, 3, 4),
    ],
)
def test_the_score_is_the_weighted_sum_of_its_parts(weights: ScoringWeights) -> None:
    memory = make_memory("The user likes tea", tenant="acme", importance=0.7, access_count=4)
    now = START + timedelta(hours=10)

    parts = score(memory, 0.6, now, weights)

    assert parts.similarity == 0.6
    assert parts.recency == pytest.approx(math.exp(-0.01 * 10))
    assert parts.importance == 0.7
    assert parts.access_frequency == pytest.approx(math.log1p(4) / math.log1p(50))
    assert parts.score == pytest.approx(
        weights.similarity * parts.similarity
        + weights.recency * parts.recency
        + weights.importance * parts.importance
        + weights.access_frequency * parts.access_frequency
    )


@pytest.mark.parametrize("hours", [0, 1, 24, 100, 24 * 365])
def test_recency_decays_exponentially_with_hours_since_the_last_update(hours: int) -> None:
    memory = make_memory("The user likes tea", tenant="acme", at=START - timedelta(days=400), updated_at=START)

    parts = score(memory, 0.5, START + timedelta(hours=hours), DEFAULT)

    assert parts.recency == pytest.approx(math.exp(-0.01 * hours))


def test_recency_follows_the_configured_decay_rate() -> None:
    memory = make_memory("The user likes tea", tenant="acme")

    parts = score(memory, 0.5, START + timedelta(hours=10), ScoringWeights(recency_decay_per_hour=0.1))

    assert parts.recency == pytest.approx(math.exp(-1.0))


def test_recency_is_one_for_a_memory_updated_in_the_future() -> None:
    memory = make_memory("The user likes tea", tenant="acme", at=START + timedelta(hours=5))

    assert score(memory, 0.5, START, DEFAULT).recency == 1.0


def test_access_frequency_grows_with_access_count_and_saturates_at_one() -> None:
    frequencies = [
        score(make_memory("The user likes tea", tenant="acme", access_count=n), 0.5, START, DEFAULT).access_frequency
        for n in (0, 1, 5, 20, 49, 50, 51, 1_000, 10**9)
    ]

    assert frequencies[0] == 0.0
    assert frequencies == sorted(frequencies)
    assert all(0.0 <= f <= 1.0 for f in frequencies)
    assert frequencies[4] < 1.0
    assert frequencies[5:] == [1.0] * 4


def test_access_saturation_is_configurable() -> None:
    memory = make_memory("The user likes tea", tenant="acme", access_count=1)

    assert score(memory, 0.5, START, ScoringWeights(access_saturation=1)).access_frequency == 1.0


@pytest.mark.parametrize(
    ("similarity", "clamped"),
    [(-0.4, 0.0), (0.0, 0.0), (0.42, 0.42), (1.0, 1.0), (1.3, 1.0), (float("nan"), 0.0)],
)
def test_similarity_is_clamped_to_zero_and_one(similarity: float, clamped: float) -> None:
    parts = score(make_memory("The user likes tea", tenant="acme"), similarity, START, DEFAULT)

    assert parts.similarity == clamped
    assert 0.0 <= parts.score <= 1.0


def test_every_part_and_the_default_score_lie_in_zero_to_one() -> None:
    best = make_memory("The user likes tea", tenant="acme", importance=1.0, access_count=10**6)
    worst = make_memory("The user likes tea", tenant="acme", importance=0.0, at=START - timedelta(days=3650))

    assert score(best, 1.0, START, DEFAULT).score == pytest.approx(1.0)
    assert score(worst, -1.0, START, DEFAULT).score == pytest.approx(0.2 * math.exp(-0.01 * 3650 * 24))


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({"similarity": -0.1}, id="negative-similarity-weight"),
        pytest.param({"recency": -1.0}, id="negative-recency-weight"),
        pytest.param({"importance": -0.5}, id="negative-importance-weight"),
        pytest.param({"access_frequency": -0.1}, id="negative-access-weight"),
        pytest.param(
            {"similarity": 0.0, "recency": 0.0, "importance": 0.0, "access_frequency": 0.0}, id="all-weights-zero"
        ),
        pytest.param({"recency_decay_per_hour": -0.01}, id="negative-decay"),
        pytest.param({"access_saturation": 0}, id="zero-saturation"),
        pytest.param(
            {"similarity": float("nan")},
            id="nan-weight",
        ),
        pytest.param(
            {"similarity": float("inf")},
            id="infinite-weight",
        ),
        pytest.param(
            {"recency_decay_per_hour": float("nan")},
            id="nan-decay",
        ),
    ],
)
def test_invalid_weights_raise_invalid_argument(kwargs: dict[str, float]) -> None:
    with pytest.raises(InvalidArgument):
        ScoringWeights(**kwargs)


def test_zero_decay_keeps_recency_at_one() -> None:
    memory = make_memory("The user likes tea", tenant="acme", at=START - timedelta(days=3650))

    assert score(memory, 0.5, START, ScoringWeights(recency_decay_per_hour=0.0)).recency == 1.0


@pytest.mark.parametrize(
    ("text", "tokens"),
    [("a", 1), ("four", 1), ("abcdefgh", 2), ("a b c d e f", 6), ("x" * 400, 100)],
)
def test_token_estimate_is_about_four_characters_and_at_least_one_per_word(text: str, tokens: int) -> None:
    assert estimate_tokens(text) == tokens


def test_a_cjk_query_takes_the_cjk_dense_share_and_meaning_counts_unless_both_shares_are_zero() -> None:
    english_model = ScoringWeights(dense_share=0.3, cjk_dense_share=0.0)
    multilingual = ScoringWeights(dense_share=0.3, cjk_dense_share=0.0, cross_script_share=0.5)

    assert english_model.dense_share_for(cjk=False) == 0.3 and english_model.dense_share_for(cjk=True) == 0.0
    assert ScoringWeights(dense_share=0.3).dense_share_for(cjk=True) == 0.3  # no CJK share: the usual one
    assert english_model.meaning_counts(cjk=False) and not english_model.meaning_counts(cjk=True)
    assert multilingual.meaning_counts(cjk=True)  # it matches memories in the other script by meaning

"""The bootstrap interval the quality benchmarks quote beside a paired difference (bench.stats)."""

from __future__ import annotations

import math

from bench.stats import paired_bootstrap_interval


def test_the_interval_brackets_the_mean_of_the_differences() -> None:
    differences = [0.0] * 900 + [1.0] * 50 + [-1.0] * 50
    low, high = paired_bootstrap_interval(differences)
    assert low < 0.0 < high
    assert low > -0.05 and high < 0.05


def test_a_difference_every_question_shares_has_no_spread() -> None:
    assert paired_bootstrap_interval([0.25] * 40) == (0.25, 0.25)


def test_a_consistent_loss_is_below_zero_at_both_ends() -> None:
    low, high = paired_bootstrap_interval([-0.1] * 300 + [0.0] * 700)
    assert high < 0.0 and math.isclose(low + high, -0.06, abs_tol=0.02)


def test_the_same_differences_give_the_same_interval() -> None:
    differences = [((i * 37) % 11 - 5) / 10 for i in range(500)]
    assert paired_bootstrap_interval(differences) == paired_bootstrap_interval(differences)


def test_no_differences_give_no_interval() -> None:
    low, high = paired_bootstrap_interval([])
    assert math.isnan(low) and math.isnan(high)

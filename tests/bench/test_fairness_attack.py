"""The fairness stage's attack process (`bench.fairness_attack`): the stage learns that its attacker died instead of
waiting for its figures without end (a `make bench` that hangs measures nothing)."""

from __future__ import annotations

import multiprocessing
import os

import pytest

from bench.fairness_attack import outcome_of


def test_an_attack_process_that_ends_without_its_figures_is_an_error_not_a_wait() -> None:
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    child = context.Process(target=os._exit, args=(3,), daemon=True)
    child.start()

    with pytest.raises(RuntimeError, match="exit code 3"):
        outcome_of(child, results, 0.0)


def test_the_figures_an_attack_process_reports_are_returned() -> None:
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    child = context.Process(target=results.put, args=({"counts": {"ok": 1}},), daemon=True)
    child.start()

    assert outcome_of(child, results, 0.0) == {"counts": {"ok": 1}}
    child.join()

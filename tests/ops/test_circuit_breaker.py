"""`CircuitBreaker`'s states on a clock the test moves: closed until `threshold` calls in a row got no answer,
open (every call refused) for the cool-down, then half-open with one probe whose verdict closes or reopens it."""

from __future__ import annotations

import pytest

from ops.circuit_breaker import Admission, BreakerState, CircuitBreaker

NO_ANSWER = TimeoutError("no answer")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def breaker(clock: Clock, threshold: int = 3, cooldown: float = 5.0) -> CircuitBreaker:
    return CircuitBreaker("redis", threshold=threshold, cooldown_seconds=cooldown, clock=clock)


def fail(b: CircuitBreaker, times: int = 1) -> None:
    for _ in range(times):
        admission = b.admit()
        assert admission is not None
        b.failed(admission, NO_ANSWER)


def cooled_down_probe(clock: Clock) -> tuple[CircuitBreaker, Admission]:
    """A breaker opened by three failures in a row, its cool-down over, and the probe it then admitted."""
    b = breaker(clock)
    fail(b, 3)
    clock.now += 5
    probe = b.admit()
    assert probe is not None
    return b, probe


def test_it_opens_after_threshold_failures_in_a_row_and_an_answer_between_resets_the_count() -> None:
    clock = Clock()
    b = breaker(clock)
    fail(b, 2)
    admission = b.admit()
    assert admission is not None
    b.succeeded(admission)
    fail(b, 2)
    assert b.state is BreakerState.CLOSED
    fail(b)
    assert b.state is BreakerState.OPEN
    assert b.openings == 1
    assert b.admit() is None
    assert b.retry_in() == 5.0


def test_after_the_cooldown_one_call_probes_and_its_answer_closes_it() -> None:
    clock = Clock()
    b = breaker(clock)
    fail(b, 3)
    clock.now += 4.9
    assert b.admit() is None
    clock.now += 0.1
    assert b.state is BreakerState.HALF_OPEN
    probe = b.admit()
    assert probe == Admission(probe=True)
    assert b.admit() is None  # one probe at a time
    b.succeeded(probe)
    assert b.state is BreakerState.CLOSED
    assert b.admit() == Admission(probe=False)


def test_a_probe_without_answer_opens_it_for_another_cooldown() -> None:
    clock = Clock()
    b, probe = cooled_down_probe(clock)
    clock.now += 1
    b.failed(probe, NO_ANSWER)
    assert b.state is BreakerState.OPEN
    assert b.openings == 2
    assert b.retry_in() == 5.0
    clock.now += 5
    assert b.admit() == Admission(probe=True)


def test_a_cancelled_probe_leaves_no_verdict_and_the_next_call_probes() -> None:
    clock = Clock()
    b, probe = cooled_down_probe(clock)
    b.abandoned(probe)
    assert b.state is BreakerState.HALF_OPEN  # its cool-down is still over
    assert b.admit() == Admission(probe=True)


def test_a_health_check_passes_an_open_breaker_and_its_answer_closes_it() -> None:
    clock = Clock()
    b = breaker(clock)
    fail(b, 3)
    check = b.admit(health_check=True)
    assert check == Admission(probe=False)
    b.failed(check, NO_ANSWER)  # no news while open: the cool-down is unchanged
    assert b.state is BreakerState.OPEN
    assert b.openings == 1
    check = b.admit(health_check=True)
    assert check is not None
    b.succeeded(check)
    assert b.state is BreakerState.CLOSED


def test_late_failures_of_calls_made_before_it_opened_do_not_extend_the_cooldown() -> None:
    clock = Clock()
    b = breaker(clock)
    early = [b.admit() for _ in range(5)]
    for admission in early[:3]:
        assert admission is not None
        b.failed(admission, NO_ANSWER)
    clock.now += 4
    for admission in early[3:]:
        assert admission is not None
        b.failed(admission, NO_ANSWER)
    clock.now += 1
    assert b.state is BreakerState.HALF_OPEN
    assert b.openings == 1


@pytest.mark.parametrize(("threshold", "cooldown"), [(0, 1.0), (1, 0.0)])
def test_settings_out_of_range_are_refused(threshold: int, cooldown: float) -> None:
    with pytest.raises(ValueError, match="threshold >= 1, cooldown_seconds > 0"):
        CircuitBreaker("redis", threshold=threshold, cooldown_seconds=cooldown)


def test_calls_timing_out_while_another_was_answered_lately_do_not_open_it() -> None:
    clock = Clock()
    b = CircuitBreaker("redis", threshold=3, cooldown_seconds=5.0, min_silence_seconds=2.0, clock=clock)
    answered = b.admit()
    assert answered is not None
    b.succeeded(answered)
    clock.now += 1.0
    fail(b, 10)  # an overloaded process: its short deadlines run out, the backend answered a second ago
    assert b.state is BreakerState.CLOSED
    clock.now += 1.0
    fail(b)  # two seconds without any answer: the backend is gone
    assert b.state is BreakerState.OPEN
    assert b.openings == 1

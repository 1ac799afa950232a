"""`CircuitBreaker`: whether calls to a backend should be made at all, from how the last ones ended.

Closed (calls go through) until `threshold` calls in a row failed for want of an answer (a timeout, a dropped or
refused connection) and no call has had an answer for `min_silence_seconds`; then open: calls fail at once, without
waiting on a backend that does not answer, for `cooldown_seconds`. After that it is half-open: the next call goes
through as the probe while the others still fail at once; the probe's success closes it, its failure opens it for
another cool-down. A call that ends otherwise (cancelled, or refused by the breaker's owner before it reached the
backend) leaves no verdict: a probe ending so lets the next call probe. Any answer, also an error answer, is a
success.

A health check (`admit(health_check=True)`: `/readyz`) goes through whatever the state and its verdict counts
like any other's, so a probe of the readiness endpoint closes the breaker as soon as the backend answers again.

The silence is what tells a backend that stopped answering from a process too busy to read its answers in time:
under a CPU overload (a hostile tenant's flood, a burst of clients) the short deadlines of the calls that fail
open run out on the event loop's own delay, several in a row, while other calls keep getting answers; opening
then would turn the overload into every Redis call failing for a cool-down.

Single event loop: the methods never await, so they need no lock.
"""

from __future__ import annotations

import enum
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

logger = logging.getLogger("hindsight.breaker")


class BreakerState(enum.IntEnum):
    """The state, as the `hindsight_redis_breaker_state` gauge shows it."""

    CLOSED = 0
    HALF_OPEN = 1
    OPEN = 2


@dataclass(frozen=True, slots=True)
class Admission:
    """A call the breaker let through; `probe`: the one call of a half-open breaker."""

    probe: bool


class CircuitBreaker:
    def __init__(
        self,
        name: str,
        *,
        threshold: int,
        cooldown_seconds: float,
        min_silence_seconds: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if threshold < 1 or not cooldown_seconds > 0 or min_silence_seconds < 0:
            raise ValueError("a circuit breaker needs threshold >= 1, cooldown_seconds > 0, min_silence_seconds >= 0")
        self.name = name
        self.threshold = threshold
        self.cooldown_seconds = cooldown_seconds
        self.min_silence_seconds = min_silence_seconds
        self._clock = clock
        self._last_answer = clock()  # when a call last got an answer (or the breaker was made)
        self._state = BreakerState.CLOSED
        self._failures = 0  # in a row, while closed
        self._opened_at = 0.0
        self._probing = False
        self.openings = 0  # times it opened (the `hindsight_redis_breaker_openings_total` counter)

    @property
    def state(self) -> BreakerState:
        """The state now: an open breaker whose cool-down is over reads half-open (its next call probes)."""
        if self._state is BreakerState.OPEN and self._clock() >= self._opened_at + self.cooldown_seconds:
            return BreakerState.HALF_OPEN
        return self._state

    def retry_in(self) -> float:
        """Seconds until an open breaker lets a probe through (0 when it would now)."""
        if self._state is not BreakerState.OPEN:
            return 0.0
        return max(0.0, self._opened_at + self.cooldown_seconds - self._clock())

    def admit(self, *, health_check: bool = False) -> Admission | None:
        """An admission for a call to make now, or None: fail it at once."""
        if health_check or self._state is BreakerState.CLOSED:
            return Admission(probe=False)
        if self._probing or self.state is not BreakerState.HALF_OPEN:
            return None
        self._probing = True
        self._state = BreakerState.HALF_OPEN
        return Admission(probe=True)

    def succeeded(self, admission: Admission) -> None:
        """The call got an answer: the backend is there."""
        self._end(admission)
        self._failures = 0
        self._last_answer = self._clock()
        if self._state is not BreakerState.CLOSED:
            self._state = BreakerState.CLOSED
            logger.warning("%s answers again: circuit breaker closed", self.name)

    def failed(self, admission: Admission, error: BaseException) -> None:
        """The call got no answer (a timeout, a dropped or refused connection)."""
        self._end(admission)
        if self._state is BreakerState.CLOSED:
            self._failures += 1
            silence = self._clock() - self._last_answer
            if self._failures >= self.threshold and silence >= self.min_silence_seconds:
                self._open(f"{self._failures} calls in a row got no answer, none for {silence:.1f} s", error)
        elif admission.probe:
            self._open("the probe got no answer", error)
        # else: a call let through before it opened, or a health check while open: nothing new

    def abandoned(self, admission: Admission) -> None:
        """The call ended without a verdict (cancelled, or refused before it reached the backend)."""
        self._end(admission)
        if admission.probe and self._state is BreakerState.HALF_OPEN:
            self._state = BreakerState.OPEN  # with its old opening time: the next call probes

    def _end(self, admission: Admission) -> None:
        if admission.probe:
            self._probing = False

    def _open(self, why: str, error: BaseException) -> None:
        self._state = BreakerState.OPEN
        self._opened_at = self._clock()
        self._failures = 0
        self.openings += 1
        logger.warning(
            "%s circuit breaker open: %s (last: %s: %s); calls fail at once for %g s, then one probes",
            self.name,
            why,
            type(error).__name__,
            error,
            self.cooldown_seconds,
        )

"""`CpuBudget`: how much CPU time one request's text analysis may still spend, checked between steps and inside
the loops over matches of the text rules (`memory.pipeline.analysis` runs the steps under one budget).

It counts the calling thread's CPU time (`time.thread_time`), so time the thread spends waiting (for the GIL,
for another tenant's request on the other core) is not charged to the text. `check()` raises `BudgetExhausted`
once the budget is spent; a step that sees it is abandoned as a whole (never half-applied) and the caller
records which step was skipped and why.
"""

from __future__ import annotations

import time
from collections.abc import Callable


class BudgetExhausted(Exception):
    """The request's CPU budget ran out inside a step; the step is abandoned."""


class CpuBudget:
    """`seconds` of thread CPU time from now (`clock` is `time.thread_time`; tests may pass another clock).
    It counts the thread that creates it: create it in the worker thread that does the work (the analysis
    functions and `conflict.decide(budget_seconds=...)` do), never on the event loop to check elsewhere."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.thread_time) -> None:
        self.seconds = seconds
        self._clock = clock
        self._start = clock()

    def spent(self) -> float:
        """CPU seconds spent since the budget started."""
        return self._clock() - self._start

    def exhausted(self) -> bool:
        return self.spent() >= self.seconds

    def check(self) -> None:
        """Raise `BudgetExhausted` when the budget is spent."""
        if self.exhausted():
            raise BudgetExhausted(f"CPU budget of {self.seconds * 1000:g} ms spent")


def check(budget: CpuBudget | None) -> None:
    """`budget.check()`, for the steps that run with or without a budget."""
    if budget is not None:
        budget.check()

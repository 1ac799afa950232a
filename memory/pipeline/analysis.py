"""The text analysis of one request under a CPU budget: what a write reads from its content before embedding
(density verdict, time-bound expiry, rule importance, attribute claims) and what a recall reads from its query
(keyword vector, cues), each as one pure synchronous function for a worker thread (`analysed_query`: a short
query on the caller's thread, where a worker-thread hop would cost more than the analysis).

Every rule is linear in the text (see the step modules), but hostile text at the size limit still costs tens of
milliseconds per step, so the steps run under one budget of thread CPU time (`memory.text.budget`), checked
between steps and inside the loops over matches. A step the budget does not reach, or that runs out midway, is
skipped as a whole and recorded with why; the request goes on without it (a write is still stored):

    write step    skipped means
    density       the memory is kept (the filter must never drop a fact)
    expiry        no expiry from the text (the memory stays until forgotten or evicted)
    importance    the default importance (0.5, `memory.pipeline.rating.DEFAULT_IMPORTANCE`)
    claims        no attributes: conflicts are found by similarity and change markers only

    query step    skipped means
    keywords      a dense-only recall
    cues          neutral cues (no speaker, not a "when" question)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from memory import cpu_meter
from memory.embedders.sparse import Bm25Encoder
from memory.pipeline import claims, density, expiry, importance, injection
from memory.ports import SparseVector
from memory.recall.cues import QueryCues, query_cues
from memory.text.budget import BudgetExhausted, CpuBudget
from memory.text.words import normalize

# The default budget of a request's text analysis, in seconds of thread CPU time. Normal text needs well under a
# millisecond per step; hostile text at the 8,000-character limit up to ~20 ms for the costliest step.
DEFAULT_BUDGET_SECONDS = 0.05
# A query up to this long is analysed on the calling thread: about 30 µs of CPU for an ordinary question of 80
# characters, less than the ~45 µs a worker-thread hop costs, and at most ~1 ms for hostile text of this length.
INLINE_QUERY_CHARS = 200

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class SkippedStep:
    step: str  # "untrusted", "density", "expiry", "importance", "claims"; "keywords", "cues"
    reason: str  # "cpu budget of 50 ms spent before the step" / "... during the step"


@dataclass(frozen=True, slots=True)
class WriteAnalysis:
    """What the write pipeline read from a content. A field is None (claims: empty) when its step was not asked
    for or was skipped; `skipped` says which were skipped and why; `cpu_ms` is the thread CPU time it took."""

    density: density.DensityVerdict | None
    expiry: expiry.TimeBound | None
    importance: importance.ImportanceVerdict | None
    claims: tuple[claims.Claim, ...]
    skipped: tuple[SkippedStep, ...]
    cpu_ms: float
    untrusted: injection.Untrusted | None = None  # the text reads as instructions to its reader (`injection`)

    def notes(self) -> dict[str, Any] | None:
        """What to record under `metadata["_pipeline"]["analysis"]` (None when nothing was skipped)."""
        if not self.skipped:
            return None
        return {"skipped": {s.step: s.reason for s in self.skipped}, "cpu_ms": round(self.cpu_ms, 1)}


@dataclass(frozen=True, slots=True)
class QueryAnalysis:
    """What a recall reads from its query: the keyword vector (None: not asked for, or skipped) and the cues
    (neutral when skipped)."""

    keywords: SparseVector | None
    cues: QueryCues
    skipped: tuple[SkippedStep, ...]
    cpu_ms: float


class _Steps:
    """Runs steps under one budget, recording the ones it skips."""

    def __init__(self, budget: CpuBudget) -> None:
        self.budget = budget
        self.skipped: list[SkippedStep] = []

    def _why(self, when: str) -> str:
        return f"cpu budget of {self.budget.seconds * 1000:g} ms spent {when} the step"

    def run(self, step: str, work: Callable[[], T]) -> T | None:
        """`work()`, or None when the budget is spent before or during it."""
        if self.budget.exhausted():
            self.skipped.append(SkippedStep(step, self._why("before")))
            return None
        try:
            return work()
        except BudgetExhausted:
            self.skipped.append(SkippedStep(step, self._why("during")))
            return None
        except (ArithmeticError, ValueError) as exc:  # a day out of range ("tomorrow" said on 9999-12-31)
            self.skipped.append(SkippedStep(step, f"{type(exc).__name__}: {exc}"[:120]))
            return None


def analyse_write(
    content: str,
    reference: datetime,
    *,
    with_density: bool = True,
    with_expiry: bool = True,
    with_importance: bool = True,
    with_claims: bool = True,
    speaker: str | None = None,
    budget_seconds: float = DEFAULT_BUDGET_SECONDS,
    budget: CpuBudget | None = None,
) -> WriteAnalysis:
    """The write pipeline's text analysis of `content` said at `reference` (timezone-aware: the turn's
    `occurred_at`, else now), within `budget_seconds` of this thread's CPU time (or a `budget` already started).

    Steps run in this order: whether the text reads as instructions to its reader (`injection`, always), then
    each only when asked for (`with_*`, as the pipeline settings and the request decide: no expiry from the text
    when a ttl is given, no density filter for forced or imported writes, no rule importance when the caller gives
    one): density, expiry, importance (told whether the text named a
    coming day), claims (`speaker`: who said a content that has no "Name: " prefix, the write's `metadata.speaker`
    as `memory.recall.cues.speaker_of` reads it; first person is theirs). Pure and synchronous, for a worker thread;
    never raises for any text: a step the budget does not allow is skipped and listed in `skipped` (see the
    module docstring for what a skip means)."""
    started = time.thread_time()
    steps = _Steps(budget or CpuBudget(budget_seconds))
    b = steps.budget
    # first: a few linear regular expressions, never to be crowded out by the steps a hostile text makes costly
    untrusted = steps.run("untrusted", lambda: injection.instruction_like(content))
    verdict = steps.run("density", lambda: density.assess(content, budget=b)) if with_density else None
    bound = steps.run("expiry", lambda: expiry.find_expiry(content, reference, budget=b)) if with_expiry else None
    rated = None
    if with_importance:
        rated = steps.run("importance", lambda: importance.rate(content, time_bound=bound is not None, budget=b))
    stated = None
    if with_claims:
        stated = steps.run("claims", lambda: tuple(claims.extract(content, budget=b, speaker=speaker)))
    return WriteAnalysis(
        density=verdict,
        expiry=bound,
        importance=rated,
        claims=stated or (),
        skipped=tuple(steps.skipped),
        cpu_ms=(time.thread_time() - started) * 1000,
        untrusted=untrusted,
    )


def analyse_query(
    query: str,
    encoder: Bm25Encoder | None,
    *,
    budget_seconds: float = DEFAULT_BUDGET_SECONDS,
    budget: CpuBudget | None = None,
) -> QueryAnalysis:
    """A recall's text work on `query`: its keyword vector (when `encoder` is given: hybrid recall), then its
    cues, within `budget_seconds` of this thread's CPU time. Pure and synchronous, for a worker thread; never
    raises for any text: a skipped step is listed in `skipped` (keywords: recall dense-only; cues: neutral)."""
    started = time.thread_time()
    steps = _Steps(budget or CpuBudget(budget_seconds))
    keywords = steps.run("keywords", lambda: encoder.query(query)) if encoder is not None else None
    cues = steps.run("cues", lambda: query_cues(query))
    if cues is None:
        text = normalize(query)
        cues = QueryCues(text, frozenset(), asks_when=False)
    return QueryAnalysis(keywords, cues, tuple(steps.skipped), (time.thread_time() - started) * 1000)


async def analysed_query(query: str, encoder: Bm25Encoder | None) -> QueryAnalysis:
    """`analyse_query` where it costs least: a short query inline (`INLINE_QUERY_CHARS`), a longer one in a
    worker thread charged to the calling request (`memory.cpu_meter`)."""
    return await cpu_meter.run_sync(analyse_query, query, encoder, inline=len(query) <= INLINE_QUERY_CHARS)

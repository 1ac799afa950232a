"""The scoring of a tenant's own recall cases (`gateway.evaluation.cases`): where each expected memory ranked
among the hits of the case's recall (`explain` on, so each hit carries its score parts), recall@k, the
reciprocal rank and hit@1 per case and over the file, and for a miss why: ranked below the cut-off (found by a
deeper recall of the same query), hidden (superseded, expired, forgotten: `list_memories(include_deleted)`),
never stored (the write was skipped as chit-chat) or not in the namespace at all.

An `expected` string names a memory by id or by exact content; a write answer names the memory its content
became, so a memory a later near-duplicate rewrote in place is still the one the case expects.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gateway.evaluation.cases import Case

DEEP = 50  # how far a missed memory is looked for (a second recall of the same query, filters and namespace)


@dataclass(frozen=True, slots=True)
class Hit:
    """One recalled memory with its `explain` score parts."""

    id: str
    content: str
    score: float
    parts: dict[str, Any]
    via: str | None = None  # the superseded memory the query matched; this one replaced it

    @classmethod
    def of(cls, body: dict[str, Any]) -> Hit:
        return cls(
            str(body["id"]), str(body["content"]), float(body["score"]), body.get("scores") or {}, body.get("via")
        )


@dataclass(frozen=True, slots=True)
class Written:
    """What one write_memory answered: created, updated (a near-duplicate changed in place) or skipped."""

    content: str
    status: str
    id: str | None  # None: nothing stored (chit-chat)
    reason: str | None = None
    superseded: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Listed:
    """A memory of the namespace as list_memories(include_deleted) shows it, and why it is hidden (if it is)."""

    id: str
    content: str
    hidden: str | None  # superseded, expired, forgotten (gateway.evaluation.results.hidden_state)
    superseded_by: str | None = None


@dataclass(frozen=True, slots=True)
class Expectation:
    """Where one expected memory ended: recalled within the cut-off, or why not."""

    expected: str
    state: str  # recalled | ranked_below | not_recalled | superseded | expired | forgotten | skipped | not_stored
    detail: str
    memory_id: str | None = None
    rank: int | None = None  # in the case's hits (1-based)
    deep_rank: int | None = None  # in the deeper recall, for a miss
    deep_hit: Hit | None = None  # its score parts there


@dataclass(frozen=True, slots=True)
class CaseResult:
    case: Case
    namespace: str
    top_k: int
    hits: tuple[Hit, ...]
    expectations: tuple[Expectation, ...]
    writes: tuple[Written, ...] = ()
    deep: tuple[Hit, ...] = ()  # for a miss: the deeper recall's hits (the first of them are `hits`)

    @property
    def recall(self) -> float:
        return mean([1.0 if e.state == "recalled" else 0.0 for e in self.expectations])

    @property
    def reciprocal_rank(self) -> float:
        ranks = [e.rank for e in self.expectations if e.rank is not None]
        return 1.0 / min(ranks) if ranks else 0.0

    @property
    def hit_at_1(self) -> bool:
        return any(e.rank == 1 for e in self.expectations)

    @property
    def passed(self) -> bool:
        return all(e.state == "recalled" for e in self.expectations)


@dataclass(frozen=True, slots=True)
class Summary:
    cases: int
    passed: int
    recall: float  # recall@k: the share of expected memories within each case's cut-off, averaged over cases
    mrr: float
    hit_at_1: float

    @classmethod
    def of(cls, results: Sequence[CaseResult]) -> Summary:
        return cls(
            len(results),
            sum(r.passed for r in results),
            mean([r.recall for r in results]),
            mean([r.reciprocal_rank for r in results]),
            mean([1.0 if r.hit_at_1 else 0.0 for r in results]),
        )

    @property
    def key(self) -> tuple[float, float, float]:
        """What `best` ranks configurations by: recall@k, then MRR, then hit@1."""
        return (round(self.recall, 9), round(self.mrr, 9), round(self.hit_at_1, 9))


def _same(a: str, b: str) -> bool:
    return a.strip() == b.strip()


def matching_ids(expected: str, writes: Sequence[Written], seen: Sequence[Hit | Listed]) -> set[str]:
    """The ids `expected` names: itself (an id), the memory its content was written as (a write answer names it
    even when a near-duplicate took the new wording in place), and any memory shown with that content."""
    ids = {expected.strip()}
    ids |= {w.id for w in writes if w.id is not None and _same(w.content, expected)}
    return ids | {m.id for m in seen if _same(m.content, expected)}


def rank_of(ids: set[str], hits: Sequence[Hit]) -> int | None:
    return next((i for i, h in enumerate(hits, 1) if h.id in ids), None)


def needs_diagnosis(case: Case, hits: Sequence[Hit], writes: Sequence[Written]) -> bool:
    """Whether some expected memory is not among the hits (then the runner lists the namespace and looks deeper)."""
    return any(rank_of(matching_ids(e, writes, hits), hits) is None for e in case.expected)


def _quote(text: str, width: int = 80) -> str:
    flat = " ".join(text.split())
    return f"«{flat if len(flat) <= width else flat[: width - 1] + '…'}»"


def _missed(
    expected: str, ids: set[str], top_k: int, hits: Sequence[Hit], writes: Sequence[Written], listing: Sequence[Listed],
    deep: Sequence[Hit],
) -> Expectation:  # fmt: skip
    listed = next((m for m in listing if m.id in ids), None)
    if listed is None:
        skipped = next((w for w in writes if w.id is None and _same(w.content, expected)), None)
        if skipped is not None:
            return Expectation(expected, "skipped", f"not stored: the write was skipped ({skipped.reason})")
        return Expectation(expected, "not_stored", "no memory of the namespace has this id or content")
    if listed.hidden == "superseded":
        successor = next((m for m in listing if m.id == listed.superseded_by), None)
        detail = f"superseded by {listed.superseded_by}" + (f" {_quote(successor.content)}" if successor else "")
        answered = rank_of({str(listed.superseded_by)}, hits)
        if answered is not None:
            detail += f"; recall answered with that memory at rank {answered}"
        return Expectation(expected, "superseded", detail, listed.id)
    if listed.hidden is not None:
        return Expectation(expected, listed.hidden, f"{listed.hidden}: hidden from recall", listed.id)
    deep_rank = rank_of({listed.id}, deep)
    if deep_rank is None:
        detail = f"stored and live, but not among the first {DEEP} hits of the query (with the case's filters)"
        return Expectation(expected, "not_recalled", detail, listed.id)
    hit = deep[deep_rank - 1]
    detail = f"stored and live, ranked {deep_rank} (below the top {top_k}) with score {hit.score:.3f}"
    return Expectation(expected, "ranked_below", detail, listed.id, deep_rank=deep_rank, deep_hit=hit)


def score_case(
    case: Case,
    namespace: str,
    top_k: int,
    hits: Sequence[Hit],
    writes: Sequence[Written] = (),
    listing: Sequence[Listed] = (),
    deep: Sequence[Hit] = (),
) -> CaseResult:
    """Where each expected memory ranked among `hits` (the first `top_k` of the case's recall); for a miss, why,
    from the namespace's `listing` (hidden states) and a `deep`er recall of the same query."""
    found: list[Expectation] = []
    for expected in case.expected:
        ids = matching_ids(expected, writes, [*hits, *listing])
        rank = rank_of(ids, hits)
        if rank is not None and rank <= top_k:
            hit = hits[rank - 1]
            merged = (
                ""
                if _same(hit.content, expected) or hit.id == expected.strip()
                else f" (now reads {_quote(hit.content)})"
            )
            found.append(Expectation(expected, "recalled", f"rank {rank}{merged}", hit.id, rank=rank))
        else:
            found.append(_missed(expected, ids, top_k, hits, writes, listing, deep))
    return CaseResult(case, namespace, top_k, tuple(hits[:top_k]), tuple(found), tuple(writes), tuple(deep))


def mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values) if values else 0.0

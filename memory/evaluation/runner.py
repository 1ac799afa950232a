"""Runs LoCoMo through the engine: each conversation into its own namespace through the real write path (one
memory per turn, written at the turn's time), each question through the real recall path (asked a day after
the conversation), scored against the evidence turns beside plain BM25 and dense-only baselines over the same
turns, in the same run."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from memory.clock import ManualClock
from memory.evaluation.locomo import Conversation
from memory.evaluation.metrics import Bm25Baseline, DenseBaseline, Tally
from memory.models import WriteStatus
from memory.requests import RecallRequest, WriteRequest
from memory.scope import NamespaceScope
from memory.scoring import ScoringWeights
from memory.service import MemoryService

SYSTEMS = ("hindsight", "bm25", "dense")
ASK_DELAY = timedelta(days=1)  # questions are asked a day after the conversation's last turn
Progress = Callable[[int, int], None]


@dataclass
class SystemScores:
    overall: Tally = field(default_factory=Tally)
    by_category: dict[int, Tally] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)

    def add(self, category: int, ranked: Sequence[str], relevant: Sequence[str]) -> None:
        self.overall.add(ranked, relevant)
        self.by_category.setdefault(category, Tally()).add(ranked, relevant)

    @property
    def median_ms(self) -> float:
        return statistics.median(self.latencies) * 1000 if self.latencies else 0.0


@dataclass
class EvalReport:
    systems: dict[str, SystemScores]
    conversations: int = 0
    questions: int = 0
    turns: int = 0
    turns_skipped: int = 0
    evidence_total: int = 0
    evidence_dropped: int = 0
    evidence_expired: int = 0  # evidence turns whose time-bound expiry passed before the question was asked
    unresolved_evidence: int = 0
    grid: list[tuple[ScoringWeights, float, float]] = field(default_factory=list)  # weights, tuned, held-out
    defaults: ScoringWeights | None = None  # the weights the main run used


@dataclass
class Ingested:
    conversation: Conversation
    namespace: str
    dia_ids_of: dict[str, list[str]]  # memory id -> dialogue ids it stands for
    dropped: set[str]
    expires: dict[str, datetime] = field(default_factory=dict)  # dialogue id -> expiry of its memory, if any


def namespace_for(conversation: Conversation) -> str:
    return "locomo-" + "".join(c if c.isalnum() else "-" for c in conversation.sample_id.lower())


async def ingest(service: MemoryService, scope: NamespaceScope, clock: ManualClock, c: Conversation) -> Ingested:
    namespace = namespace_for(c)
    dia_ids_of: dict[str, list[str]] = {}
    dropped: set[str] = set()
    expires: dict[str, datetime] = {}
    for turn in c.turns:
        clock.set(turn.occurred_at)
        outcome = await service.write(
            scope,
            WriteRequest(
                content=turn.document,
                subject="locomo-eval",
                namespace=namespace,
                occurred_at=turn.occurred_at,
                session_id=f"session-{turn.session}",
                metadata={"dia_id": turn.dia_id},
                tool="eval",
            ),
        )
        stored = getattr(outcome, "stored", True)
        if outcome.status is WriteStatus.SKIPPED and not stored:
            dropped.add(turn.dia_id)
        else:
            dia_ids_of.setdefault(outcome.memory.id, []).append(turn.dia_id)
            if outcome.memory.expires_at is not None:
                expires[turn.dia_id] = outcome.memory.expires_at
    return Ingested(c, namespace, dia_ids_of, dropped, expires)


async def ranked_dia_ids(
    service: MemoryService, scope: NamespaceScope, ingested: Ingested, question: str, top_k: int
) -> tuple[list[str], float]:
    started = time.perf_counter()
    hits = await service.recall(scope, RecallRequest(query=question, namespaces=[ingested.namespace], top_k=top_k))
    elapsed = time.perf_counter() - started
    # the recall's access-count bumps are applied before the next question (off the clock), so every run ranks
    # with the same counts: in the server they land a moment later, whenever the background flush runs
    await service.drain()
    ranked: list[str] = []
    for hit in hits:
        ranked += ingested.dia_ids_of.get(hit.memory.id, [])
    return list(dict.fromkeys(ranked)), elapsed


async def evaluate(
    service: MemoryService,
    scope: NamespaceScope,
    clock: ManualClock,
    conversations: Sequence[Conversation],
    *,
    top_k: int = 10,
    grid: Sequence[ScoringWeights] = (),
    progress: Progress | None = None,
) -> EvalReport:
    report = EvalReport({name: SystemScores() for name in SYSTEMS}, defaults=service.weights)
    total = sum(len(c.turns) + len(c.questions) for c in conversations)
    done = 0
    everything: list[Ingested] = []
    for c in conversations:
        ingested = await ingest(service, scope, clock, c)
        everything.append(ingested)
        done += len(c.turns)
        if progress:
            progress(done, total)
        report.conversations += 1
        report.turns += len(c.turns)
        report.turns_skipped += len(ingested.dropped)
        report.unresolved_evidence += c.unresolved_evidence
        ids = [t.dia_id for t in c.turns]
        documents = [t.document for t in c.turns]
        bm25 = Bm25Baseline(ids, documents)
        dense = DenseBaseline(ids, await service.embedder.embed_documents(documents))
        clock.set(c.turns[-1].occurred_at + ASK_DELAY)
        for q in c.questions:
            report.questions += 1
            report.evidence_total += len(q.evidence)
            report.evidence_dropped += sum(1 for e in q.evidence if e in ingested.dropped)
            asked = clock.now()
            report.evidence_expired += sum(
                1 for e in q.evidence if e in ingested.expires and ingested.expires[e] <= asked
            )
            ranked, elapsed = await ranked_dia_ids(service, scope, ingested, q.question, top_k)
            report.systems["hindsight"].add(q.category, ranked, q.evidence)
            report.systems["hindsight"].latencies.append(elapsed)
            started = time.perf_counter()
            report.systems["bm25"].add(q.category, bm25.rank(q.question, top_k), q.evidence)
            report.systems["bm25"].latencies.append(time.perf_counter() - started)
            started = time.perf_counter()
            query_vector = await service.embedder.embed_query(q.question)
            report.systems["dense"].add(q.category, dense.rank(query_vector, top_k), q.evidence)
            report.systems["dense"].latencies.append(time.perf_counter() - started)
            done += 1
            if progress:
                progress(done, total)
    if grid:
        report.grid = await grid_search(service, scope, clock, everything, grid, top_k)
    return report


async def _recall_at_10(
    service: MemoryService, scope: NamespaceScope, clock: ManualClock, part: Sequence[Ingested], top_k: int
) -> float:
    tally = Tally()
    for ingested in part:
        clock.set(ingested.conversation.turns[-1].occurred_at + ASK_DELAY)
        for q in ingested.conversation.questions:
            ranked, _ = await ranked_dia_ids(service, scope, ingested, q.question, top_k)
            tally.add(ranked, q.evidence)
    return tally.means()["recall@10"]


async def grid_search(
    service: MemoryService,
    scope: NamespaceScope,
    clock: ManualClock,
    ingested: Sequence[Ingested],
    grid: Sequence[ScoringWeights],
    top_k: int,
) -> list[tuple[ScoringWeights, float, float]]:
    """Cross-validated weight search: tune recall@10 on the first half of the conversations, report each
    setting on the held-out second half too, so the chosen weights are judged on questions they never saw."""
    half = max(1, len(ingested) // 2)
    tune, held_out = ingested[:half], ingested[half:] or ingested[:half]
    original = service.weights
    results = []
    try:
        for weights in grid:
            service.weights = weights
            tuned = await _recall_at_10(service, scope, clock, tune, top_k)
            held = await _recall_at_10(service, scope, clock, held_out, top_k)
            results.append((weights, tuned, held))
    finally:
        service.weights = original
    return sorted(results, key=lambda r: r[1], reverse=True)


def default_grid(base: ScoringWeights) -> list[ScoringWeights]:
    """Two grids around `base`: the score weights (similarity, recency, importance) and the text cues (speaker,
    question, when), each varied with the rest left at `base`."""
    grid = []
    for similarity in (0.5, 0.7, 0.9):
        for recency in (0.0, 0.1, 0.2):
            for importance in (0.0, 0.1, 0.2):
                grid.append(
                    replace(base, similarity=similarity, recency=recency, importance=importance, access_frequency=0.05)
                )
    for speaker in (0.0, 0.2, 0.4, 0.6):
        for question in (0.0, 0.15, 0.3):
            for when in (0.0, 0.2):
                grid.append(replace(base, speaker=speaker, question=question, when=when))
    return list(dict.fromkeys(grid))

"""What an evaluation run measures, whichever path drove it (in process or over MCP): per-system scores, the
hidden-state tally of the ingested turns, and the in-run baselines scored on the same turn texts."""

from __future__ import annotations

import statistics
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from gateway.evaluation.locomo import Conversation, Question
from gateway.evaluation.metrics import Bm25Baseline, DenseBaseline, Tally
from memory.ports import Embedder
from memory.recall.scoring import ScoringWeights

SYSTEMS = ("hindsight", "bm25", "dense")
# Why a turn's memory is not what recall can answer with, in the order a turn is classified
HIDDEN_STATES = ("skipped", "merged", "superseded", "expired", "forgotten")


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
    """One run of one turn format: scores per system, and how many turns (and evidence turns) were hidden by
    each state when the questions were asked."""

    systems: dict[str, SystemScores]
    format: str = "plain"
    conversations: int = 0
    questions: int = 0
    turns: int = 0
    evidence_total: int = 0
    unresolved_evidence: int = 0
    turns_hidden: Counter[str] = field(default_factory=Counter)  # state -> turns
    evidence_hidden: Counter[str] = field(default_factory=Counter)  # state -> evidence turns (once per question)
    wall_seconds: float = 0.0
    grid: list[tuple[ScoringWeights, float, float]] = field(default_factory=list)  # weights, tuned, held-out
    defaults: ScoringWeights | None = None  # the weights the main run used

    @property
    def turns_skipped(self) -> int:
        return self.turns_hidden["skipped"]

    @property
    def evidence_expired(self) -> int:
        return self.evidence_hidden["expired"]


def new_report(fmt: str, defaults: ScoringWeights | None = None) -> EvalReport:
    return EvalReport({name: SystemScores() for name in SYSTEMS}, format=fmt, defaults=defaults)


def hidden_state(
    *, deleted_at: datetime | None, superseded_by: str | None, expires_at: datetime | None, now: datetime
) -> str | None:
    """Why a stored memory is hidden from recall at `now` (None: it is live)."""
    if superseded_by is not None:
        return "superseded"
    if expires_at is not None and expires_at <= now:
        return "expired"  # by the recall filter, or soft-deleted for it by maintenance
    if deleted_at is not None:
        return "forgotten"
    return None


@dataclass
class TurnStates:
    """Where each turn of a conversation ended up: the memory it resolved to and, if it is hidden, why."""

    memory_of: dict[str, str] = field(default_factory=dict)  # dialogue id -> memory id
    state_of: dict[str, str] = field(default_factory=dict)  # dialogue id -> hidden state
    _turns_of: dict[str, list[str]] = field(default_factory=dict)  # memory id -> dialogue ids

    def skipped(self, dia_id: str) -> None:
        """Nothing was stored for the turn (the density filter)."""
        self.state_of[dia_id] = "skipped"

    def stored(self, dia_id: str, memory_id: str, *, updated: bool = False) -> None:
        """The turn resolved to `memory_id`: created, an exact repeat of it, or (`updated`) a near-duplicate
        that replaced its text in place, so the earlier turns of that memory are no longer stored as said."""
        earlier = self._turns_of.setdefault(memory_id, [])
        if updated:
            for other in earlier:
                self.state_of.setdefault(other, "merged")
        earlier.append(dia_id)
        self.memory_of[dia_id] = memory_id

    def classify(self, states: dict[str, str | None]) -> list[str]:
        """Record the hidden state of each memory (memory id -> state) for the turns that resolved to it, and
        answer the memory ids the listing lacks (a listing that hides some state would undercount silently)."""
        missing = [memory_id for memory_id in self._turns_of if memory_id not in states]
        for dia_id, memory_id in self.memory_of.items():
            state = states.get(memory_id)
            if state is not None and dia_id not in self.state_of:
                self.state_of[dia_id] = state
        return missing

    def dia_ids_of(self) -> dict[str, list[str]]:
        """Memory id -> the dialogue ids it stands for (a recall hit counts for each)."""
        return self._turns_of


def ranked_dia_ids(memory_ids: Sequence[str], dia_ids_of: dict[str, list[str]]) -> list[str]:
    ranked: list[str] = []
    for memory_id in memory_ids:
        ranked += dia_ids_of.get(memory_id, [])
    return list(dict.fromkeys(ranked))


class Baselines:
    """Plain BM25 and dense-only over the very texts one format stored, scored into a report."""

    def __init__(self, embedder: Embedder, ids: Sequence[str], documents: Sequence[str]) -> None:
        self.embedder, self.ids, self.documents = embedder, list(ids), list(documents)
        self.bm25 = Bm25Baseline(ids, documents)
        self.dense: DenseBaseline | None = None

    async def score(self, report: EvalReport, question: Question, top_k: int) -> None:
        if self.dense is None:
            self.dense = DenseBaseline(self.ids, await self.embedder.embed_documents(self.documents))
        started = time.perf_counter()
        report.systems["bm25"].add(question.category, self.bm25.rank(question.question, top_k), question.evidence)
        report.systems["bm25"].latencies.append(time.perf_counter() - started)
        started = time.perf_counter()
        vector = await self.embedder.embed_query(question.question)
        report.systems["dense"].add(question.category, self.dense.rank(vector, top_k), question.evidence)
        report.systems["dense"].latencies.append(time.perf_counter() - started)


def tally_conversation(report: EvalReport, conversation: Conversation, states: TurnStates) -> None:
    """Count a conversation's turns and its questions' evidence turns by hidden state."""
    report.conversations += 1
    report.turns += len(conversation.turns)
    report.unresolved_evidence += conversation.unresolved_evidence
    report.turns_hidden.update(states.state_of.values())
    for question in conversation.questions:
        report.evidence_total += len(question.evidence)
        report.evidence_hidden.update(states.state_of[e] for e in question.evidence if e in states.state_of)

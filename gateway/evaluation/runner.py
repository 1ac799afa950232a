"""Runs LoCoMo through the engine in process, on a `ManualClock`: each conversation into its own namespace
through the real write path (one memory per turn in a given format, written at the turn's time), each question
through the real recall path (asked a day after the conversation), scored against the evidence turns beside
plain BM25 and dense-only baselines over the same texts. The weight grid needs this runner (it changes the
service's weights between passes); the evaluation of record runs over MCP (`gateway/evaluation/over_mcp.py`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from gateway.evaluation.formats import PLAIN, TurnFormat
from gateway.evaluation.locomo import Conversation
from gateway.evaluation.metrics import Tally
from gateway.evaluation.results import (
    Baselines,
    EvalReport,
    TurnStates,
    hidden_state,
    new_report,
    ranked_dia_ids,
    tally_conversation,
)
from memory.clock import ManualClock
from memory.models import WriteStatus
from memory.recall.scoring import ScoringWeights
from memory.requests import ListRequest, RecallRequest, WriteRequest
from memory.scope import NamespaceScope
from memory.service import MemoryService

ASK_DELAY = timedelta(days=1)  # questions are asked a day after the conversation's last turn
Progress = Callable[[int, int], None]


@dataclass
class Ingested:
    conversation: Conversation
    namespace: str
    states: TurnStates


def namespace_for(conversation: Conversation, prefix: str = "locomo") -> str:
    return prefix + "-" + "".join(c if c.isalnum() else "-" for c in conversation.sample_id.lower())


async def ingest(
    service: MemoryService, scope: NamespaceScope, clock: ManualClock, c: Conversation, fmt: TurnFormat = PLAIN
) -> Ingested:
    namespace = namespace_for(c, f"locomo-{fmt.name}".replace("_", "-"))
    states = TurnStates()
    for turn in c.turns:
        clock.set(turn.occurred_at)
        outcome = await service.write(
            scope,
            WriteRequest(
                content=fmt.text(turn),
                subject="locomo-eval",
                namespace=namespace,
                occurred_at=turn.occurred_at,
                session_id=f"session-{turn.session}",
                metadata={"dia_id": turn.dia_id, "speaker": turn.speaker},
                tool="eval",
            ),
        )
        if outcome.id is None:
            states.skipped(turn.dia_id)
        else:
            states.stored(turn.dia_id, outcome.id, updated=outcome.status is WriteStatus.UPDATED)
    return Ingested(c, namespace, states)


async def classify(service: MemoryService, scope: NamespaceScope, ingested: Ingested, now: datetime) -> None:
    """Each stored turn's state at `now`, from the engine's own listing of every memory of the namespace."""
    states: dict[str, str | None] = {}
    cursor: str | None = None
    while True:
        page = await service.list(
            scope, ListRequest(namespace=ingested.namespace, include_deleted=True, limit=200, cursor=cursor)
        )
        for m in page.memories:
            states[m.id] = hidden_state(
                deleted_at=m.deleted_at, superseded_by=m.superseded_by, expires_at=m.expires_at, now=now
            )
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    missing = ingested.states.classify(states)
    if missing:
        raise RuntimeError(f"the listing of {ingested.namespace} lacks {len(missing)} written memories")


async def recalled(
    service: MemoryService, scope: NamespaceScope, ingested: Ingested, question: str, top_k: int
) -> tuple[list[str], float]:
    started = time.perf_counter()
    hits = await service.recall(scope, RecallRequest(query=question, namespaces=[ingested.namespace], top_k=top_k))
    elapsed = time.perf_counter() - started
    # the recall's access-count bumps are applied before the next question (off the clock), so every run ranks
    # with the same counts: in the server they land a moment later, whenever the background flush runs
    await service.drain()
    return ranked_dia_ids([h.memory.id for h in hits], ingested.states.dia_ids_of()), elapsed


async def evaluate(
    service: MemoryService,
    scope: NamespaceScope,
    clock: ManualClock,
    conversations: Sequence[Conversation],
    *,
    fmt: TurnFormat = PLAIN,
    top_k: int = 10,
    grid: Sequence[ScoringWeights] = (),
    progress: Progress | None = None,
) -> EvalReport:
    started = time.perf_counter()
    report = new_report(fmt.name, service.weights)
    total = sum(len(c.turns) + len(c.questions) for c in conversations)
    done = 0
    everything: list[Ingested] = []
    for c in conversations:
        ingested = await ingest(service, scope, clock, c, fmt)
        everything.append(ingested)
        done += len(c.turns)
        if progress:
            progress(done, total)
        clock.set(c.turns[-1].occurred_at + ASK_DELAY)
        await classify(service, scope, ingested, clock.now())
        tally_conversation(report, c, ingested.states)
        baselines = Baselines(service.embedder, [t.dia_id for t in c.turns], [fmt.text(t) for t in c.turns])
        for q in c.questions:
            report.questions += 1
            ranked, elapsed = await recalled(service, scope, ingested, q.question, top_k)
            report.systems["hindsight"].add(q.category, ranked, q.evidence)
            report.systems["hindsight"].latencies.append(elapsed)
            await baselines.score(report, q, top_k)
            done += 1
            if progress:
                progress(done, total)
    if grid:
        report.grid = await grid_search(service, scope, clock, everything, grid, top_k)
    report.wall_seconds = time.perf_counter() - started
    return report


async def _recall_at_10(
    service: MemoryService, scope: NamespaceScope, clock: ManualClock, part: Sequence[Ingested], top_k: int
) -> float:
    tally = Tally()
    for ingested in part:
        clock.set(ingested.conversation.turns[-1].occurred_at + ASK_DELAY)
        for q in ingested.conversation.questions:
            ranked, _ = await recalled(service, scope, ingested, q.question, top_k)
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

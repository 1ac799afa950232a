"""Under the namespace's write lock (docs/DESIGN.md § "The write path", steps 6-7): the conflict candidates of a draft,
the decision between create, update in place and supersession, and the store of the memory with its copies and links.

Candidates are the live memories of the namespace and kind nearest to what the new memory says alone, and those
stating one of its attributes, read in one `VectorStore.search_many` round trip. Their similarity is computed
here, in double precision from the stored single-precision vectors (`similarity`), not taken from the engine's
score: a batch ranks memories of its own that are not stored yet among the stored ones (`memory.write.batch_commit`),
and both must be measured alike for the batch to decide exactly as single writes do. Ties are ranked by id.
`decide` is pure (it runs in a worker thread under its own CPU budget); `settle` records its notes on the draft;
`store_decided` writes the outcome: one atomic batch carrying the write's intent, then the links
(`memory.write.linking`). `created` is the plain case, a new memory that changes no other, which a batch can defer.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

import numpy as np

from memory.models import Memory, WriteOutcome, WriteStatus
from memory.pipeline import PipelineSettings, conflict
from memory.ports import NearestQuery, RecallFilter, ScoredMemory, UpsertItem, VectorStore
from memory.scope import NamespaceScope
from memory.text.budget import CpuBudget
from memory.write import linking
from memory.write.drafts import Draft

CONFLICT_CPU_SECONDS = 0.05  # thread CPU time the conflict rules may spend on one write's candidates
Candidate = tuple[Memory, float]


def candidate_queries(memory: Memory, vector: Sequence[float], now: datetime, limit: int) -> list[NearestQuery]:
    """The searches for a memory's conflict candidates: the nearest of its namespace and kind, and the nearest
    of those stating one of its attributes (if it states any)."""
    kinds = (memory.kind,)
    queries = [NearestQuery((memory.namespace,), vector, limit, RecallFilter(now=now, kinds=kinds))]
    if memory.attributes:
        same = RecallFilter(now=now, kinds=kinds, attributes=tuple(memory.attributes))
        queries.append(NearestQuery((memory.namespace,), vector, limit, same))
    return queries


def as_query(vector: Sequence[float]) -> np.ndarray:
    """A query vector as `similarity` takes it."""
    return np.asarray(vector, dtype=np.float64)


def stored_form(vector: Sequence[float]) -> np.ndarray:
    """A dense vector as a store keeps it (single precision) and gives it back."""
    return np.asarray(vector, dtype=np.float32).astype(np.float64)


def norm(vector: np.ndarray) -> float:
    return math.sqrt(float(np.dot(vector, vector)))


def similarity(query: np.ndarray, query_norm: float, stored: np.ndarray, stored_norm: float) -> float:
    """The cosine of a stored vector to a query, computed the same way for every pair (0 for a zero vector)."""
    norms = stored_norm * query_norm
    return float(np.dot(stored, query)) / norms if norms > 0 else 0.0


def ranked(candidates: Sequence[Candidate]) -> list[Candidate]:
    """Most similar first, ties by id."""
    return sorted(candidates, key=lambda c: (-c[1], c[0].id))


def rescored(query: np.ndarray, hits: Sequence[ScoredMemory]) -> list[Candidate]:
    query_norm = norm(query)
    scored = []
    for hit in hits:
        stored = stored_form(hit.vector)
        scored.append((hit.memory, similarity(query, query_norm, stored, norm(stored))))
    return ranked(scored)


async def conflict_candidates(
    store: VectorStore, scope: NamespaceScope, memory: Memory, vector: Sequence[float], now: datetime, limit: int
) -> list[Candidate]:
    """Live memories of the namespace and kind nearest to the new one, and those stating its attributes."""
    answers = await store.search_many(scope, candidate_queries(memory, vector, now, limit))
    query = as_query(vector)
    return [candidate for hits in answers for candidate in rescored(query, hits)]


def decide(
    draft: Draft,
    candidates: Sequence[Candidate],
    settings: PipelineSettings,
    cache: conflict.StatementCache | None = None,
) -> conflict.ConflictDecision:
    """The conflict rules' decision for a draft (pure; for a worker thread, under its own CPU budget); a batch
    passes the `cache` of what was read from its candidates for earlier items."""
    memory = draft.memory
    return conflict.decide(
        memory.content,
        memory.created_at,
        candidates,
        settings,
        draft.claims,
        CpuBudget(CONFLICT_CPU_SECONDS),
        subject=memory.source.subject,
        metadata=memory.metadata,
        cache=cache,
    )


def is_plain(draft: Draft, decision: conflict.ConflictDecision) -> bool:
    """Whether the decision stores the draft as a new memory that changes no other (what `created` stores)."""
    update = None if draft.keep_as_is else decision.update
    return update is None and not decision.supersede and decision.superseded_by is None and not draft.share_to


def settle(draft: Draft, decision: conflict.ConflictDecision, now: datetime) -> conflict.ConflictDecision:
    """Record the decision's notes on the draft; an imported or forced memory is never an update in place."""
    memory, notes, reasons = draft.memory, draft.notes, draft.reasons
    if decision.unexamined:  # the CPU budget ran out: those candidates are left as they are
        notes["analysis"] = {**notes.get("analysis", {}), "conflict_unexamined": decision.unexamined}
    if draft.keep_as_is and decision.update is not None:  # imported: always a new memory
        decision = conflict.ConflictDecision(supersede=decision.supersede)
    if decision.superseded_by is not None:  # an old statement arriving late: stored as history
        newer = decision.superseded_by
        memory.superseded_by = newer.memory.id
        notes["superseded"] = {"by": newer.memory.id, "reason": newer.reason, "at": now.isoformat()}
        reasons.insert(0, f"superseded on arrival by {newer.memory.id}: {newer.reason}")
    return decision


def created(draft: Draft) -> tuple[WriteOutcome, UpsertItem]:
    """A plain new memory (`is_plain`, decision settled): its answer and what to upsert. It names no other memory
    but the turn it follows, so storing it is complete in one upsert (no links to apply)."""
    memory = draft.memory
    memory.metadata = linking.with_notes(draft.metadata, draft.notes)
    memory.supersedes = []
    memory.follows = _id(draft.previous)
    outcome = WriteOutcome(WriteStatus.CREATED, memory, superseded=[], reason="; ".join(draft.reasons) or None)
    return outcome, (memory, draft.vector, draft.sparse)


async def store_decided(
    store: VectorStore, scope: NamespaceScope, draft: Draft, decision: conflict.ConflictDecision, now: datetime
) -> WriteOutcome:
    """Store a draft as its settled decision says: one atomic batch (the memory and its copies, carrying the
    intent), then the marks on what it supersedes."""
    memory, notes, reasons = draft.memory, draft.notes, draft.reasons
    targets = decision.supersede
    old_copies = await linking.target_copies(store, scope, targets) if targets else {}
    why = linking.copy_reasons(targets, old_copies)
    if targets:
        notes[linking.INTENT] = linking.intent_entries([t.memory for t in targets], why)
    memory.metadata = linking.with_notes(draft.metadata, notes)

    if decision.update is not None:
        stored, copies = await _updated(store, scope, draft, decision, old_copies, why)
        reasons.insert(0, f"near_duplicate of {stored.id} (similarity {decision.update_similarity:.3f}): updated")
        status = WriteStatus.UPDATED
    else:
        stored = memory
        stored.supersedes = [t.memory.id for t in targets]
        stored.follows = _id(draft.previous)
        copies = [
            linking.new_copy(
                stored,
                ns,
                tags=draft.tags,
                metadata=draft.metadata,
                follows=_id(await _latest(store, scope, ns, stored.session_id)),
                supersedes=old_copies.get(ns, []),
                reasons=why,
            )
            for ns in draft.share_to
        ]
        status = WriteStatus.CREATED
    items = [(m, draft.vector, draft.sparse) for m in (stored, *copies)]
    superseded = await linking.store_with_links(store, scope, items, now)
    if superseded:
        reasons.insert(0, "supersedes " + "; ".join(f"{t.memory.id}: {t.reason}" for t in targets))
    return WriteOutcome(status, stored, superseded=superseded, reason="; ".join(reasons) or None)


async def _updated(
    store: VectorStore,
    scope: NamespaceScope,
    draft: Draft,
    decision: conflict.ConflictDecision,
    old_copies: dict[str, list[Memory]],
    why: dict[str, str],
) -> tuple[Memory, list[Memory]]:
    """A near-duplicate given the new wording in place (same id), its copies brought along, and new copies
    for namespaces it was not shared to yet; nothing private reaches a copy (`memory.write.linking`)."""
    old, new = decision.update, draft.memory
    assert old is not None
    similarity = decision.update_similarity or 0.0
    notes = linking.pipeline_notes(new)
    notes["conflict"] = {
        "action": "updated",
        "similarity": round(similarity, 4),
        "previous_content": old.content[:500],
        "previous_source": {"subject": old.source.subject, "request_id": old.source.request_id},
    }
    explicit = draft.request.importance is not None
    updated = replace(
        old,
        content=new.content,
        content_hash=new.content_hash,
        updated_at=max(old.updated_at, new.created_at),
        importance=new.importance if explicit else max(old.importance, new.importance),
        expires_at=new.expires_at,
        tags=list(dict.fromkeys([*old.tags, *new.tags])),
        metadata=linking.with_notes({**old.metadata, **draft.metadata}, notes),
        source=new.source,
        session_id=new.session_id or old.session_id,
        attributes=new.attributes,
        embedding_model=new.embedding_model,
        supersedes=list(dict.fromkeys([*old.supersedes, *(t.memory.id for t in decision.supersede)])),
    )
    if old.origin_id is not None:  # a copy met in its own namespace: only it changes
        return updated, []
    copies = [
        linking.updated_copy(
            c,
            updated,
            tags=draft.tags,
            metadata=draft.metadata,
            similarity=similarity,
            supersedes=old_copies.get(c.namespace, []),
            reasons=why,
        )
        for c in await store.copies_of(scope, old.id)
    ]
    present = {c.namespace for c in copies}
    for ns in draft.share_to:
        if ns not in present and ns != old.namespace:
            follows = _id(await _latest(store, scope, ns, updated.session_id))
            fresh = replace(updated, metadata=new.metadata, tags=draft.tags)
            copies.append(
                linking.new_copy(
                    fresh,
                    ns,
                    tags=draft.tags,
                    metadata=draft.metadata,
                    follows=follows,
                    supersedes=old_copies.get(ns, []),
                    reasons=why,
                )
            )
    return updated, copies


async def _latest(store: VectorStore, scope: NamespaceScope, namespace: str, session_id: str | None) -> Memory | None:
    """The memory written last in that session and namespace (what a new one follows), if any."""
    if session_id is None:
        return None
    return await store.latest_in_session(scope, namespace, session_id)


def _id(memory: Memory | None) -> str | None:
    return memory.id if memory is not None else None

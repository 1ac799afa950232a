"""Links between memories that a write creates: shared copies, supersession, updates in place, and the repair
that completes them when a write was interrupted.

Privacy: a shared copy carries only what the sharer wrote in this request (content, kind, importance, its own
tags and metadata, the pipeline notes that mention no other memory). It never carries the private memory's
earlier wording, tags or metadata, and every id it names (`supersedes`, `superseded_by`, `follows`) lies in the
copy's own namespace: an old copy in namespace X is superseded only by the new memory's copy in X.

Atomicity: the store writes one batch atomically, not several. So a write first stores the new memory (and its
copies) carrying its intent, `metadata._pipeline.supersedes` (the ids it replaces, each with the reason), then
marks those memories. `complete_links` re-applies whatever of that intent is missing; the write path runs it
whenever it meets a memory it already stored (the retry of an interrupted request finds its own memory by
content hash), so a retry always completes the write instead of answering "duplicate".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from memory.ids import new_memory_id
from memory.models import Memory
from memory.pipeline import PIPELINE_KEY
from memory.pipeline.conflict import Superseded
from memory.ports import SparseVector, VectorStore
from memory.scope import NamespaceScope

# pipeline notes about the memory alone (safe in a copy); every other note mentions another memory
OWN_NOTES = ("expiry", "importance", "density")
INTENT = "supersedes"  # the note recording which memories a write replaces: [{"id": ..., "reason": ...}]


def pipeline_notes(memory: Memory) -> dict[str, Any]:
    notes = memory.metadata.get(PIPELINE_KEY)
    return dict(notes) if isinstance(notes, dict) else {}


def with_notes(metadata: Mapping[str, Any], notes: Mapping[str, Any]) -> dict[str, Any]:
    """`metadata` with its pipeline notes replaced by `notes` (dropped when there are none)."""
    clean = {k: v for k, v in metadata.items() if k != PIPELINE_KEY}
    return {**clean, PIPELINE_KEY: dict(notes)} if notes else clean


def own_notes(notes: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in notes.items() if k in OWN_NOTES}


def intent_of(memory: Memory) -> list[dict[str, str]]:
    """The supersessions a write of `memory` set out to make (its recorded intent)."""
    entries = pipeline_notes(memory).get(INTENT)
    if not isinstance(entries, list):
        return []
    return [e for e in entries if isinstance(e, dict) and isinstance(e.get("id"), str)]


def intent_entries(targets: Sequence[Memory], reasons: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"id": t.id, "reason": reasons.get(t.id, "")} for t in targets]


async def target_copies(
    store: VectorStore, scope: NamespaceScope, targets: Sequence[Superseded]
) -> dict[str, list[Memory]]:
    """Per namespace, the live shared copies of the memories a write supersedes (a copy's reason is its
    origin's), so each new copy can supersede the old copies of its own namespace."""
    found: dict[str, list[Memory]] = {}
    for target in targets:
        if target.memory.origin_id is not None:
            continue
        for copy in await store.copies_of(scope, target.memory.id):
            if copy.superseded_by is None and copy.deleted_at is None:
                found.setdefault(copy.namespace, []).append(copy)
    return found


def copy_reasons(targets: Sequence[Superseded], copies: Mapping[str, list[Memory]]) -> dict[str, str]:
    reasons = {t.memory.id: t.reason for t in targets}
    for group in copies.values():
        for copy in group:
            if copy.origin_id in reasons:
                reasons[copy.id] = reasons[copy.origin_id]
    return reasons


def new_copy(
    memory: Memory,
    namespace: str,
    *,
    tags: Sequence[str],
    metadata: Mapping[str, Any],
    follows: str | None,
    supersedes: Sequence[Memory],
    reasons: Mapping[str, str],
) -> Memory:
    """A linked copy of `memory` in `namespace` made of what the sharer wrote: the request's own tags and
    metadata, notes about the memory alone, links only to memories of `namespace`."""
    notes = own_notes(pipeline_notes(memory))
    if supersedes:
        notes[INTENT] = intent_entries(supersedes, reasons)
    return replace(
        memory,
        id=new_memory_id(int(memory.created_at.timestamp() * 1000)),
        namespace=namespace,
        origin_id=memory.id,
        follows=follows,
        tags=list(tags),
        metadata=with_notes(metadata, notes),
        supersedes=[s.id for s in supersedes],
        superseded_by=None,
        access_count=0,
        last_accessed_at=None,
    )


def updated_copy(
    copy: Memory,
    updated: Memory,
    *,
    tags: Sequence[str],
    metadata: Mapping[str, Any],
    similarity: float,
    supersedes: Sequence[Memory],
    reasons: Mapping[str, str],
) -> Memory:
    """An existing copy brought to its origin's new wording: its own earlier tags and metadata (written by the
    sharer into this namespace before) with the request's, and the copy's own previous wording as history."""
    notes = own_notes(pipeline_notes(updated))
    notes["conflict"] = {
        "action": "updated",
        "similarity": round(similarity, 4),
        "previous_content": copy.content[:500],
        "previous_source": {"subject": copy.source.subject, "request_id": copy.source.request_id},
    }
    if supersedes:
        notes[INTENT] = intent_entries(supersedes, reasons)
    return replace(
        copy,
        content=updated.content,
        content_hash=updated.content_hash,
        updated_at=max(copy.updated_at, updated.updated_at),
        importance=updated.importance,
        expires_at=updated.expires_at,
        tags=list(dict.fromkeys([*copy.tags, *tags])),
        metadata=with_notes({**copy.metadata, **metadata}, notes),
        source=updated.source,
        session_id=updated.session_id or copy.session_id,
        attributes=updated.attributes,
        embedding_model=updated.embedding_model,
        supersedes=list(dict.fromkeys([*copy.supersedes, *(s.id for s in supersedes)])),
    )


def superseded_copy(old: Memory, by: str, reason: str, now: datetime) -> Memory:
    notes = pipeline_notes(old)
    notes["superseded"] = {"by": by, "reason": reason, "at": now.isoformat()}
    return replace(old, superseded_by=by, metadata=with_notes(old.metadata, notes))


async def complete_links(store: VectorStore, scope: NamespaceScope, memory: Memory, now: datetime) -> list[str]:
    """Apply whatever of `memory`'s recorded intent is missing, for it and its copies: each memory it set out
    to supersede is marked (unless it is deleted or already superseded), and a memory stored as superseded on
    arrival is listed in its successor's history. Idempotent; returns the origin-level ids it supersedes."""
    if not intent_of(memory) and memory.superseded_by is None:
        return []
    group = [memory]
    if memory.origin_id is None and (scope.writable or scope.admin):
        group += await store.copies_of(scope, memory.id)
    for item in group:
        for entry in intent_of(item):
            old = await store.get(scope, entry["id"])
            if old is None or old.superseded_by is not None or old.deleted_at is not None:
                continue
            if old.namespace != item.namespace or not scope.can_write(old.namespace):
                continue
            await store.update(scope, superseded_copy(old, item.id, entry.get("reason", ""), now))
    if memory.superseded_by is not None:
        current = await store.get(scope, memory.superseded_by)
        if current is not None and memory.id not in current.supersedes and scope.can_write(current.namespace):
            await store.update(scope, replace(current, supersedes=[*current.supersedes, memory.id]))
    return [e["id"] for e in intent_of(memory)]


async def store_with_links(
    store: VectorStore,
    scope: NamespaceScope,
    items: Sequence[tuple[Memory, Sequence[float], SparseVector]],
    now: datetime,
) -> list[str]:
    """Step 1, one atomic batch: the memory and its copies, each carrying its intent; step 2: the marks."""
    await store.upsert(scope, list(items))
    return await complete_links(store, scope, items[0][0], now)

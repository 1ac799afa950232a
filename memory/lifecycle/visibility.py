"""What a caller may see of the links a memory carries: every id it names (`origin_id`, `supersedes`,
`superseded_by`, `follows`, the ids in its pipeline notes) is shown only if the caller can read that memory, and
a shared copy whose origin the caller cannot read shows no earlier wording. A reader of a shared namespace alone
must not learn that a private memory exists, nor its id (ids encode their creation time), nor its text.

Writes already build copies from what the sharer wrote (`memory.write.linking`); this is the read-side guarantee, also
for memories stored by older versions.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from memory.models import Memory
from memory.ports import VectorStore
from memory.scope import NamespaceScope
from memory.write.linking import INTENT, pipeline_notes, with_notes

PRIVATE_HISTORY = ("previous_content", "previous_source")


class _Readable:
    """Memory ids the caller can read, looked up once per call: every id the shown memories name in one read."""

    def __init__(self, store: VectorStore, scope: NamespaceScope, shown: list[Memory]) -> None:
        self.store = store
        self.scope = scope
        self.known = {m.id: True for m in shown}

    async def load(self, memory_ids: Iterable[object]) -> None:
        wanted = {i for i in memory_ids if isinstance(i, str) and i not in self.known}
        if wanted:
            found = {m.id for m in await self.store.get_many(self.scope, sorted(wanted))}
            self.known.update((i, i in found) for i in wanted)

    async def __call__(self, memory_id: str | None) -> bool:
        if memory_id is None:
            return False
        if memory_id not in self.known:
            self.known[memory_id] = await self.store.get(self.scope, memory_id) is not None
        return self.known[memory_id]


async def as_seen_by(store: VectorStore, scope: NamespaceScope, memories: list[Memory]) -> list[Memory]:
    """`memories` with every link the caller cannot follow removed (admins see everything of their tenant)."""
    if scope.admin:
        return memories
    readable = _Readable(store, scope, memories)
    await readable.load(i for memory in memories for i in _named_ids(memory))
    return [await _seen(memory, readable) for memory in memories]


def _named_ids(memory: Memory) -> list[object]:
    """Every id `memory` names: its links, and the ids in its pipeline notes (None where there is none)."""
    notes = pipeline_notes(memory)
    superseded_note = notes.get("superseded")
    noted_by = superseded_note.get("by") if isinstance(superseded_note, dict) else None
    raw_intent = notes.get(INTENT)
    intent: list[Any] = raw_intent if isinstance(raw_intent, list) else []
    noted = [e.get("id") for e in intent if isinstance(e, dict)]
    return [memory.origin_id, memory.superseded_by, memory.follows, *memory.supersedes, noted_by, *noted]


async def _seen(memory: Memory, readable: _Readable) -> Memory:
    if all(i is None for i in _named_ids(memory)):
        return memory
    notes = pipeline_notes(memory)
    superseded_note = notes.get("superseded")
    noted_by = superseded_note.get("by") if isinstance(superseded_note, dict) else None
    raw_intent = notes.get(INTENT)
    intent: list[Any] = raw_intent if isinstance(raw_intent, list) else []
    changes: dict[str, Any] = {}
    origin_hidden = memory.origin_id is not None and not await readable(memory.origin_id)
    if origin_hidden:
        changes["origin_id"] = None
    for field in ("superseded_by", "follows"):
        value = getattr(memory, field)
        if value is not None and not await readable(value):
            changes[field] = None
    shown = [i for i in memory.supersedes if await readable(i)]
    if shown != memory.supersedes:
        changes["supersedes"] = shown
    clean = dict(notes)
    if isinstance(noted_by, str) and not await readable(noted_by):
        clean["superseded"] = {k: v for k, v in superseded_note.items() if k != "by"}  # type: ignore[union-attr]
    if intent:
        kept = [e for e in intent if isinstance(e, dict) and await readable(e.get("id"))]
        if len(kept) != len(intent):
            clean[INTENT] = kept
    conflict = clean.get("conflict")
    if origin_hidden and isinstance(conflict, dict) and any(k in conflict for k in PRIVATE_HISTORY):
        clean["conflict"] = {k: v for k, v in conflict.items() if k not in PRIVATE_HISTORY}
    if clean != notes:
        changes["metadata"] = with_notes(memory.metadata, clean)
    return replace(memory, **changes) if changes else memory

"""A memory's history: every version of its supersession chain the reader can see, oldest first. The chain is
followed both ways (`supersedes` back, `superseded_by` forward; a statement may replace several), one store read
per step for the whole frontier, at most `MAX_HISTORY` versions. Each version's end of validity is the
`created_at` of the one in its `superseded_by`."""

from __future__ import annotations

from memory.models import Memory
from memory.ports import VectorStore
from memory.scope import NamespaceScope

MAX_HISTORY = 100  # versions one history answers at most: the oldest beyond it are left out


async def history(store: VectorStore, scope: NamespaceScope, memory: Memory, *, include_deleted: bool) -> list[Memory]:
    """`memory` and every version linked to it that `scope` can read, oldest first (by `created_at`, then id);
    forgotten ones only if `include_deleted` (they still link the chain)."""
    found = {memory.id: memory}
    frontier = [memory]
    while frontier and len(found) < MAX_HISTORY:
        wanted = sorted({i for m in frontier for i in _linked(m) if i not in found})
        if not wanted:
            break
        frontier = await store.get_many(scope, wanted[: MAX_HISTORY - len(found)])
        found.update((m.id, m) for m in frontier)
    versions = sorted(found.values(), key=lambda m: (m.created_at, m.id))
    return [m for m in versions if include_deleted or m.deleted_at is None or m.id == memory.id]


def _linked(memory: Memory) -> list[str]:
    return [*memory.supersedes, *([memory.superseded_by] if memory.superseded_by else [])]

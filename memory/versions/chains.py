"""Supersession chains walked for a recall: which version answers for a superseded memory the search matched, and
when each version stopped being valid. A chain that reaches a memory the reader cannot see answers nothing, as one
that ends in a forgotten memory does (unless that came after the recall's `as_of`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from memory.models import Memory
from memory.ports import RecallFilter, VectorStore
from memory.recall.ranking import passes_filter
from memory.scope import NamespaceScope

MAX_SUPERSESSION_HOPS = 8


@dataclass(frozen=True, slots=True)
class Versions:
    """`current`: for each superseded candidate, by id, the version answered for it (itself when it was still
    valid at the recall's `as_of`); `ends`: when each superseded memory met stopped being valid (`valid_to`)."""

    current: dict[str, Memory]
    ends: dict[str, datetime]


async def current_versions(
    store: VectorStore,
    scope: NamespaceScope,
    memories: Sequence[Memory],
    namespaces: tuple[str, ...],
    flt: RecallFilter,
) -> Versions:
    """For each superseded memory, by id, the version answered for it: the live memory at the end of its
    supersession chain if it passes the recall's filters, or, as of an instant (`flt.as_of`), the one whose
    successor came after it; none if the chain reaches a memory that is deleted (before that instant), unreadable
    or filtered out. With `include_superseded` only the ends of validity, one hop. One store read per hop for all
    the chains together."""
    at = {m.id: m for m in memories if m.superseded_by is not None}  # each chain's memory so far
    versions = Versions({}, {})
    as_of = flt.as_of
    for _ in range(1 if flt.include_superseded else MAX_SUPERSESSION_HOPS):
        if not at:
            break
        wanted = sorted({m.superseded_by for m in at.values() if m.superseded_by is not None})
        found = {m.id: m for m in await store.get_many(scope, wanted)}
        following: dict[str, Memory] = {}
        for start, memory in at.items():
            successor = found.get(memory.superseded_by or "")
            if successor is None:
                continue
            versions.ends[memory.id] = successor.created_at
            if as_of is not None and successor.created_at > as_of:
                if memory.id == start or passes_filter(memory, namespaces, flt):
                    versions.current[start] = memory  # still valid then
            elif successor.deleted_at is not None:
                continue
            elif successor.superseded_by is not None:
                following[start] = successor
            elif passes_filter(successor, namespaces, flt):
                versions.current[start] = successor
        at = following
    return versions

"""Forgetting (docs/DESIGN.md § "The write path"): TTL expiry, archiving of idle memories and capacity eviction per
namespace, run by the maintenance scheduler off the request path. Nothing here deletes what cannot be restored: expiry
is a soft delete with a reason, archiving and eviction move memories to the archive (`memory.lifecycle.archive`).

Archiving moves the live memories that are old and rarely used (`ArchivePolicy`) to the archive. Eviction keeps
each namespace under its capacity of live memories (episodic 10 000, semantic 1 000 by default) by archiving the
memories with the lowest retention score — recency, importance and use, the recall score without similarity —
and never one created or updated within the protected window (7 days by default). Archived memories do not count
against capacity and are never evicted.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta

from memory.lifecycle.archive import CAPACITY_REASON, IDLE_REASON, ArchivePolicy, is_idle
from memory.lifecycle.hidden import EXPIRED_REASON
from memory.models import Memory, MemoryKind
from memory.recall.scoring import score
from memory.requests import ListRequest
from memory.scope import NamespaceScope
from memory.service import MemoryService

PAGE = 200


@dataclass(frozen=True, slots=True)
class ForgettingPolicy:
    episodic_capacity: int = 10_000
    semantic_capacity: int = 1_000
    protect_days: float = 7.0

    def capacity(self, kind: MemoryKind) -> int:
        return self.episodic_capacity if kind is MemoryKind.EPISODIC else self.semantic_capacity


async def live_memories(
    service: MemoryService, scope: NamespaceScope, namespace: str, kind: MemoryKind | None = None
) -> AsyncIterator[Memory]:
    """Every live memory of one namespace, page by page (oldest first)."""
    cursor = None
    while True:
        page = await service.list(
            scope,
            ListRequest(namespace=namespace, kind=None if kind is None else kind.value, limit=PAGE, cursor=cursor),
        )
        for memory in page.memories:
            yield memory
        cursor = page.next_cursor
        if cursor is None:
            return


async def expire(service: MemoryService, scope: NamespaceScope, namespace: str) -> list[str]:
    """Soft-delete the memories whose `expires_at` has passed; returns their ids."""
    now = service.clock.now()
    expired = [m.id async for m in live_memories(service, scope, namespace) if m.expires_at and m.expires_at <= now]
    for memory_id in expired:
        await service.forget(scope, memory_id, EXPIRED_REASON)
    if expired:
        service.on_hidden("expired", len(expired))
    return expired


def retention_score(memory: Memory, service: MemoryService) -> float:
    """How much a memory deserves to stay: the recall score with the similarity term left out."""
    parts = score(memory, 0.0, service.clock.now(), service.weights)
    return parts.score


async def archive_idle(
    service: MemoryService, scope: NamespaceScope, namespace: str, policy: ArchivePolicy
) -> list[str]:
    """Archive the live memories of one namespace that are old and rarely used; returns their ids."""
    if not policy.enabled:
        return []
    now = service.clock.now()
    idle = [m.id async for m in live_memories(service, scope, namespace) if is_idle(m, now, policy)]
    for memory_id in idle:
        await service.archive(scope, memory_id, IDLE_REASON)
    if idle:
        service.on_hidden("archived", len(idle))
    return idle


async def evict(
    service: MemoryService, scope: NamespaceScope, namespace: str, kind: MemoryKind, policy: ForgettingPolicy
) -> list[str]:
    """Archive the lowest-scored unprotected memories of one kind until the namespace is within capacity."""
    counts = await service.store.namespace_counts(scope, kind)
    excess = counts.get(namespace, 0) - policy.capacity(kind)
    if excess <= 0:
        return []
    protected_since = service.clock.now() - timedelta(days=policy.protect_days)
    candidates = [
        m
        async for m in live_memories(service, scope, namespace, kind)
        if max(m.created_at, m.updated_at) < protected_since
    ]
    candidates.sort(key=lambda m: (retention_score(m, service), m.created_at))
    evicted = [m.id for m in candidates[:excess]]
    for memory_id in evicted:
        await service.archive(scope, memory_id, CAPACITY_REASON)
    if evicted:
        service.on_hidden("archived", len(evicted))
    return evicted

"""Forgetting and consolidation: TTL expiry (a soft delete with a reason) and capacity eviction (to the archive),
eviction order by retention score with recent memories protected, and consolidation of related episodes into a
semantic memory that links to its sources."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memory.clock import ManualClock
from memory.consolidation import consolidate
from memory.lifecycle.forgetting import ForgettingPolicy, evict, expire
from memory.lifecycle.maintenance import maintain_tenant
from memory.models import MemoryKind
from memory.requests import ListRequest, RecallRequest, WriteRequest
from memory.scope import NamespaceScope
from memory.service import MemoryService
from tests.memory.conftest import expired

pytestmark = pytest.mark.anyio


async def write(service: MemoryService, who: NamespaceScope, content: str, **extra: object) -> str:
    outcome = await service.write(who, WriteRequest(content=content, subject="t", namespace="user:1", **extra))  # type: ignore[arg-type]
    assert outcome.id is not None
    return outcome.id


async def listed(service: MemoryService, who: NamespaceScope, deleted: bool = False) -> dict[str, str | None]:
    page = await service.list(who, ListRequest(namespace="user:1", include_deleted=deleted, limit=200))
    return {m.id: m.delete_reason for m in page.memories}


async def test_expired_memories_are_soft_deleted_with_a_reason(
    service: MemoryService, admin: NamespaceScope, clock: ManualClock
) -> None:
    short = await write(service, admin, "The parking code this week is 4417", ttl_seconds=3600)
    kept = await write(service, admin, "The user's favourite tea is sencha")
    assert await expire(service, admin, "user:1") == []
    clock.advance(3601)
    assert await expire(service, admin, "user:1") == [short]
    everything = await listed(service, admin, deleted=True)
    assert everything[short] == "expired"
    assert everything[kept] is None
    await service.restore(admin, short)  # a soft delete: restorable
    assert short in await listed(service, admin)


async def test_eviction_archives_the_lowest_scored_old_memories_and_spares_recent_ones(
    service: MemoryService, admin: NamespaceScope, clock: ManualClock
) -> None:
    start = clock.now()
    old_low = await write(
        service, admin, "The lobby plant was watered", importance=0.1, occurred_at=start - timedelta(days=30)
    )
    old_high = await write(
        service,
        admin,
        "The user's passport number ends in 7731",
        importance=0.9,
        occurred_at=start - timedelta(days=30),
    )
    old_mid = await write(
        service, admin, "The team lunch was at the taqueria", importance=0.4, occurred_at=start - timedelta(days=20)
    )
    recent_low = await write(service, admin, "Someone mentioned the weather", importance=0.05)
    policy = ForgettingPolicy(episodic_capacity=2, protect_days=7)
    evicted = await evict(service, admin, "user:1", MemoryKind.EPISODIC, policy)
    assert evicted == [old_low, old_mid]  # lowest retention first; the recent low one is protected
    live = await listed(service, admin)
    assert set(live) == {old_high, recent_low}
    evicted_memory = await service.get(admin, old_low)
    assert (evicted_memory.archive_reason, evicted_memory.deleted_at) == ("capacity", None)  # archived, not deleted
    assert await evict(service, admin, "user:1", MemoryKind.EPISODIC, policy) == []


async def test_related_episodes_are_consolidated_into_a_semantic_memory_with_source_links(
    service: MemoryService, admin: NamespaceScope
) -> None:
    coffee = [
        await write(service, admin, text)
        for text in (
            "The user drinks a double espresso every morning",
            "The user likes espresso with no sugar in the morning",
            "Every morning the user orders an espresso",
            "The user prefers a morning espresso over tea",
        )
    ]
    await write(service, admin, "The quarterly report is due on March 31")
    await write(service, admin, "Berlin office moves to a new building in May")
    before = {i: await service.get(admin, i) for i in coffee}
    result = await consolidate(service, admin, "user:1")
    assert result.clusters == 1
    [semantic_id] = result.written
    semantic = await service.get(admin, semantic_id)
    assert semantic.kind is MemoryKind.SEMANTIC
    assert set(semantic.metadata["sources"]) >= set(coffee[:3])
    assert "espresso" in semantic.content
    for source in semantic.metadata["sources"]:
        assert await service.get(admin, source) == before[source]  # consolidation never changes an episode
    hits = await service.recall(
        admin, RecallRequest(query="what does the user drink in the morning", kinds=["semantic"])
    )
    assert [h.memory.id for h in hits] == [semantic_id]
    again = await consolidate(service, admin, "user:1")
    assert again.written == []  # an unchanged cluster is not written again


async def test_a_maintenance_pass_covers_every_namespace_of_the_tenant(
    service: MemoryService, admin: NamespaceScope, acme: str, clock: ManualClock
) -> None:
    await expired(service, admin, clock, ("Temporary door code 1234", "user:1"), ("Standup moved to 9:45", "team:x"))
    report = await maintain_tenant(service, admin)
    assert report.namespaces >= 2
    assert report.expired == 2

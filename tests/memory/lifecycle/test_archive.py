"""The archive (issue #18.5) on the real engine: maintenance archives memories that are old and rarely used and
keeps those in use; eviction archives instead of forgetting; an archived memory is out of the dense index, found by
its keywords with `include_archived`, and `restore` embeds it again so it is recalled by meaning; an imported
archived record is stored archived; nothing maintenance archives is ever deleted."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memory.clock import ManualClock
from memory.lifecycle.archive import ArchivePolicy
from memory.lifecycle.forgetting import ForgettingPolicy, archive_idle, evict
from memory.lifecycle.maintenance import maintain_tenant
from memory.models import Memory, MemoryKind, RecallHit, WriteStatus
from memory.requests import ListRequest, RecallRequest, WriteRequest
from memory.scope import NamespaceScope
from memory.service import MemoryService
from memory.write.writer import REVIVED
from tests.memory.conftest import scope

pytestmark = pytest.mark.anyio

CANOE = "The user once rented a red canoe on Lake Bled"
BY_KEYWORDS = "red canoe Bled"
BY_MEANING = "paddling a small boat"  # no word in common with CANOE
POLICY = ArchivePolicy(after_days=90, max_access_count=3)


async def write(service: MemoryService, who: NamespaceScope, content: str, **extra: object) -> str:
    request = WriteRequest(content=content, subject="t", namespace="user:1", **extra)  # type: ignore[arg-type]
    outcome = await service.write(who, request)
    assert outcome.id is not None
    return outcome.id


async def recall(service: MemoryService, who: NamespaceScope, query: str, **extra: object) -> list[RecallHit]:
    return await service.recall(who, RecallRequest(query=query, **extra))  # type: ignore[arg-type]


async def recalled(service: MemoryService, who: NamespaceScope, query: str, **extra: object) -> list[str]:
    return [hit.memory.id for hit in await recall(service, who, query, **extra)]


async def listed(service: MemoryService, who: NamespaceScope, **extra: object) -> list[Memory]:
    page = await service.list(who, ListRequest(namespace="user:1", limit=200, **extra))  # type: ignore[arg-type]
    return page.memories


async def test_maintenance_archives_old_rarely_used_memories_and_keeps_the_ones_in_use(
    service: MemoryService, admin: NamespaceScope, clock: ManualClock
) -> None:
    long_ago = clock.now() - timedelta(days=200)
    idle = await write(service, admin, CANOE, occurred_at=long_ago)
    used_lately = await write(service, admin, "The user's passport number ends in 7731", occurred_at=long_ago)
    used_often = await write(service, admin, "The user's locker code is 4411", occurred_at=long_ago)
    for _ in range(4):  # four recalls 100 days ago: more than the policy's rarely
        assert (await recalled(service, admin, "locker code", top_k=1)) == [used_often]
    clock.advance(100 * 24 * 3600)
    assert (await recalled(service, admin, "passport number", top_k=1)) == [used_lately]
    recent = await write(service, admin, "The user adopted a cat named Miso")

    report = await maintain_tenant(service, admin, archive=POLICY)

    assert report.archived == 1 and report.failed == []
    [archived] = await listed(service, admin, hidden="archived")
    assert (archived.id, archived.archive_reason, archived.deleted_at) == (idle, "idle", None)
    assert archived.content == CANOE and archived.source.subject == "t"  # kept whole, with its provenance
    assert {m.id for m in await listed(service, admin)} == {used_lately, used_often, recent}
    assert idle not in await recalled(service, admin, BY_KEYWORDS)
    assert await archive_idle(service, admin, "user:1", POLICY) == []  # archived once; never deleted
    assert await archive_idle(service, admin, "user:1", ArchivePolicy(after_days=0)) == []  # 0: off


async def test_history_imported_with_its_own_old_times_is_idle_only_once_stored_that_long(
    service: MemoryService, admin: NamespaceScope, clock: ManualClock
) -> None:
    imported = await write(service, admin, CANOE, occurred_at=clock.now() - timedelta(days=3 * 365))

    assert await archive_idle(service, admin, "user:1", POLICY) == []  # happened years ago, stored today
    [memory] = await listed(service, admin)
    assert memory.stored_at == clock.now() and memory.created_at < memory.stored_at
    clock.advance(91 * 24 * 3600)
    assert await archive_idle(service, admin, "user:1", POLICY) == [imported]


async def test_eviction_archives_and_archived_memories_no_longer_count_against_capacity(
    service: MemoryService, admin: NamespaceScope, clock: ManualClock
) -> None:
    start = clock.now()
    low = await write(service, admin, "The lobby plant was watered", importance=0.1, occurred_at=start - timedelta(30))
    high = await write(service, admin, "The user's passport ends in 7731", importance=0.9, occurred_at=start)
    policy = ForgettingPolicy(episodic_capacity=1, protect_days=7)

    assert await evict(service, admin, "user:1", MemoryKind.EPISODIC, policy) == [low]

    evicted = await service.get(admin, low)
    assert (evicted.archive_reason, evicted.deleted_at) == ("capacity", None)
    assert await service.store.namespace_counts(admin, MemoryKind.EPISODIC) == {"user:1": 1}
    assert await evict(service, admin, "user:1", MemoryKind.EPISODIC, policy) == []
    assert [m.id for m in await listed(service, admin)] == [high]
    assert {m.id for m in await listed(service, admin, include_deleted=True)} == {low, high}


async def test_include_archived_recall_finds_an_archived_memory_by_its_keywords_only(
    service: MemoryService, admin: NamespaceScope
) -> None:
    canoe = await write(service, admin, CANOE)
    await write(service, admin, "The user prefers tea over coffee")
    assert canoe in await recalled(service, admin, BY_MEANING)  # in the dense index: found by meaning

    await service.archive(admin, canoe, "idle")

    assert canoe not in await recalled(service, admin, BY_KEYWORDS)
    [hit] = [h for h in await recall(service, admin, BY_KEYWORDS, include_archived=True) if h.memory.id == canoe]
    assert hit.memory.archived_at is not None and hit.scores.dense_similarity == 0.0
    assert canoe not in await recalled(service, admin, BY_MEANING, include_archived=True)  # no dense vector


async def test_restore_brings_an_archived_memory_back_recallable_by_meaning(
    service: MemoryService, admin: NamespaceScope, clock: ManualClock
) -> None:
    canoe = await write(service, admin, CANOE, occurred_at=clock.now() - timedelta(days=200))
    await write(service, admin, "The user prefers tea over coffee")
    [before] = [h for h in await recall(service, admin, BY_MEANING) if h.memory.id == canoe]
    await service.archive(admin, canoe, "idle")

    restored = await service.restore(admin, canoe)

    assert restored.archived_at is None and restored.archive_reason is None
    [after] = [h for h in await recall(service, admin, BY_MEANING) if h.memory.id == canoe]
    assert after.scores.dense_similarity == pytest.approx(before.scores.dense_similarity, abs=1e-4)  # same vector
    assert canoe in await recalled(service, admin, BY_KEYWORDS)
    assert await archive_idle(service, admin, "user:1", POLICY) == []  # bringing it back was a use of it


async def test_a_forgotten_archived_memory_is_restored_live_and_back_in_the_index(
    service: MemoryService, admin: NamespaceScope
) -> None:
    canoe = await write(service, admin, CANOE)
    await service.archive(admin, canoe, "idle")
    await service.forget(admin, canoe, "asked to forget")
    assert canoe not in await recalled(service, admin, BY_KEYWORDS, include_archived=True)  # forgotten wins

    await service.restore(admin, canoe)

    memory = await service.get(admin, canoe)
    assert (memory.deleted_at, memory.archived_at) == (None, None)
    assert canoe in await recalled(service, admin, BY_MEANING)


async def test_maintenance_archives_only_live_memories(
    service: MemoryService, admin: NamespaceScope, clock: ManualClock
) -> None:
    long_ago = clock.now() - timedelta(days=200)
    old = await write(service, admin, "I live in Berlin", occurred_at=long_ago)
    new = await write(service, admin, "I moved to Paris", occurred_at=long_ago + timedelta(days=1))
    gone = await write(service, admin, "My locker code is 4411", occurred_at=long_ago)
    await service.forget(admin, gone, "asked to forget")
    clock.advance(100 * 24 * 3600)

    assert await archive_idle(service, admin, "user:1", POLICY) == [new]

    assert (await service.get(admin, old)).superseded_by == new and (await service.get(admin, old)).archived_at is None
    assert (await service.get(admin, gone)).archived_at is None
    # the query matches the superseded memory, whose successor is archived: default recall shows neither
    assert not {old, new} & set(await recalled(service, admin, "Berlin"))


async def test_archiving_an_origin_leaves_its_shared_copy_live(
    service: MemoryService, acme: str, clock: ManualClock
) -> None:
    writer = scope(acme, write=["user:1", "team:1"])
    canoe = await write(service, writer, CANOE, share_to=["team:1"])
    [copy] = await service.store.copies_of(writer, canoe)

    await service.archive(writer, canoe, "idle")

    assert canoe not in await recalled(service, writer, BY_KEYWORDS, namespaces=["user:1"])
    assert copy.id in await recalled(service, writer, BY_KEYWORDS, namespaces=["team:1"])
    await service.restore(writer, canoe)
    assert canoe in await recalled(service, writer, BY_MEANING, namespaces=["user:1"])


async def test_an_imported_archived_record_is_stored_archived_and_its_repeat_is_skipped(
    service: MemoryService, admin: NamespaceScope, clock: ManualClock
) -> None:
    at = clock.now() - timedelta(days=100)
    request = WriteRequest(
        content=CANOE,
        subject="t",
        namespace="user:1",
        occurred_at=at,
        imported=True,
        skip_deleted_repeats=True,
        archived_at=at + timedelta(days=95),
        archive_reason="idle",
    )

    first = await service.write(admin, request)
    again = await service.write(admin, request)

    assert first.id is not None and (first.status.value, again.status.value) == ("created", "skipped")
    stored = await service.get(admin, first.id)
    assert (stored.archived_at, stored.archive_reason) == (at + timedelta(days=95), "idle")
    assert first.id not in await recalled(service, admin, BY_KEYWORDS)
    assert first.id in await recalled(service, admin, BY_KEYWORDS, include_archived=True)
    assert first.id not in await recalled(service, admin, BY_MEANING, include_archived=True)


async def test_another_tenant_never_recalls_or_lists_an_archived_memory(
    service: MemoryService, admin: NamespaceScope, globex: str
) -> None:
    canoe = await write(service, admin, CANOE)
    await service.archive(admin, canoe, "idle")
    theirs = scope(globex, write=["user:1"])
    await write(service, theirs, "The user rented a kayak")

    assert canoe not in await recalled(service, theirs, BY_KEYWORDS, include_archived=True)
    assert await listed(service, theirs, hidden="archived") == []


async def test_saying_an_archived_memory_again_brings_it_back_instead_of_storing_a_second_copy(
    service: MemoryService, admin: NamespaceScope
) -> None:
    canoe = await write(service, admin, CANOE)
    await service.archive(admin, canoe, "idle")

    again = await service.write(admin, WriteRequest(content=CANOE, subject="t", namespace="user:1"))

    assert (again.status, again.id, again.reason) == (WriteStatus.SKIPPED, canoe, REVIVED)
    assert [m.id for m in await listed(service, admin)] == [canoe]  # live again, and the only one
    assert await listed(service, admin, hidden="archived") == []
    assert canoe in await recalled(service, admin, BY_MEANING)  # back in the dense index


async def test_saying_a_forgotten_memory_again_stores_it_anew(service: MemoryService, admin: NamespaceScope) -> None:
    canoe = await write(service, admin, CANOE)
    await service.forget(admin, canoe, "asked to forget")

    again = await service.write(admin, WriteRequest(content=CANOE, subject="t", namespace="user:1"))

    assert again.status is WriteStatus.CREATED and again.id != canoe

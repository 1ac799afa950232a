"""Erasing a namespace from every engine store (`memory.erasure`): its memories, their linked copies elsewhere and
what was consolidated from them (rebuilt without them), working memory, events and the recall log; a process that
dies after any step leaves what a retry finishes. Real engine, embedder, sqlite events, in-process tiers."""

from __future__ import annotations

import pytest

from memory.clock import ManualClock
from memory.consolidation import consolidate
from memory.erasure import Tiers, erase_planned, plan_namespace, steps
from memory.errors import NamespaceForbidden
from memory.models import MemoryKind, Turn
from memory.ports import ListQuery
from memory.recall_log.store import LoggedHit, RecallLogEntry
from memory.requests import WriteRequest
from memory.scope import NamespaceScope
from memory.service import MemoryService
from tests.memory.conftest import scope
from tests.memory.erasure.conftest import COFFEE, log

pytestmark = pytest.mark.anyio

PRIVATE, SHARED = "user:1", "shared:t"


async def written(service: MemoryService, tiers: Tiers, acme: str, clock: ManualClock) -> list[str]:
    """Wren's data in `PRIVATE`: memories copied into `SHARED` (and consolidated there), a working-memory session,
    a logged recall that returned one; and another subject's memory in `SHARED`. Answers the private ids."""
    writer = scope(acme, read=[PRIVATE, SHARED], write=[PRIVATE, SHARED])
    ids = []
    for text in COFFEE:
        outcome = await service.write(writer, WriteRequest(text, "wren", namespace=PRIVATE, share_to=[SHARED]))
        assert outcome.id is not None
        ids.append(outcome.id)
    await service.write(writer, WriteRequest("Team lunch is on Thursday at noon", "bob", namespace=SHARED))
    await tiers.working.append_turn(writer, PRIVATE, "s1", Turn("user", "My locker is 12", clock.now()), 10, 3600)
    hit = LoggedHit(ids[0], PRIVATE, 0.9, {})
    await log(tiers).append(writer, RecallLogEntry(clock.now(), "wren", "espresso", {}, (hit,)))
    result = await consolidate(service, scope(acme, admin=True), SHARED)
    assert result.written, "the copies were consolidated in the shared namespace"
    return ids


async def contents(service: MemoryService, admin: NamespaceScope, namespace: str) -> list[str]:
    page, _ = await service.store.list(admin, ListQuery((namespace,), None, True, 200, None))
    return sorted(m.content for m in page)


async def test_erasing_a_namespace_removes_it_its_copies_and_what_was_consolidated_from_them(
    service: MemoryService, tiers: Tiers, admin: NamespaceScope, acme: str, clock: ManualClock
) -> None:
    await written(service, tiers, acme, clock)
    plan = await plan_namespace(service, admin, PRIVATE)
    erased = await erase_planned(service, admin, plan, tiers)
    assert (erased.memories, erased.copies, erased.working_sessions, erased.recall_log_entries) == (3, 3, 1, 1)
    assert erased.derived >= 1
    assert await contents(service, admin, PRIVATE) == []
    assert await contents(service, admin, SHARED) == ["Team lunch is on Thursday at noon"]
    assert await tiers.working.get(admin, PRIVATE, "s1") is None
    assert await log(tiers).entries(admin, limit=10) == []


@pytest.mark.parametrize("died_after", range(7))
async def test_a_retry_finishes_an_erasure_that_died_after_any_step(
    service: MemoryService, tiers: Tiers, admin: NamespaceScope, acme: str, clock: ManualClock, died_after: int
) -> None:
    await written(service, tiers, acme, clock)
    plan = await plan_namespace(service, admin, PRIVATE)
    first = steps(service, admin, plan, tiers)
    assert len(first) == 7
    for _, step in first[:died_after]:  # the process died after these
        await step()
    retry = await plan_namespace(service, admin, PRIVATE)
    await erase_planned(service, admin, retry, tiers)
    assert await contents(service, admin, PRIVATE) == []
    shared = await contents(service, admin, SHARED)
    assert shared == ["Team lunch is on Thursday at noon"], f"left in {SHARED}: {shared}"
    semantic, _ = await service.store.list(admin, ListQuery((SHARED,), MemoryKind.SEMANTIC, True, 200, None))
    assert semantic == []
    assert await tiers.working.get(admin, PRIVATE, "s1") is None
    assert await log(tiers).entries(admin, limit=10) == []


async def test_only_an_admin_plans_an_erasure(service: MemoryService, acme: str) -> None:
    with pytest.raises(NamespaceForbidden):
        await plan_namespace(service, scope(acme, read=[PRIVATE], write=[PRIVATE]), PRIVATE)

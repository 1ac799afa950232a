"""Erasing what a selection names across namespaces (`memory.erasure.selected`): what one subject wrote, with its
copies, what was consolidated from them (rebuilt without them), its events, the working memory it wrote into and
the recall-log entries; other subjects' data stays; a process that dies after any step leaves what a retry
finishes. Real engine, embedder, sqlite events, in-process stores."""

from __future__ import annotations

import pytest

from memory.clock import ManualClock
from memory.consolidation import consolidate
from memory.erasure import Tiers, erase_selected, plan_selection
from memory.erasure.selected import steps
from memory.errors import NamespaceForbidden
from memory.events import Event
from memory.ids import new_memory_id
from memory.models import MemoryKind, Turn
from memory.ports import ListQuery
from memory.recall_log.store import LoggedHit, RecallLogEntry
from memory.requests import WriteRequest
from memory.scope import NamespaceScope
from memory.selection import Selection
from memory.service import MemoryService
from tests.memory.conftest import scope
from tests.memory.erasure.conftest import COFFEE, log

pytestmark = pytest.mark.anyio

PRIVATE, SHARED = "user:w", "shared:t"
BOB = "Team lunch is on Thursday at noon"
WREN = Selection(written_by="wren")


def said(subject: str, content: str, clock: ManualClock, namespace: str = PRIVATE) -> Event:
    return Event(
        id=new_memory_id(),
        namespace=namespace,
        session_id="t1",
        task_id=None,
        type="user_message",
        content=content,
        metadata={},
        occurred_at=clock.now(),
        recorded_at=clock.now(),
        subject=subject,
        request_id=None,
        call_id=None,
        tool=None,
    )


async def written(service: MemoryService, tiers: Tiers, acme: str, clock: ManualClock) -> None:
    """Wren's data: memories in `PRIVATE` copied into `SHARED` (consolidated there), events and working memory in
    a session Bob shares, a logged recall; Bob's memory, event and recall beside them."""
    both = [PRIVATE, SHARED]
    wren, bob = scope(acme, read=both, write=both), scope(acme, read=both, write=both)
    for text in COFFEE:
        await service.write(wren, WriteRequest(text, "wren", namespace=PRIVATE, share_to=[SHARED]))
    await service.write(bob, WriteRequest(BOB, "bob", namespace=SHARED))
    turn = Turn("user", "My locker is 12", clock.now())
    await tiers.working.append_turn(wren, SHARED, "s1", turn, 10, 3600, subject="wren")
    await tiers.working.append_turn(bob, SHARED, "s2", Turn("user", "Lunch?", clock.now()), 10, 3600, subject="bob")
    await tiers.events.append(wren, said("wren", "Wren moves the ledger to Oslo", clock))
    await tiers.events.append(bob, said("bob", "Bob books the room", clock))
    await log(tiers).append(wren, RecallLogEntry(clock.now(), "wren", "espresso", {}, ()))
    await log(tiers).append(bob, RecallLogEntry(clock.now(), "bob", "lunch", {}, (LoggedHit("x", SHARED, 0.5, {}),)))
    result = await consolidate(service, scope(acme, admin=True), SHARED)
    assert result.written, "the copies were consolidated in the shared namespace"


async def left(service: MemoryService, tiers: Tiers, admin: NamespaceScope) -> dict[str, object]:
    page, _ = await service.store.list(admin, ListQuery((), None, True, 200, None))
    semantic, _ = await service.store.list(admin, ListQuery((), MemoryKind.SEMANTIC, True, 200, None))
    events = await tiers.events.events(admin, PRIVATE, "t1", limit=100)
    return {
        "memories": sorted(m.content for m in page),
        "semantic": len(semantic),
        "events": [e.subject for e in events],
        "working": [await tiers.working.get(admin, SHARED, s) is not None for s in ("s1", "s2")],
        "log": [e.subject for e in await log(tiers).entries(admin, limit=10)],
    }


EXPECTED = {"memories": [BOB], "semantic": 0, "events": ["bob"], "working": [False, True], "log": ["bob"]}


async def test_erasing_what_a_subject_wrote_removes_it_from_every_store_and_keeps_others_data(
    service: MemoryService, tiers: Tiers, acme: str, clock: ManualClock
) -> None:
    admin = scope(acme, admin=True)
    await written(service, tiers, acme, clock)
    plan = await plan_selection(service, admin, WREN)
    erased = await erase_selected(service, admin, plan, tiers)
    assert (erased.memories, erased.events, erased.working_sessions, erased.recall_log_entries) == (6, 1, 1, 1)
    assert erased.derived >= 1
    assert await left(service, tiers, admin) == EXPECTED


@pytest.mark.parametrize("died_after", range(7))
async def test_a_retry_finishes_an_erasure_of_a_subject_that_died_after_any_step(
    service: MemoryService, tiers: Tiers, acme: str, clock: ManualClock, died_after: int
) -> None:
    admin = scope(acme, admin=True)
    await written(service, tiers, acme, clock)
    first = steps(service, admin, await plan_selection(service, admin, WREN), tiers)
    assert len(first) == 7
    for _, step in first[:died_after]:  # the process died after these
        await step()
    await erase_selected(service, admin, await plan_selection(service, admin, WREN), tiers)
    assert await left(service, tiers, admin) == EXPECTED


async def test_erasing_a_tag_removes_only_the_tagged_memories(service: MemoryService, tiers: Tiers, acme: str) -> None:
    admin, writer = scope(acme, admin=True), scope(acme, write=[PRIVATE])
    await service.write(writer, WriteRequest("The badge number is 7731", "wren", namespace=PRIVATE, tags=["badge"]))
    await service.write(writer, WriteRequest("The desk is by the window", "wren", namespace=PRIVATE))
    erased = await erase_selected(service, admin, await plan_selection(service, admin, Selection(tag="badge")), tiers)
    page, _ = await service.store.list(admin, ListQuery((), None, True, 200, None))
    assert erased.memories == 1 and [m.content for m in page] == ["The desk is by the window"]


async def test_only_an_admin_plans_an_erasure_of_a_selection(service: MemoryService, acme: str) -> None:
    with pytest.raises(NamespaceForbidden):
        await plan_selection(service, scope(acme, read=[PRIVATE], write=[PRIVATE]), WREN)

"""The `RecallLog` contract, run against `InProcessRecallLog` and `RedisRecallLog` (on a real redis-server and on
a real Redis Cluster), on a `ManualClock`: entries come back newest first and filtered, a tenant's log holds at
most `max_entries` and nothing older than `max_age_seconds`, only an admin scope reads or erases, and only its own
tenant's log; erasing by subject, namespace or memory id removes exactly the matching entries and counts them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from memory.clock import ManualClock
from memory.errors import InvalidArgument, NamespaceForbidden
from memory.recall_log import InProcessRecallLog, LoggedHit, RecallLog, RecallLogEntry, RedisRecallLog
from tests.memory.conftest import scope
from tests.redis_server import RedisTarget

pytestmark = pytest.mark.anyio

MAX_ENTRIES = 5
MAX_AGE = 3600.0
HIT = LoggedHit("m1", "user:1", 0.9, {"similarity": 0.95, "recency": 0.5, "cues": ["when"]})


@pytest.fixture(params=["in_process", "redis", "redis_cluster"])
async def log(request: pytest.FixtureRequest, clock: ManualClock) -> AsyncIterator[RecallLog]:
    if request.param == "in_process":
        store = InProcessRecallLog(clock, max_entries=MAX_ENTRIES, max_age_seconds=MAX_AGE)
        yield store
        await store.close()
        return
    fixture = "redis_url" if request.param == "redis" else "redis_cluster_url"
    client = RedisTarget(request.getfixturevalue(fixture), cluster=request.param == "redis_cluster").client()
    yield RedisRecallLog(client, clock, max_entries=MAX_ENTRIES, max_age_seconds=MAX_AGE)
    await client.aclose()


def entry(clock: ManualClock, n: int, *, session_id: str | None = None, subject: str = "agent-1") -> RecallLogEntry:
    arguments = {"top_k": 3} | ({"session_id": session_id} if session_id else {})
    return RecallLogEntry(at=clock.now(), subject=subject, query=f"query {n}", arguments=arguments, hits=(HIT,))


def queries(entries: list[RecallLogEntry]) -> list[str]:
    return [e.query for e in entries]


async def test_entries_come_back_whole_and_newest_first(log: RecallLog, clock: ManualClock, acme: str) -> None:
    written = []
    for n in range(3):
        written.append(entry(clock, n, session_id="s1"))
        await log.append(scope(acme, write=["user:1"]), written[-1])
        clock.advance(1.5)

    found = await log.entries(scope(acme, admin=True), limit=10)

    assert found == written[::-1]  # every field survives the store (times to the microsecond)
    assert found[0].session_id == "s1" and found[0].hits[0].parts["cues"] == ["when"]


async def test_filters_and_limit_apply(log: RecallLog, clock: ManualClock, acme: str) -> None:
    writer = scope(acme, write=["user:1"])
    await log.append(writer, entry(clock, 0, session_id="s1", subject="alice"))
    await log.append(writer, entry(clock, 1, session_id="s2", subject="alice"))
    await log.append(writer, entry(clock, 2, session_id="s1", subject="bob"))
    await log.append(writer, entry(clock, 3))
    admin = scope(acme, admin=True)

    assert queries(await log.entries(admin, limit=10, session_id="s1")) == ["query 2", "query 0"]
    assert queries(await log.entries(admin, limit=10, subject="alice")) == ["query 1", "query 0"]
    assert queries(await log.entries(admin, limit=10, session_id="s1", subject="alice")) == ["query 0"]
    assert queries(await log.entries(admin, limit=2)) == ["query 3", "query 2"]


async def test_the_count_bound_keeps_the_newest_entries(log: RecallLog, clock: ManualClock, acme: str) -> None:
    for n in range(MAX_ENTRIES + 3):
        await log.append(scope(acme), entry(clock, n))

    found = await log.entries(scope(acme, admin=True), limit=100)

    assert queries(found) == [f"query {n}" for n in reversed(range(3, MAX_ENTRIES + 3))]


async def test_the_age_bound_drops_old_entries(log: RecallLog, clock: ManualClock, acme: str) -> None:
    admin = scope(acme, admin=True)
    await log.append(scope(acme), entry(clock, 0))
    clock.advance(MAX_AGE / 2)
    await log.append(scope(acme), entry(clock, 1))

    clock.advance(MAX_AGE / 2 + 1)  # the first is past the bound, the second not yet
    assert queries(await log.entries(admin, limit=10)) == ["query 1"]

    clock.advance(MAX_AGE)
    await log.append(scope(acme), entry(clock, 2))
    assert queries(await log.entries(admin, limit=10)) == ["query 2"]


async def test_only_an_admin_reads_and_only_its_own_tenant(
    log: RecallLog, clock: ManualClock, acme: str, globex: str
) -> None:
    await log.append(scope(acme, write=["user:1"]), entry(clock, 0))

    with pytest.raises(NamespaceForbidden):
        await log.entries(scope(acme, read=["user:1"], write=["user:1"]), limit=10)
    with pytest.raises(InvalidArgument):
        await log.entries(scope(acme, admin=True), limit=0)
    assert await log.entries(scope(globex, admin=True), limit=10) == []
    assert queries(await log.entries(scope(acme, admin=True), limit=10)) == ["query 0"]


def asked(
    clock: ManualClock,
    query: str,
    *,
    subject: str = "agent-1",
    arguments: dict[str, object] | None = None,
    hits: tuple[LoggedHit, ...] = (),
) -> RecallLogEntry:
    return RecallLogEntry(at=clock.now(), subject=subject, query=query, arguments=arguments or {}, hits=hits)


def hit(memory_id: str, namespace: str) -> LoggedHit:
    return LoggedHit(memory_id, namespace, 0.5, {"similarity": 0.5})


async def test_erasing_by_subject_removes_only_that_subjects_entries(
    log: RecallLog, clock: ManualClock, acme: str
) -> None:
    await log.append(scope(acme), asked(clock, "alice 1", subject="alice"))
    await log.append(scope(acme), asked(clock, "bob", subject="bob"))
    await log.append(scope(acme), asked(clock, "alice 2", subject="alice"))
    admin = scope(acme, admin=True)

    assert await log.erase(admin, subjects=["alice"]) == 2

    assert queries(await log.entries(admin, limit=10)) == ["bob"]


async def test_erasing_by_namespace_removes_entries_that_asked_it_or_hit_it(
    log: RecallLog, clock: ManualClock, acme: str
) -> None:
    writer = scope(acme)
    await log.append(writer, asked(clock, "listed", arguments={"namespaces": ["user:2", "user:1"]}))
    await log.append(writer, asked(clock, "single", arguments={"namespace": "user:1"}))
    await log.append(writer, asked(clock, "hit", arguments={"namespaces": ["team:x"]}, hits=(hit("m1", "user:1"),)))
    await log.append(writer, asked(clock, "other", arguments={"namespaces": ["user:2"]}, hits=(hit("m2", "user:2"),)))
    await log.append(writer, asked(clock, "not a list", arguments={"namespaces": "user:1"}))
    admin = scope(acme, admin=True)

    assert await log.erase(admin, namespaces={"user:1"}) == 3

    assert queries(await log.entries(admin, limit=10)) == ["not a list", "other"]


async def test_erasing_by_memory_id_removes_entries_that_returned_it(
    log: RecallLog, clock: ManualClock, acme: str
) -> None:
    writer = scope(acme)
    await log.append(writer, asked(clock, "both", hits=(hit("m2", "user:1"), hit("m1", "user:1"))))
    await log.append(writer, asked(clock, "m2 only", hits=(hit("m2", "user:1"),)))
    await log.append(writer, asked(clock, "m3", hits=(hit("m3", "user:1"),)))
    await log.append(writer, asked(clock, "none"))
    admin = scope(acme, admin=True)

    assert await log.erase(admin, memory_ids=("m1", "m3")) == 2

    assert queries(await log.entries(admin, limit=10)) == ["none", "m2 only"]


async def test_an_entry_matching_several_criteria_is_removed_and_counted_once(
    log: RecallLog, clock: ManualClock, acme: str
) -> None:
    matching = asked(clock, "all", subject="alice", arguments={"namespace": "user:1"}, hits=(hit("m1", "user:1"),))
    await log.append(scope(acme), matching)
    await log.append(scope(acme), matching)  # an identical entry is a second entry
    await log.append(scope(acme), asked(clock, "kept", subject="bob"))
    admin = scope(acme, admin=True)

    assert await log.erase(admin, namespaces=["user:1"], subjects=["alice"], memory_ids=["m1"]) == 2

    assert queries(await log.entries(admin, limit=10)) == ["kept"]


async def test_erasing_with_nothing_named_removes_nothing(log: RecallLog, clock: ManualClock, acme: str) -> None:
    await log.append(scope(acme), asked(clock, "kept", arguments={"namespace": "user:1"}, hits=(hit("m1", "user:1"),)))
    admin = scope(acme, admin=True)

    assert await log.erase(admin) == 0
    assert await log.erase(admin, subjects=["nobody"], namespaces=["team:none"], memory_ids=["m404"]) == 0

    assert queries(await log.entries(admin, limit=10)) == ["kept"]


async def test_erasing_leaves_another_tenants_entries_untouched(
    log: RecallLog, clock: ManualClock, acme: str, globex: str
) -> None:
    await log.append(scope(acme), asked(clock, "acme", subject="alice", hits=(hit("m1", "user:1"),)))
    await log.append(scope(globex), asked(clock, "globex", subject="alice", hits=(hit("m1", "user:1"),)))

    assert await log.erase(scope(globex, admin=True), subjects=["alice"], namespaces=["user:1"]) == 1

    assert queries(await log.entries(scope(acme, admin=True), limit=10)) == ["acme"]
    assert await log.entries(scope(globex, admin=True), limit=10) == []


async def test_a_non_admin_scope_cannot_erase(log: RecallLog, clock: ManualClock, acme: str) -> None:
    await log.append(scope(acme), asked(clock, "kept", subject="alice"))

    with pytest.raises(NamespaceForbidden):
        await log.erase(scope(acme, read=["user:1"], write=["user:1"]), subjects=["alice"])
    with pytest.raises(NamespaceForbidden):
        await log.erase(scope(acme, read=["user:1"]))

    assert queries(await log.entries(scope(acme, admin=True), limit=10)) == ["kept"]


async def test_entries_appended_after_an_erase_are_kept_in_order_and_bounded(
    log: RecallLog, clock: ManualClock, acme: str
) -> None:
    for n in range(3):
        await log.append(scope(acme), asked(clock, f"old {n}", subject="alice" if n == 1 else "bob"))
    admin = scope(acme, admin=True)
    assert await log.erase(admin, subjects=["alice"]) == 1

    for n in range(MAX_ENTRIES - 1):
        await log.append(scope(acme), asked(clock, f"new {n}"))

    expected = [f"new {n}" for n in reversed(range(MAX_ENTRIES - 1))] + ["old 2"]
    assert queries(await log.entries(admin, limit=100)) == expected


async def test_an_entry_past_the_age_bound_is_not_counted_as_erased(
    log: RecallLog, clock: ManualClock, acme: str
) -> None:
    await log.append(scope(acme), asked(clock, "old", subject="alice"))
    clock.advance(MAX_AGE + 1)
    await log.append(scope(acme), asked(clock, "new", subject="alice"))

    assert await log.erase(scope(acme, admin=True), subjects=["alice"]) == 1
    assert await log.entries(scope(acme, admin=True), limit=10) == []


async def test_entries_appended_while_erasing_are_not_lost(log: RecallLog, clock: ManualClock, acme: str) -> None:
    await log.append(scope(acme), asked(clock, "gone 0", subject="alice"))
    await log.append(scope(acme), asked(clock, "gone 1", subject="alice"))
    admin = scope(acme, admin=True)

    async def append(n: int) -> None:
        await log.append(scope(acme), asked(clock, f"new {n}", subject="bob"))

    erased, *_ = await asyncio.gather(log.erase(admin, subjects=["alice"]), append(0), append(1), append(2))

    assert erased == 2
    assert sorted(queries(await log.entries(admin, limit=10))) == ["new 0", "new 1", "new 2"]

"""The `EventStore` contract, run against `SqliteEventStore` (a file in a temp dir) and `RedisEventStore` (on a real
redis-server and on a real Redis Cluster). Plus what only one backend can show: a sqlite append survives a
SIGKILL of its process right after it returned, a locked sqlite file and a stopped Redis are `BackendUnavailable`,
and every Redis key of a tenant carries the tenant's hash tag."""

from __future__ import annotations

import json
import os
import random
import sqlite3
import sys
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
import redis
import redis.asyncio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from memory.errors import BackendUnavailable, InvalidArgument, NamespaceForbidden
from memory.events import Event, EventCounts, EventStore, RedisEventStore, SessionExport, SqliteEventStore
from memory.events.model import EventType, encode_event
from memory.ids import new_memory_id
from memory.scope import NamespaceScope
from tests.memory.conftest import START, scope
from tests.redis_server import RedisServer, RedisTarget

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(params=["sqlite", "redis", "redis_cluster"])
async def events_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[EventStore]:
    store: EventStore
    if request.param == "sqlite":
        store = SqliteEventStore.open(tmp_path / "events.sqlite3")
    elif request.param == "redis":
        store = RedisEventStore(RedisTarget(request.getfixturevalue("redis_url"), cluster=False).client())
    else:
        store = RedisEventStore(RedisTarget(request.getfixturevalue("redis_cluster_url"), cluster=True).client())
    yield store
    await store.close()


@pytest.fixture
def me(acme: str) -> NamespaceScope:
    return scope(acme, read=["shared:team"], write=["user:1"])


@pytest.fixture
def admin(acme: str) -> NamespaceScope:
    return scope(acme, admin=True)


def at(seconds: float) -> datetime:
    return START + timedelta(seconds=seconds)


def event(
    n: float,
    *,
    kind: EventType = "user_message",
    session: str = "s1",
    namespace: str = "user:1",
    task: str | None = None,
    call: str | None = None,
    content: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> Event:
    """Event number `n`, occurred and recorded `n` seconds after START (its id carries that time)."""
    moment = at(n)
    return Event(
        id=new_memory_id(int(moment.timestamp() * 1000)),
        namespace=namespace,
        session_id=session,
        task_id=task,
        type=kind,
        content=f"event {n}" if content is None else content,
        metadata={"n": n} if metadata is None else metadata,
        occurred_at=moment,
        recorded_at=moment,
        subject="agent-1",
        request_id=f"req-{n}",
        call_id=call,
        tool="search_flights" if kind == "tool_call" else None,
    )


async def everything(store: EventStore, who: NamespaceScope, session: str = "s1", ns: str = "user:1") -> list[Event]:
    return await store.events(who, ns, session, limit=1000)


async def exported(store: EventStore, who: NamespaceScope, namespace: str) -> list[SessionExport]:
    return [item async for item in store.export(who, namespace)]


# -- events ------------------------------------------------------------------------------------------------------


async def test_appended_events_come_back_in_id_order_whatever_order_they_were_appended(
    events_store: EventStore, me: NamespaceScope
) -> None:
    made = [event(n) for n in range(12)]
    shuffled = made[:]
    random.Random(7).shuffle(shuffled)
    for e in shuffled:
        assert await events_store.append(me, e) == e

    assert await everything(events_store, me) == made
    assert await events_store.events(me, "user:1", "other-session") == []


async def test_a_task_filter_lists_only_the_events_of_that_task(events_store: EventStore, me: NamespaceScope) -> None:
    made = [event(n, task=("flights" if n % 2 else "hotels") if n % 3 else None) for n in range(9)]
    for e in made:
        await events_store.append(me, e)

    flights = await events_store.events(me, "user:1", "s1", task_id="flights")
    hotels = await events_store.events(me, "user:1", "s1", task_id="hotels")

    assert flights == [e for e in made if e.task_id == "flights"]
    assert hotels == [e for e in made if e.task_id == "hotels"]
    assert await events_store.events(me, "user:1", "s1", task_id="") == []
    assert await events_store.events(me, "user:1", "s1", task_id="cars") == []


async def test_paging_with_after_walks_every_event_exactly_once(events_store: EventStore, me: NamespaceScope) -> None:
    made = [event(n, task="t") for n in range(23)]
    for e in made:
        await events_store.append(me, e)

    for task in (None, "t"):
        pages, after = [], None
        while page := await events_store.events(me, "user:1", "s1", task_id=task, after=after, limit=5):
            pages.append(page)
            after = page[-1].id
        assert [len(p) for p in pages] == [5, 5, 5, 5, 3]
        assert [e for p in pages for e in p] == made


async def test_a_tool_result_is_bound_into_its_call_as_one_event(events_store: EventStore, me: NamespaceScope) -> None:
    call = event(1, kind="tool_call", call="c-1", content='{"from": "PEK", "to": "SHA"}')
    result = event(2, kind="tool_result", call="c-1", content="CA1501 08:00", metadata={"call_id": "c-1", "ms": 41})
    first = event(0)
    await events_store.append(me, first)
    await events_store.append(me, call)

    bound = await events_store.append(me, result)

    expected = replace(call, result="CA1501 08:00", result_at=result.occurred_at, result_metadata=result.metadata)
    assert bound == expected
    assert await everything(events_store, me) == [first, expected]
    record = await events_store.session(me, "user:1", "s1")
    assert record is not None
    assert (record.events, record.last_event_at) == (2, result.recorded_at)


async def test_a_tool_result_without_a_matching_unbound_call_is_stored_as_its_own_event(
    events_store: EventStore, me: NamespaceScope
) -> None:
    early = event(1, kind="tool_result", call="c-1", content="arrived before its call")
    call = event(2, kind="tool_call", call="c-1")
    stranger = event(3, kind="tool_result", call="c-unknown")
    result = event(4, kind="tool_result", call="c-1", content="the real result")
    second = event(5, kind="tool_result", call="c-1", content="a second result for the same call")
    elsewhere = event(6, kind="tool_result", call="c-1", session="s2")
    for e in (early, call, stranger):
        assert await events_store.append(me, e) == e
    bound = await events_store.append(me, result)
    assert await events_store.append(me, second) == second
    assert await events_store.append(me, elsewhere) == elsewhere

    assert bound.id == call.id
    assert await everything(events_store, me) == [early, replace(call, **_result_of(result)), stranger, second]
    assert await everything(events_store, me, "s2") == [elsewhere]


def _result_of(result: Event) -> dict[str, Any]:
    return {"result": result.content, "result_at": result.occurred_at, "result_metadata": result.metadata}


async def an_event_then_a_call_and_its_result(
    events_store: EventStore, me: NamespaceScope
) -> tuple[Event, Event, Event]:
    """Append a message, then a tool call and its result in session `s1` of `user:1`; return the three as made."""
    first = event(1)
    call, result = event(2, kind="tool_call", call="c"), event(3, kind="tool_result", call="c")
    for e in (first, call, result):
        await events_store.append(me, e)
    return first, call, result


async def test_re_appending_an_event_id_returns_the_stored_event_and_changes_nothing(
    events_store: EventStore, me: NamespaceScope
) -> None:
    first, call, result = await an_event_then_a_call_and_its_result(events_store, me)
    before = await events_store.session(me, "user:1", "s1")

    retried = await events_store.append(me, replace(first, content="changed", recorded_at=at(99)))
    retried_result = await events_store.append(me, replace(result, content="changed"))

    assert retried == first
    assert retried_result == replace(call, **_result_of(result))
    assert await everything(events_store, me) == [first, replace(call, **_result_of(result))]
    assert await events_store.session(me, "user:1", "s1") == before


def again(made: Event, seconds: float, **changes: Any) -> Event:
    """A retry of the request that recorded `made`, as `record_event` makes it: a new id, recorded later."""
    moment = at(seconds)
    return replace(made, id=new_memory_id(int(moment.timestamp() * 1000)), recorded_at=moment, **changes)


async def test_an_append_under_a_new_id_with_a_stored_request_id_returns_what_the_first_append_stored(
    events_store: EventStore, me: NamespaceScope
) -> None:
    first, call, result = await an_event_then_a_call_and_its_result(events_store, me)
    before = await events_store.session(me, "user:1", "s1")
    bound = replace(call, **_result_of(result))

    assert await events_store.append(me, again(first, 10, content="changed")) == first
    assert await events_store.append(me, again(call, 11)) == bound
    assert await events_store.append(me, again(result, 12)) == bound  # a result's retry: the call it was bound to
    assert await events_store.append(me, again(result, 13, type="user_message", call_id=None)) == bound

    assert await everything(events_store, me) == [first, bound]
    assert await events_store.session(me, "user:1", "s1") == before


async def test_a_request_id_is_one_request_only_for_its_subject_in_its_session(
    events_store: EventStore, me: NamespaceScope
) -> None:
    first = event(1)
    other_subject = again(first, 2, subject="agent-2")
    other_session = again(first, 3, session_id="s2")
    without = [again(replace(first, request_id=None), n) for n in (4, 5)]
    for e in (first, other_subject, other_session, *without):
        assert await events_store.append(me, e) == e

    assert await everything(events_store, me) == [first, other_subject, *without]
    assert await everything(events_store, me, "s2") == [other_session]


async def test_of_concurrent_appends_of_one_request_under_different_ids_one_is_stored(
    events_store: EventStore, me: NamespaceScope
) -> None:
    attempts = [again(event(1), n / 1000) for n in range(20)]
    answers: list[Event] = []

    async def append(e: Event) -> None:
        answers.append(await events_store.append(me, e))

    async with anyio.create_task_group() as tg:
        for e in attempts:
            tg.start_soon(append, e)

    [stored] = await everything(events_store, me)
    assert stored in attempts
    assert answers == [stored] * len(attempts)
    record = await events_store.session(me, "user:1", "s1")
    assert record is not None and record.events == 1


async def test_an_import_keeps_events_sharing_a_request_id_and_an_append_then_finds_the_first(
    events_store: EventStore, me: NamespaceScope
) -> None:
    first = event(1)
    twin = again(first, 2, content="recorded twice before issue #32")

    assert await events_store.import_(me, [first, twin], []) == EventCounts(events=2)
    assert await events_store.append(me, again(first, 3)) == first
    assert await everything(events_store, me) == [first, twin]


async def test_concurrent_appends_to_one_session_all_land_in_id_order(
    events_store: EventStore, me: NamespaceScope
) -> None:
    made = [event(n / 1000) for n in range(40)]

    async with anyio.create_task_group() as tg:
        for e in made:
            tg.start_soon(events_store.append, me, e)

    assert await everything(events_store, me) == made
    record = await events_store.session(me, "user:1", "s1")
    assert record is not None
    assert (record.events, record.last_event_at) == (40, made[-1].recorded_at)


async def test_an_event_the_store_cannot_order_or_keep_is_refused(events_store: EventStore, me: NamespaceScope) -> None:
    good = event(1)
    for bad in (
        replace(good, id="not-a-uuid"),
        replace(good, id=good.id.upper()),
        replace(good, recorded_at=good.recorded_at.replace(tzinfo=None)),
        replace(good, metadata={"x": float("nan")}),
        replace(good, session_id=""),
    ):
        with pytest.raises(InvalidArgument):
            await events_store.append(me, bad)
    assert await everything(events_store, me) == []


CONTENTS = [
    "user: 帮我查一下北京到上海的航班，要明天上午的，最好国航 ✈️👩🏽‍💻",
    "NUL \x00 in the middle, \x00\x00 twice, and at the end \x00",
    "quotes \" ' \\ and newlines \n\r\t and a BOM \ufeff and RTL \u202e",
    "x" * 65_536,
]


@pytest.mark.parametrize("content", CONTENTS, ids=["chinese-emoji", "nul", "escapes", "64kb"])
async def test_any_text_and_json_metadata_round_trip_exactly(
    events_store: EventStore, me: NamespaceScope, content: str
) -> None:
    metadata = {"text": content, "nested": {"list": [1, 2.5, -0.0, None, True, "\x00"], "big": 2**70}, "🔑": "値"}
    call = event(1, kind="tool_call", call="c\x00🙂", task="t ✓", content=content, metadata=metadata)
    result = event(2, kind="tool_result", call="c\x00🙂", content=content, metadata=metadata)
    await events_store.append(me, call)
    await events_store.append(me, result)

    [stored] = await events_store.events(me, "user:1", "s1", task_id="t ✓")

    assert stored == replace(call, **_result_of(result))
    assert stored.content == content
    assert stored.result_metadata == metadata


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=16,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=st.text(), metadata=st.dictionaries(st.text(max_size=10), JSON, max_size=6), task=st.text(max_size=20))
async def test_arbitrary_text_and_json_metadata_round_trip_exactly(
    events_store: EventStore, me: NamespaceScope, content: str, metadata: dict[str, Any], task: str
) -> None:
    session = f"s-{uuid.uuid4().hex}"
    made = event(1, session=session, task=task, content=content, metadata=metadata)
    await events_store.append(me, made)

    assert await events_store.events(me, "user:1", session, task_id=task) == [made]
    [exported_session] = [s for s in await exported(events_store, me, "user:1") if s.session.session_id == session]
    assert exported_session.events == [made]


# -- session records ---------------------------------------------------------------------------------------------


async def test_the_session_record_counts_stored_events_and_follows_the_latest_one(
    events_store: EventStore, me: NamespaceScope
) -> None:
    assert await events_store.session(me, "user:1", "s1") is None
    await events_store.append(me, event(10))
    await events_store.append(me, event(20))
    await events_store.append(me, event(5))  # recorded late but older: last_event_at does not move back

    record = await events_store.session(me, "user:1", "s1")

    assert record is not None
    assert (record.namespace, record.session_id, record.status, record.goal) == ("user:1", "s1", "active", None)
    assert (record.started_at, record.last_event_at, record.events) == (at(10), at(20), 3)
    assert (record.ended_at, record.end_reason, record.extracted_through, record.archive) == (None, None, None, None)


async def test_start_session_creates_a_session_and_reactivates_an_ended_one(
    events_store: EventStore, me: NamespaceScope
) -> None:
    started = await events_store.start_session(me, "user:1", "s1", "book a flight", at(0))
    assert (started.status, started.goal, started.started_at, started.last_event_at, started.events) == (
        "active",
        "book a flight",
        at(0),
        at(0),
        0,
    )
    again = await events_store.start_session(me, "user:1", "s1", None, at(5))
    assert (again.goal, again.started_at, again.last_event_at) == ("book a flight", at(0), at(5))
    archive = {"state": {"city": "上海"}, "turns": [{"role": "user", "content": "hi"}]}
    await events_store.end_session(me, "user:1", "s1", at(10), "ended", archive)

    reactivated = await events_store.start_session(me, "user:1", "s1", "book a hotel", at(20))

    assert (reactivated.status, reactivated.ended_at, reactivated.end_reason) == ("active", None, None)
    assert (reactivated.goal, reactivated.last_event_at, reactivated.archive) == ("book a hotel", at(20), archive)
    assert await events_store.session(me, "user:1", "s1") == reactivated


async def test_an_event_appended_to_an_ended_session_makes_it_active_again(
    events_store: EventStore, me: NamespaceScope
) -> None:
    first = event(1)
    await events_store.append(me, first)
    await events_store.mark_extracted(me, "user:1", "s1", first.id)
    await events_store.end_session(me, "user:1", "s1", at(2), "ended", None)

    await events_store.append(me, event(3))

    record = await events_store.session(me, "user:1", "s1")
    assert record is not None
    assert (record.status, record.ended_at, record.end_reason, record.events) == ("active", None, None, 2)
    assert [s.session_id for s in await events_store.sessions(me, "user:1", status="active")] == ["s1"]
    assert await events_store.sessions(me, "user:1", status="ended") == []


async def test_of_two_concurrent_enders_exactly_one_gets_the_record(
    events_store: EventStore, me: NamespaceScope
) -> None:
    sessions = [f"s{n}" for n in range(10)]
    for sid in sessions:
        await events_store.append(me, event(1, session=sid))
    winners: dict[str, list[str]] = {sid: [] for sid in sessions}

    async def end(sid: str, who: str) -> None:
        record = await events_store.end_session(me, "user:1", sid, at(9), "ended", {"by": who})
        if record is not None:
            assert (record.status, record.archive, record.end_reason, record.ended_at) == (
                "ended",
                {"by": who},
                "ended",
                at(9),
            )
            winners[sid].append(who)

    async with anyio.create_task_group() as tg:
        for sid in sessions:
            tg.start_soon(end, sid, "a")
            tg.start_soon(end, sid, "b")

    assert all(len(w) == 1 for w in winners.values()), winners
    assert await events_store.end_session(me, "user:1", "s0", at(10), "idle", None) is None
    assert await events_store.end_session(me, "user:1", "never-started", at(10), "idle", None) is None
    assert [s.session_id for s in await events_store.sessions(me, "user:1", status="ended")] == sessions


async def test_ending_without_an_archive_keeps_the_previous_archive(
    events_store: EventStore, me: NamespaceScope
) -> None:
    await events_store.start_session(me, "user:1", "s1", None, at(0))
    await events_store.end_session(me, "user:1", "s1", at(1), "ended", {"turns": [1]})
    await events_store.append(me, event(2))

    ended = await events_store.end_session(me, "user:1", "s1", at(3), "idle", None)

    assert ended is not None
    assert (ended.archive, ended.end_reason, ended.ended_at, ended.events) == ({"turns": [1]}, "idle", at(3), 1)


async def test_mark_extracted_only_moves_forward(events_store: EventStore, me: NamespaceScope) -> None:
    made = [event(n) for n in range(3)]
    for e in made:
        await events_store.append(me, e)

    await events_store.mark_extracted(me, "user:1", "s1", made[1].id)
    await events_store.mark_extracted(me, "user:1", "s1", made[0].id)
    await events_store.mark_extracted(me, "user:1", "missing", made[0].id)
    with pytest.raises(InvalidArgument):
        await events_store.mark_extracted(me, "user:1", "s1", made[2].id.upper())

    record = await events_store.session(me, "user:1", "s1")
    assert record is not None
    assert record.extracted_through == made[1].id
    assert await events_store.session(me, "user:1", "missing") is None


async def test_sessions_are_listed_by_session_id_and_status_in_pages(
    events_store: EventStore, me: NamespaceScope
) -> None:
    ids = [f"s{n:02d}" for n in range(12)]
    for sid in reversed(ids):
        await events_store.start_session(me, "user:1", sid, None, at(0))
    for sid in ids[::3]:
        await events_store.end_session(me, "user:1", sid, at(1), "ended", None)

    pages, after = [], None
    while page := await events_store.sessions(me, "user:1", after=after, limit=5):
        pages.append([s.session_id for s in page])
        after = page[-1].session_id

    assert pages == [ids[0:5], ids[5:10], ids[10:12]]
    assert [s.session_id for s in await events_store.sessions(me, "user:1", status="ended")] == ids[::3]
    active = await events_store.sessions(me, "user:1", status="active", after="s04", limit=3)
    assert [s.session_id for s in active] == ["s05", "s07", "s08"]


async def test_idle_sessions_are_the_active_ones_of_that_tenant_last_touched_before_the_cutoff(
    events_store: EventStore, acme: str, globex: str
) -> None:
    writer = scope(acme, write=["user:1", "user:2"])
    await events_store.append(writer, event(10, session="old"))
    await events_store.append(writer, event(20, namespace="user:2", session="older"))
    await events_store.append(writer, event(10, session="ended"))
    await events_store.end_session(writer, "user:1", "ended", at(11), "ended", None)
    await events_store.append(writer, event(100, session="recent"))
    await events_store.start_session(writer, "user:1", "restarted", None, at(5))
    await events_store.start_session(writer, "user:1", "restarted", None, at(200))
    await events_store.append(scope(globex, write=["user:1"]), event(1, session="other-tenant"))

    idle = await events_store.idle_sessions(scope(acme, admin=True), at(50), limit=10)

    assert [(s.namespace, s.session_id) for s in idle] == [("user:1", "old"), ("user:2", "older")]
    assert [s.session_id for s in await events_store.idle_sessions(scope(acme, admin=True), at(50), limit=1)] == ["old"]
    with pytest.raises(NamespaceForbidden):
        await events_store.idle_sessions(writer, at(50), limit=10)
    assert set(await events_store.tenants()) >= {acme, globex}


# -- scope -------------------------------------------------------------------------------------------------------


async def test_another_tenant_sees_nothing_and_writes_only_its_own_sessions(
    events_store: EventStore, acme: str, globex: str
) -> None:
    mine, theirs = scope(acme, write=["user:1"]), scope(globex, write=["user:1"])
    own = event(1, task="t")
    await events_store.append(mine, own)
    await events_store.start_session(mine, "user:1", "s1", "mine", at(0))

    assert await events_store.events(theirs, "user:1", "s1") == []
    assert await events_store.events(theirs, "user:1", "s1", task_id="t") == []
    assert await events_store.session(theirs, "user:1", "s1") is None
    assert await events_store.sessions(theirs, "user:1") == []
    assert await exported(events_store, theirs, "user:1") == []
    assert await events_store.idle_sessions(scope(globex, admin=True), at(1000), 10) == []
    assert await events_store.end_session(theirs, "user:1", "s1", at(5), "ended", None) is None
    assert await events_store.purge(scope(globex, admin=True), "user:1") == EventCounts(0, 0)

    theirs_event = replace(own, content="theirs", task_id=None)  # the same id in the other tenant
    assert await events_store.append(theirs, theirs_event) == theirs_event
    assert [e.content for e in await everything(events_store, mine)] == ["event 1"]
    record = await events_store.session(mine, "user:1", "s1")
    assert record is not None
    assert (record.status, record.goal, record.events) == ("active", "mine", 1)


async def test_namespaces_and_session_ids_never_share_a_session(events_store: EventStore, acme: str) -> None:
    writer = scope(acme, write=["user:1", "user"])
    await events_store.append(writer, event(1, namespace="user:1", session="s1", task="a"))
    await events_store.append(writer, event(2, namespace="user", session="1:s1", task="a"))
    await events_store.append(writer, event(3, namespace="user:1", session="s1:task:=a"))

    assert [e.content for e in await everything(events_store, writer, "s1", "user:1")] == ["event 1"]
    assert [e.content for e in await everything(events_store, writer, "1:s1", "user")] == ["event 2"]
    assert [e.content for e in await events_store.events(writer, "user:1", "s1", task_id="a")] == ["event 1"]
    assert [s.session_id for s in await events_store.sessions(writer, "user")] == ["1:s1"]


async def test_a_read_only_grant_reads_but_cannot_write_and_an_ungranted_namespace_is_neither(
    events_store: EventStore, acme: str
) -> None:
    writer, reader = scope(acme, write=["shared:team"]), scope(acme, read=["shared:team"])
    made = event(1, namespace="shared:team")
    await events_store.append(writer, made)

    assert await events_store.events(reader, "shared:team", "s1") == [made]
    assert await events_store.session(reader, "shared:team", "s1") is not None
    attempts = [
        lambda who, ns: events_store.append(who, replace(event(2), namespace=ns)),
        lambda who, ns: events_store.start_session(who, ns, "s1", "goal", at(3)),
        lambda who, ns: events_store.end_session(who, ns, "s1", at(3), "ended", None),
        lambda who, ns: events_store.mark_extracted(who, ns, "s1", made.id),
        lambda who, ns: events_store.import_(who, [replace(event(4), namespace=ns)], []),
        lambda who, ns: events_store.purge(who, ns),
    ]
    for attempt in attempts:
        with pytest.raises(NamespaceForbidden):
            await attempt(reader, "shared:team")
        with pytest.raises(NamespaceForbidden):
            await attempt(reader, "user:9")
    for read in (
        events_store.events(reader, "user:9", "s1"),
        events_store.session(reader, "user:9", "s1"),
        events_store.sessions(reader, "user:9"),
        exported(events_store, reader, "user:9"),
    ):
        with pytest.raises(NamespaceForbidden):
            await read
    assert await events_store.events(reader, "shared:team", "s1") == [made]
    record = await events_store.session(reader, "shared:team", "s1")
    assert record is not None
    assert (record.status, record.events, record.extracted_through) == ("active", 1, None)


# -- purge, export, import, retention ----------------------------------------------------------------------------


async def test_purge_removes_one_namespaces_events_and_sessions_and_nothing_else(
    events_store: EventStore, acme: str
) -> None:
    writer, admin = scope(acme, write=["user:1", "user:2"]), scope(acme, admin=True)
    for sid in ("a", "b"):
        await events_store.append(writer, event(1, session=sid, task="t"))
        await events_store.append(writer, event(2, session=sid, kind="tool_call", call="c"))
        await events_store.append(writer, event(3, session=sid, kind="tool_result", call="c"))
    await events_store.start_session(writer, "user:1", "empty", None, at(0))
    await events_store.append(writer, event(1, namespace="user:2"))

    with pytest.raises(NamespaceForbidden):
        await events_store.purge(writer, "user:1")
    removed = await events_store.purge(admin, "user:1")

    assert removed == EventCounts(events=4, sessions=3)
    assert await events_store.sessions(admin, "user:1") == []
    assert await everything(events_store, admin, "a") == []
    assert await events_store.events(admin, "user:1", "a", task_id="t") == []
    assert await events_store.idle_sessions(admin, at(1000), 10) == [await events_store.session(admin, "user:2", "s1")]
    assert len(await everything(events_store, admin, "s1", "user:2")) == 1
    fresh = event(5, session="a", kind="tool_result", call="c")  # no stale call binding survives the purge
    assert await events_store.append(writer, fresh) == fresh
    assert await events_store.purge(admin, "user:1") == EventCounts(events=1, sessions=1)


async def test_export_then_import_into_an_empty_store_round_trips_exactly(
    events_store: EventStore, acme: str, globex: str
) -> None:
    source, target = scope(acme, write=["user:1"]), scope(globex, write=["user:1"])
    await events_store.start_session(source, "user:1", "done", "find flights", at(0))
    await events_store.append(source, event(1, session="done", task="t1"))
    call = event(2, session="done", kind="tool_call", call="c1", task="t1")
    await events_store.append(source, call)
    await events_store.append(source, event(3, session="done", kind="tool_result", call="c1"))
    await events_store.append(source, event(4, session="done", kind="tool_result", call="orphan"))
    await events_store.mark_extracted(source, "user:1", "done", call.id)
    await events_store.end_session(source, "user:1", "done", at(5), "ended", {"state": {"k": [1, "二"]}, "turns": []})
    await events_store.append(source, event(6, session="live", content="still going"))
    await events_store.start_session(source, "user:1", "quiet", None, at(7))
    original = await exported(events_store, source, "user:1")
    assert [(s.session.session_id, len(s.events)) for s in original] == [("done", 3), ("live", 1), ("quiet", 0)]

    events = [e for s in original for e in s.events]
    imported = await events_store.import_(target, events, [s.session for s in original])

    assert imported == EventCounts(events=4, sessions=3)
    assert await exported(events_store, target, "user:1") == original
    assert await events_store.import_(target, events, [s.session for s in original]) == EventCounts(0, 0)
    assert await exported(events_store, target, "user:1") == original
    [idle] = await events_store.idle_sessions(scope(globex, admin=True), at(6.5), 10)
    assert idle.session_id == "live"
    late = event(8, session="done", kind="tool_result", call="c1")  # the imported call keeps its result
    assert await events_store.append(target, late) == late


async def test_importing_events_without_their_session_records_creates_them_as_appends_would(
    events_store: EventStore, me: NamespaceScope
) -> None:
    made = [event(n, session="s9") for n in (3, 1, 2)]

    assert await events_store.import_(me, made, []) == EventCounts(events=3, sessions=0)

    record = await events_store.session(me, "user:1", "s9")
    assert record is not None
    assert (record.status, record.started_at, record.last_event_at, record.events) == ("active", at(3), at(3), 3)
    assert await events_store.events(me, "user:1", "s9") == sorted(made, key=lambda e: e.id)


async def test_expire_drops_old_events_of_ended_sessions_but_never_an_active_sessions(
    events_store: EventStore, acme: str, globex: str
) -> None:
    writer, other = scope(acme, write=["user:1"]), scope(globex, write=["user:1"])
    for n in (1, 2):
        await events_store.append(writer, event(n, session="active", task="t"))
        await events_store.append(writer, event(n, session="long-ended", task="t"))
        await events_store.append(other, event(n, session="ended-recently", task="t"))
    await events_store.append(writer, event(3, session="long-ended", kind="tool_call", call="c"))
    await events_store.append(writer, event(4, session="long-ended", kind="tool_result", call="c"))
    await events_store.end_session(writer, "user:1", "long-ended", at(10), "ended", {"turns": ["kept until then"]})
    await events_store.append(other, event(200, session="ended-recently"))
    await events_store.end_session(other, "user:1", "ended-recently", at(300), "idle", {"turns": ["still kept"]})

    dropped = await events_store.expire(at(100))

    assert dropped == EventCounts(events=5, sessions=1)
    assert len(await everything(events_store, writer, "active")) == 2
    assert len(await events_store.events(writer, "user:1", "active", task_id="t")) == 2
    assert await events_store.session(writer, "user:1", "long-ended") is None
    assert await everything(events_store, writer, "long-ended") == []
    recent = await events_store.session(other, "user:1", "ended-recently")
    assert recent is not None
    assert (recent.archive, recent.events) == ({"turns": ["still kept"]}, 3)
    assert [e.recorded_at for e in await everything(events_store, other, "ended-recently")] == [at(200)]
    assert await events_store.events(other, "user:1", "ended-recently", task_id="t") == []
    assert await events_store.expire(at(100)) == EventCounts(0, 0)

    assert await events_store.expire(at(250)) == EventCounts(events=1, sessions=0)
    recent = await events_store.session(other, "user:1", "ended-recently")
    assert recent is not None
    assert recent.archive == {"turns": ["still kept"]}  # it ended at 300, after the cutoff
    assert await events_store.expire(at(400)) == EventCounts(events=0, sessions=1)
    assert await events_store.session(other, "user:1", "ended-recently") is None
    assert len(await everything(events_store, writer, "active")) == 2


async def test_expire_drops_the_archive_of_a_session_that_ended_before_the_cutoff_but_keeps_newer_events(
    events_store: EventStore, me: NamespaceScope
) -> None:
    await events_store.start_session(me, "user:1", "s1", None, at(0))
    await events_store.end_session(me, "user:1", "s1", at(10), "ended", {"turns": []})
    imported = replace(event(500), id=new_memory_id(int(at(5).timestamp() * 1000)))  # recorded after its end
    await events_store.import_(me, [imported], [])

    assert await events_store.expire(at(100)) == EventCounts(0, 0)

    record = await events_store.session(me, "user:1", "s1")
    assert record is not None
    assert (record.status, record.archive) == ("ended", None)
    assert await everything(events_store, me) == [imported]
    assert await events_store.expire(at(1000)) == EventCounts(events=1, sessions=1)


# -- erasing a subject -------------------------------------------------------------------------------------------


def by(subject: str, made: Event) -> Event:
    return replace(made, subject=subject)


async def test_erasing_a_subject_removes_its_events_in_every_namespace_and_keeps_other_subjects_events(
    events_store: EventStore, acme: str
) -> None:
    writer, admin = scope(acme, write=["user:1", "user:2"]), scope(acme, admin=True)
    gone = [event(1, task="t"), event(3, kind="tool_call", call="c"), event(5, namespace="user:2", session="s2")]
    decoy = event(4, content=',"subject":"agent-1","request":', metadata={"a": 1, "subject": "agent-1", "request": 2})
    kept = [by("agent-2", event(2, task="t")), by("agent-2", decoy), by("agent-10", event(6))]
    elsewhere = by("agent-2", event(7, namespace="user:2", session="s2"))
    for made in (*gone, *kept, elsewhere):
        await events_store.append(writer, made)

    erased = await events_store.erase_subject(admin, "agent-1")

    assert erased == (EventCounts(events=3, sessions=0), [("user:1", "s1"), ("user:2", "s2")])
    assert await everything(events_store, admin) == kept
    assert await events_store.events(admin, "user:1", "s1", task_id="t") == [kept[0]]
    assert await everything(events_store, admin, "s2", "user:2") == [elsewhere]
    record = await events_store.session(admin, "user:1", "s1")
    assert record is not None and record.events == 3
    assert await exported(events_store, admin, "user:1") == [SessionExport(record, kept)]
    assert await events_store.erase_subject(admin, "agent-1") == (EventCounts(0, 0), [])


async def test_a_session_left_with_no_event_by_an_erase_is_removed_and_counted(
    events_store: EventStore, acme: str
) -> None:
    writer, admin = scope(acme, write=["user:1"]), scope(acme, admin=True)
    await events_store.append(writer, event(1, session="only-mine"))
    await events_store.append(writer, event(2, session="only-mine", task="t", kind="tool_call", call="c"))
    await events_store.append(writer, event(3, session="ended-mine"))
    await events_store.end_session(writer, "user:1", "ended-mine", at(4), "ended", {"turns": ["mine"]})
    await events_store.start_session(writer, "user:1", "no-events", None, at(5))
    await events_store.append(writer, by("agent-2", event(6, session="shared")))
    await events_store.append(writer, event(7, session="shared"))

    erased = await events_store.erase_subject(admin, "agent-1")

    touched = [("user:1", "ended-mine"), ("user:1", "only-mine"), ("user:1", "shared")]
    assert erased == (EventCounts(events=4, sessions=2), touched)
    assert [s.session_id for s in await events_store.sessions(admin, "user:1")] == ["no-events", "shared"]
    assert await events_store.sessions(admin, "user:1", status="ended") == []
    assert [s.session_id for s in await events_store.idle_sessions(admin, at(1000), 10)] == ["no-events", "shared"]
    for session in ("only-mine", "ended-mine"):
        assert await events_store.session(admin, "user:1", session) is None
        assert await everything(events_store, admin, session) == []
    assert await events_store.events(admin, "user:1", "only-mine", task_id="t") == []
    assert await events_store.expire(at(1000)) == EventCounts(0, 0)
    fresh = event(8, session="only-mine", kind="tool_result", call="c")  # no stale call binding survives the erase
    assert await events_store.append(writer, fresh) == fresh
    record = await events_store.session(admin, "user:1", "only-mine")
    assert record is not None
    assert (record.status, record.started_at, record.events) == ("active", at(8), 1)


async def test_a_bound_tool_result_goes_with_its_call_and_the_call_index_falls_back_to_the_call_left(
    events_store: EventStore, acme: str
) -> None:
    writer, admin = scope(acme, write=["user:1"]), scope(acme, admin=True)
    older_call = by("agent-2", event(1, kind="tool_call", call="c"))
    my_call = event(2, kind="tool_call", call="c")
    their_result = by("agent-2", event(3, kind="tool_result", call="c"))  # bound into my call (the latest "c")
    their_call = by("agent-2", event(4, kind="tool_call", call="d"))
    my_result = event(5, kind="tool_result", call="d")  # bound into their call: the result stays with it
    for made in (older_call, my_call, their_result, their_call, my_result):
        await events_store.append(writer, made)

    assert await events_store.erase_subject(admin, "agent-1") == (EventCounts(events=1), [("user:1", "s1")])

    answered = replace(their_call, **_result_of(my_result))
    assert await everything(events_store, admin) == [older_call, answered]
    record = await events_store.session(admin, "user:1", "s1")
    assert record is not None and record.events == 2
    rebound = replace(older_call, **_result_of(their_result))  # its retry binds to the call left for "c"
    assert await events_store.append(writer, their_result) == rebound
    assert await everything(events_store, admin) == [rebound, answered]


async def test_an_append_after_the_erase_with_a_request_id_the_erased_subject_used_stores_a_new_event(
    events_store: EventStore, acme: str
) -> None:
    writer, admin = scope(acme, write=["user:1"]), scope(acme, admin=True)
    first = event(1)
    theirs = again(first, 2, subject="agent-2")  # the same request id, another subject
    call = by("agent-2", event(3, kind="tool_call", call="c"))
    result = event(4, kind="tool_result", call="c")  # bound into another subject's call, with its request id
    for made in (first, theirs, call, result):
        await events_store.append(writer, made)

    await events_store.erase_subject(admin, "agent-1")

    retry, result_retry = again(first, 10), again(result, 11)
    assert await events_store.append(writer, retry) == retry
    assert await events_store.append(writer, result_retry) == result_retry  # the call has its result: own event
    assert await events_store.append(writer, again(theirs, 12)) == theirs
    assert await everything(events_store, admin) == [theirs, replace(call, **_result_of(result)), retry, result_retry]
    record = await events_store.session(admin, "user:1", "s1")
    assert record is not None and record.events == 4


async def test_erasing_a_subject_leaves_other_tenants_untouched_even_those_whose_names_start_alike(
    events_store: EventStore, acme: str, globex: str
) -> None:
    made = {tenant: event(1, task="t") for tenant in (acme, f"{acme}.x", f"{acme}.x.y", globex)}
    for tenant, e in made.items():
        await events_store.append(scope(tenant, write=["user:1"]), e)

    erased = await events_store.erase_subject(scope(f"{acme}.x", admin=True), "agent-1")

    assert erased == (EventCounts(events=1, sessions=1), [("user:1", "s1")])
    for tenant, e in made.items():
        reader = scope(tenant, read=["user:1"])
        left = [] if tenant == f"{acme}.x" else [e]
        assert await everything(events_store, reader) == left
        assert await events_store.events(reader, "user:1", "s1", task_id="t") == left
        assert (await events_store.session(reader, "user:1", "s1") is None) == (not left)


async def test_a_scope_without_admin_cannot_erase_a_subject(events_store: EventStore, acme: str) -> None:
    writer = scope(acme, write=["user:1"])
    made = event(1)
    await events_store.append(writer, made)

    with pytest.raises(NamespaceForbidden):
        await events_store.erase_subject(writer, "agent-1")
    assert await everything(events_store, writer) == [made]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(subjects=st.lists(st.text(max_size=12), min_size=1, max_size=6), task=st.text(max_size=8))
async def test_erasing_any_subject_removes_exactly_the_events_it_recorded(
    events_store: EventStore, subjects: list[str], task: str
) -> None:
    tenant = f"t-{uuid.uuid4().hex}"
    writer, admin = scope(tenant, write=["user:1"]), scope(tenant, admin=True)
    erased = subjects[0]
    spelled = json.dumps(erased, ensure_ascii=False)  # other events spell the erased subject's field everywhere
    made = [
        by(
            subject,
            event(
                n,
                task=task,
                content=f',"subject":{spelled},"request":',
                metadata={"subject": erased, "request": None, "x": f'"subject":{spelled}'},
            ),
        )
        for n, subject in enumerate(subjects)
    ]
    for e in made:
        await events_store.append(writer, e)

    counts, touched = await events_store.erase_subject(admin, erased)

    left = [e for e in made if e.subject != erased]
    assert counts == EventCounts(events=len(made) - len(left), sessions=0 if left else 1)
    assert touched == [("user:1", "s1")]
    assert await everything(events_store, admin) == left
    assert await events_store.events(admin, "user:1", "s1", task_id=task) == left


# -- backend-specific --------------------------------------------------------------------------------------------

CHILD = """
import asyncio, os, signal, sys
from datetime import datetime
from pathlib import Path
from memory.events import Event, SqliteEventStore
from tenancy import SCOPE_WRITE, Principal, scope_for

async def main() -> None:
    path, event_id, tenant, moment = sys.argv[1:5]
    store = SqliteEventStore.open(Path(path))
    grants = {"write_namespaces": ("user:1",), "scopes": frozenset({SCOPE_WRITE})}
    who = scope_for(Principal(subject="a", tenant=tenant, **grants))
    at = datetime.fromisoformat(moment)
    event = Event(event_id, "user:1", "s1", None, "user_message", "said just before the crash", {}, at, at, "a", None,
                  None, None)
    await store.append(who, event)
    os.kill(os.getpid(), signal.SIGKILL)

asyncio.run(main())
"""


async def test_a_sqlite_append_survives_a_kill_of_its_process_right_after_it_returned(
    tmp_path: Path, acme: str
) -> None:
    path = tmp_path / "events.sqlite3"
    made = event(1, content="said just before the crash", metadata={})
    made = replace(made, subject="a", request_id=None)
    command = [sys.executable, "-c", CHILD, str(path), made.id, acme, made.recorded_at.isoformat()]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    done = await anyio.run_process(command, env=env, cwd=ROOT, check=False)

    assert done.returncode == -9, done.stderr.decode()
    store = SqliteEventStore.open(path)
    try:
        assert await store.events(scope(acme, read=["user:1"]), "user:1", "s1") == [made]
    finally:
        await store.close()


async def test_a_locked_or_closed_sqlite_file_is_backend_unavailable(tmp_path: Path, me: NamespaceScope) -> None:
    path = tmp_path / "events.sqlite3"
    store = SqliteEventStore.open(path, busy_timeout_seconds=0.05)
    other = sqlite3.connect(path, isolation_level=None)
    try:
        other.execute("BEGIN EXCLUSIVE")
        with pytest.raises(BackendUnavailable):
            await store.append(me, event(1))
        other.execute("ROLLBACK")
        await store.append(me, event(1))
    finally:
        other.close()
        await store.close()
    with pytest.raises(BackendUnavailable):
        await store.ping()


def fast_failing_client(url: str) -> redis.asyncio.Redis:
    """A client that reports a dead server at once instead of retrying for seconds."""
    return redis.asyncio.Redis.from_url(url, retry=Retry(NoBackoff(), 0), socket_timeout=2, socket_connect_timeout=2)


async def test_redis_down_is_backend_unavailable_and_the_same_store_recovers(
    own_redis: RedisServer, me: NamespaceScope, admin: NamespaceScope
) -> None:
    store = RedisEventStore(fast_failing_client(own_redis.url))
    first = event(1)
    await store.append(me, first)
    own_redis.stop()
    try:
        calls = [
            store.append(me, event(2)),
            store.events(me, "user:1", "s1"),
            store.session(me, "user:1", "s1"),
            store.sessions(me, "user:1"),
            store.start_session(me, "user:1", "s2", None, at(0)),
            store.end_session(me, "user:1", "s1", at(3), "ended", None),
            store.mark_extracted(me, "user:1", "s1", first.id),
            store.idle_sessions(admin, at(10), 10),
            store.tenants(),
            store.purge(admin, "user:1"),
            store.import_(me, [event(4)], []),
            store.expire(at(10)),
            store.ping(),
        ]
        for call in calls:
            with pytest.raises(BackendUnavailable):
                await call
    finally:
        own_redis.start()
    await store.append(me, event(5))
    assert [e.content for e in await store.events(me, "user:1", "s1")] == ["event 5"]  # a fresh server
    await store.close()


async def test_every_redis_key_of_a_tenant_carries_its_hash_tag(redis_url: str, acme: str) -> None:
    store = RedisEventStore(RedisTarget(redis_url, cluster=False).client())
    writer = scope(acme, write=["user:1"])
    await store.append(writer, event(1, task="t"))
    await store.append(writer, event(2, kind="tool_call", call="c", task="t"))
    await store.append(writer, event(3, kind="tool_result", call="c"))
    await store.start_session(writer, "user:1", "s2", "goal", at(0))
    await store.end_session(writer, "user:1", "s2", at(4), "ended", {"turns": []})
    await store.close()

    client = redis.Redis.from_url(redis_url)
    keys = sorted(k.decode() for k in client.keys("*"))
    client.close()

    assert [k for k in keys if not k.startswith(f"hs:{{{acme}}}:ev:")] == ["hs:ev:tenants"]
    assert len(keys) > 10
    assert not [k for k in keys if json.dumps(k) != f'"{k}"']


async def test_retention_removes_the_request_index_of_the_events_it_drops(redis_target: RedisTarget, acme: str) -> None:
    store = RedisEventStore(redis_target.client())
    writer = scope(acme, write=["user:1"])
    old, kept = event(1), event(200)
    call, result = event(2, kind="tool_call", call="c"), event(3, kind="tool_result", call="c")
    for e in (old, call, result, kept):
        await store.append(writer, e)
    await store.end_session(writer, "user:1", "s1", at(300), "ended", None)

    assert await store.expire(at(100)) == EventCounts(events=2)

    client = redis_target.client()
    fields = sorted(f.decode() for f in await client.hkeys(f"hs:{{{acme}}}:ev:s:user%3A1:s1:ev"))
    await client.aclose()
    assert fields == sorted([kept.id, f"k:{kept.id}", f"q:req-200 {kept.subject}"])
    assert await store.append(writer, again(old, 400)) != old  # its request is forgotten with it: a new event
    await store.close()


V1_SCHEMA = """
CREATE TABLE events (
    tenant TEXT NOT NULL, namespace TEXT NOT NULL, session_id TEXT NOT NULL, id TEXT NOT NULL,
    task_id TEXT, type TEXT NOT NULL, call_id TEXT, recorded_us INTEGER NOT NULL,
    body TEXT NOT NULL, result TEXT, result_id TEXT,
    UNIQUE (tenant, namespace, session_id, id)
);
CREATE TABLE sessions (
    tenant TEXT NOT NULL, namespace TEXT NOT NULL, session_id TEXT NOT NULL,
    status TEXT NOT NULL, goal TEXT, started_us INTEGER NOT NULL, last_event_us INTEGER NOT NULL,
    ended_us INTEGER, events INTEGER NOT NULL, extracted_through TEXT, archive TEXT, end_reason TEXT,
    PRIMARY KEY (tenant, namespace, session_id)
);
PRAGMA user_version = 1;
"""


async def test_a_sqlite_file_of_version_1_gets_the_request_index_of_the_events_it_holds(
    tmp_path: Path, me: NamespaceScope
) -> None:
    path = tmp_path / "events.sqlite3"
    old = event(1)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript(V1_SCHEMA)
    row = (me.tenant, "user:1", "s1", old.id, None, old.type, None, 0, encode_event(old))
    conn.execute("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL)", row)
    conn.close()

    store = SqliteEventStore.open(path)
    try:
        assert await store.append(me, again(old, 5)) == old
        assert await everything(store, me) == [old]
    finally:
        await store.close()
    store = SqliteEventStore.open(path)  # opened again: nothing left to migrate
    await store.close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone() == (2,)
    conn.close()


async def test_erasing_a_subject_leaves_no_redis_key_or_field_of_its_events(
    redis_target: RedisTarget, acme: str
) -> None:
    store = RedisEventStore(redis_target.client())
    writer, admin = scope(acme, write=["user:1"]), scope(acme, admin=True)
    kept = by("agent-2", event(1))
    for made in (
        kept,
        event(2, task="t", kind="tool_call", call="c"),
        by("agent-2", event(3, kind="tool_result", call="c")),
        event(4, session="mine", task="t", kind="tool_call", call="c"),
    ):
        await store.append(writer, made)

    assert await store.erase_subject(admin, "agent-1") == (
        EventCounts(events=2, sessions=1),
        [("user:1", "mine"), ("user:1", "s1")],
    )

    client = redis_target.client()
    prefix = f"hs:{{{acme}}}:ev:s:user%3A1"
    fields = sorted(f.decode() if isinstance(f, bytes) else f for f in await client.hkeys(f"{prefix}:s1:ev"))
    task_keys = [f"{prefix}:{s}:task:=t" for s in ("s1", "mine")]
    mine = [f"{prefix}:mine:{k}" for k in ("rec", "ev", "ids", "age", "calls", "tasks")]
    left = [await client.exists(k) for k in (*task_keys, *mine, f"{prefix}:s1:calls", f"{prefix}:s1:tasks")]
    await client.aclose()
    assert fields == sorted([kept.id, f"k:{kept.id}", f"q:req-1 {kept.subject}"])
    assert left == [0] * len(left)
    await store.close()


async def test_an_erase_leaves_no_erased_text_in_the_sqlite_file_or_its_log(tmp_path: Path, acme: str) -> None:
    path = tmp_path / "events.sqlite3"
    store = SqliteEventStore.open(path)
    writer, admin = scope(acme, write=["user:1"]), scope(acme, admin=True)
    secret = "the erased subject's secret 4f1c9"
    await store.append(writer, event(1, content=secret, metadata={"note": secret}))
    await store.append(writer, by("agent-2", event(2)))

    assert await store.erase_subject(admin, "agent-1") == (EventCounts(events=1), [("user:1", "s1")])

    stored = _bytes_of_files(tmp_path, "events.sqlite3")  # the file, its log and shared memory, before closing
    await store.close()
    assert secret.encode() not in stored


def _bytes_of_files(directory: Path, prefix: str) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(directory.iterdir()) if p.name.startswith(prefix))

"""`RedisEventStore` on a real Redis Cluster through a failover (issue #32, item 4): while writers record events
with request ids, the primary serving their tenant hands over to its replica (`CLUSTER FAILOVER`). A writer retries
an append that failed as `record_event` does (the same request id under a new event id), and afterwards every
request is retried once more as a retry whose answer was lost would be. Every request's event is stored exactly
once, under the id of its first stored append, and nothing acknowledged is missing."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime

import anyio
import anyio.to_thread
import pytest

from memory.errors import BackendUnavailable
from memory.events import Event, RedisEventStore
from memory.ids import new_memory_id
from tests.memory.conftest import scope
from tests.redis_server import RedisClusterServer, RedisTarget
from tests.tenancy.test_redis_cluster_failover import tenants_on

pytestmark = pytest.mark.anyio

WRITERS = 4
BEFORE_FAILOVER = 60  # acknowledged appends before the failover starts
AFTER_FAILOVER = 10  # appends of each writer after it ended
ATTEMPTS = 200  # one request's attempts through the failover


def attempt(writer: int, n: int) -> Event:
    """One attempt of request n of a writer, as `AgentSessions.record` builds it: a new id every time."""
    now = datetime.now(UTC)
    return Event(
        id=new_memory_id(int(now.timestamp() * 1000)),
        namespace="user:1",
        session_id=f"s{writer}",
        task_id=None,
        type="user_message",
        content=f"writer {writer} step {n}",
        metadata={},
        occurred_at=now,
        recorded_at=now,
        subject="agent-1",
        request_id=f"req-{writer}-{n}",
        call_id=None,
        tool=None,
    )


@dataclass
class Tally:
    acknowledged: dict[str, str] = field(default_factory=dict)  # request id -> the event id its answer named
    retried: int = 0


async def test_events_recorded_through_a_failover_and_retried_are_stored_once_each(
    redis_cluster: RedisClusterServer, redis_cluster_url: str
) -> None:
    primary, replicas = next(iter(redis_cluster.masters().items()))
    tenant = tenants_on(redis_cluster, primary, 1)[0]
    writer_scope = scope(tenant, read=["user:1"], write=["user:1"])
    store = RedisEventStore(RedisTarget(redis_cluster_url, cluster=True).client())
    tally = Tally()
    calls: dict[int, int] = {}
    enough_before, failover_done = anyio.Event(), anyio.Event()

    async def record(writer: int, n: int) -> None:
        for tries in range(ATTEMPTS):
            try:
                stored = await store.append(writer_scope, attempt(writer, n))
            except BackendUnavailable:
                continue  # the reply was lost, or the slot is moving: retried under a new id
            tally.acknowledged[stored.request_id or ""] = stored.id
            tally.retried += tries > 0
            return
        raise AssertionError(f"req-{writer}-{n} failed {ATTEMPTS} times")

    async def writer(number: int) -> None:
        after = 0
        for n in range(10_000):
            if failover_done.is_set() and after >= AFTER_FAILOVER:
                break
            after += failover_done.is_set()
            await record(number, n)
            calls[number] = n + 1
            if len(tally.acknowledged) >= BEFORE_FAILOVER:
                enough_before.set()

    async def failover() -> None:
        await enough_before.wait()
        await anyio.to_thread.run_sync(redis_cluster.failover, replicas[0])
        failover_done.set()

    with anyio.fail_after(120):
        async with anyio.create_task_group() as group:
            group.start_soon(failover)
            for number in range(WRITERS):
                group.start_soon(writer, number)
        for number in range(WRITERS):  # every request retried once more: its answer was lost
            for n in range(calls[number]):
                again = await store.append(writer_scope, attempt(number, n))
                assert again.id == tally.acknowledged[f"req-{number}-{n}"]

    assert redis_cluster.info(replicas[0], "replication")["role"] == "master"
    stored = [
        e for number in range(WRITERS) for e in await store.events(writer_scope, "user:1", f"s{number}", limit=1000)
    ]
    counts = Counter(e.request_id for e in stored)
    print(f"\nfailover: {sum(calls.values())} requests, {tally.retried} retried; {len(stored)} events stored")
    assert sorted(counts) == sorted(tally.acknowledged)
    assert set(counts.values()) == {1}  # no duplicate
    assert {e.id for e in stored} == set(tally.acknowledged.values())  # nothing acknowledged is missing
    for number in range(WRITERS):
        record_of = await store.session(writer_scope, "user:1", f"s{number}")
        assert record_of is not None and record_of.events == calls[number]
    await store.close()

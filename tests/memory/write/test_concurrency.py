"""Concurrent writes of one namespace serialise: the same content written at once leaves one live memory, new
values of one attribute leave one current value, and a forget racing a restore leaves an origin and its copies
agreeing. With the Redis lock, two engines (two gateway replicas) over one store serialise the same way."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import pytest
import redis.asyncio

from memory.clock import ManualClock
from memory.embedders import WordLlamaEmbedder
from memory.errors import BackendUnavailable
from memory.locking import InProcessNamespaceLocks
from memory.locking.redis_lock import RedisNamespaceLocks, lock_key
from memory.models import Memory
from memory.ports import NamespaceLocks
from memory.requests import ListRequest, WriteRequest
from memory.scope import NamespaceScope
from memory.service import MemoryService
from memory.stores.edge import EdgeVectorStore
from ops.redis_client import open_redis
from tests.memory.conftest import scope
from tests.redis_server import RedisServer

pytestmark = pytest.mark.anyio

EngineFactory = Callable[[], MemoryService]


@pytest.fixture(params=["in_process", "redis", "redis_cluster"])
async def engines(
    request: pytest.FixtureRequest, store: EdgeVectorStore, embedder: WordLlamaEmbedder, clock: ManualClock
) -> AsyncIterator[list[MemoryService]]:
    """Two engines over one store: one process sharing its in-process locks, or two replicas sharing Redis (a
    single server or a 3-primary cluster)."""
    if request.param == "in_process":
        locks = InProcessNamespaceLocks()
        yield [MemoryService(store, embedder, clock, locks=locks) for _ in range(2)]
        return
    if request.param == "redis":
        client = redis.asyncio.Redis.from_url(request.getfixturevalue("redis_url"))
    else:
        client = open_redis(request.getfixturevalue("redis_cluster_url"), cluster=True, timeout_seconds=5)
    try:
        yield [MemoryService(store, embedder, clock, locks=RedisNamespaceLocks(client)) for _ in range(2)]
    finally:
        await client.aclose()


async def at_once(*calls: Callable[[], Any]) -> None:
    with anyio.fail_after(60):
        async with anyio.create_task_group() as group:
            for call in calls:
                group.start_soon(call)


def write(service: MemoryService, who: NamespaceScope, content: str, **kwargs: Any) -> Callable[[], Any]:
    return lambda: service.write(who, WriteRequest(content=content, subject="agent-1", **kwargs))


async def memories(service: MemoryService, who: NamespaceScope, namespace: str) -> list[Memory]:
    page = await service.list(who, ListRequest(namespace=namespace, include_deleted=True, limit=200))
    return page.memories


def live(found: list[Memory]) -> list[str]:
    return [m.content for m in found if m.deleted_at is None and m.superseded_by is None]


async def test_the_same_content_written_eight_times_at_once_is_stored_once(
    engines: list[MemoryService], acme: str
) -> None:
    me = scope(acme, write=["user:1"])

    await at_once(*(write(engines[i % 2], me, "The deploy target is AWS eu-west-1") for i in range(8)))

    assert live(await memories(engines[0], me, "user:1")) == ["The deploy target is AWS eu-west-1"]


async def test_new_values_of_one_attribute_written_at_once_leave_one_current_value(
    engines: list[MemoryService], acme: str
) -> None:
    me = scope(acme, write=["user:1"])
    cities = ["Berlin", "Paris", "Lisbon", "Madrid"]

    await at_once(*(write(engines[i % 2], me, f"I live in {city}") for i, city in enumerate(cities)))

    found = await memories(engines[0], me, "user:1")
    assert len(found) == 4
    assert len(live(found)) == 1
    current = next(m for m in found if m.superseded_by is None)
    chain = {m.id: m.superseded_by for m in found}
    for memory in found:  # every older value leads to the current one
        step, hops = memory.id, 0
        while chain[step] is not None and hops < 4:
            step, hops = str(chain[step]), hops + 1
        assert step == current.id


async def test_a_forget_racing_a_restore_leaves_an_origin_and_its_copies_agreeing(
    engines: list[MemoryService], acme: str
) -> None:
    both = scope(acme, write=["user:1", "team:1", "team:2"])
    first = await engines[0].write(
        both, WriteRequest(content="The user lives in Lisbon", subject="agent-1", share_to=["team:1", "team:2"])
    )
    origin = first.memory.id

    for _ in range(30):
        await at_once(lambda: engines[0].forget(both, origin), lambda: engines[1].restore(both, origin))
        states = {
            m.deleted_at is None for ns in ("user:1", "team:1", "team:2") for m in await memories(engines[0], both, ns)
        }
        assert len(states) == 1


async def test_a_namespace_lock_held_too_long_answers_a_retryable_error() -> None:
    locks = InProcessNamespaceLocks(wait_seconds=0.05)
    held, done = anyio.Event(), anyio.Event()

    async def holder() -> None:
        async with locks.hold("acme", "user:1"):
            held.set()
            await done.wait()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(holder)
            await held.wait()
            with pytest.raises(BackendUnavailable):
                async with locks.hold("acme", "user:1"):
                    pass
            async with locks.hold("acme", "user:2"):  # other namespaces are not held up
                pass
            done.set()
    assert locks.held() == 0


async def test_a_redis_namespace_lock_of_a_crashed_holder_ends_with_its_lease(redis_url: str) -> None:
    client = redis.asyncio.Redis.from_url(redis_url)
    try:
        await client.set(lock_key("acme", "user:1"), "a-crashed-replica", px=100)
        locks: NamespaceLocks = RedisNamespaceLocks(client, wait_seconds=5)
        with anyio.fail_after(5):
            async with locks.hold("acme", "user:1"):
                assert await client.get(lock_key("acme", "user:1")) != b"a-crashed-replica"
        assert await client.exists(lock_key("acme", "user:1")) == 0
        await client.set(lock_key("acme", "user:1"), "a-live-replica", px=60_000)
        with pytest.raises(BackendUnavailable):
            async with RedisNamespaceLocks(client, wait_seconds=0.05).hold("acme", "user:1"):
                pass
        assert await client.get(lock_key("acme", "user:1")) == b"a-live-replica"  # never released by another
    finally:
        await client.aclose()


async def test_a_lock_taken_just_before_redis_froze_is_left_to_its_lease_without_waiting_a_deadline(
    own_redis: RedisServer,
) -> None:
    client = open_redis(own_redis.url, cluster=False, timeout_seconds=5)
    locks = RedisNamespaceLocks(client, wait_seconds=5, lease_seconds=1, release_seconds=0.3)
    with contextlib.ExitStack() as freezing:
        async with locks.hold("acme", "user:1"):
            freezing.enter_context(own_redis.freeze())  # Redis hangs while the write holds the lock
            started = time.monotonic()
        took = time.monotonic() - started  # the release, made while Redis hangs
    with anyio.fail_after(5):  # Redis is back: the lease (1 s) ends the lock that was not released
        async with locks.hold("acme", "user:1"):
            pass
    await client.aclose()
    assert took < 0.3 + 0.5, took  # not the client's 5 s deadline

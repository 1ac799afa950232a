"""The Redis stores on a real Redis Cluster through a failover: while writers stream idempotent calls (claim,
append a working-memory turn, store the answer) and rate-limit takes at tenants served by one primary, that
primary's replica takes over (`CLUSTER FAILOVER`). Afterwards every acknowledged call replays its stored answer
without running again, every acknowledged turn is in its session, the rate limit allowed exactly the bucket's
capacity, and the calls that failed during the failover failed with the retryable `BackendUnavailable`.
When a primary dies instead (SIGKILL, then `CLUSTER FAILOVER TAKEOVER` on its replica), its calls fail with
`BackendUnavailable` until the replica has taken over, and then every replicated write is there."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import anyio.to_thread
import pytest
from redis.crc import key_slot

from memory.clock import ManualClock
from memory.errors import BackendUnavailable
from memory.models import Turn
from memory.working.redis_store import RedisWorkingMemory
from tenancy.idempotency import RedisIdempotency, run_claimed
from tenancy.limits import Bucket, IdempotencyKey, Replay, Started, tenant_prefix
from tenancy.rate_limits import RedisRateLimiter
from tests.memory.conftest import scope
from tests.redis_server import RedisClusterServer, RedisTarget

pytestmark = pytest.mark.anyio

WRITERS = 8
BEFORE_FAILOVER = 120  # acknowledged calls before the failover starts
AFTER_FAILOVER = 20  # calls of each writer after it ended
CAPACITY = 400  # rate-limit takes, one per call: writers go on until 100 more than this were made
MAX_CALLS_PER_WRITER = 5_000
ATTEMPTS = 20  # a client's retries of one call that failed with BackendUnavailable
START = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass
class Tally:
    acknowledged: dict[IdempotencyKey, dict[str, Any]] = field(default_factory=dict)
    executions: dict[IdempotencyKey, int] = field(default_factory=dict)
    attempts: int = 0
    retryable_errors: int = 0
    allowed: int = 0
    refused: int = 0
    take_errors: int = 0
    during_failover: int = 0  # calls acknowledged while the failover ran


def tenants_on(cluster: RedisClusterServer, primary: int, count: int) -> list[str]:
    """Tenant ids whose keys (`hs:{tenant}:...`) live on `primary`'s slots."""
    ranges = cluster.slots_of(primary)
    found = []
    for n in range(100_000):
        tenant = f"tenant-{n}"
        if any(low <= key_slot(f"{{{tenant}}}".encode()) <= high for low, high in ranges):
            found.append(tenant)
            if len(found) == count:
                return found
    raise AssertionError("no tenant on that primary")


async def test_a_failover_during_writes_loses_no_acknowledged_write_and_keeps_idempotency_and_limits_exact(
    redis_cluster: RedisClusterServer, redis_cluster_url: str
) -> None:
    primary, replicas = next(iter(redis_cluster.masters().items()))
    tenants = tenants_on(redis_cluster, primary, 4)
    client = RedisTarget(redis_cluster_url, cluster=True).client()
    idempotency = RedisIdempotency(client, wait_timeout_seconds=10, lease_seconds=5)
    limiter = RedisRateLimiter(client)
    working = RedisWorkingMemory(client, ManualClock(START))
    prefix = tenant_prefix(tenants[0])
    buckets = [Bucket(f"{prefix}:rl:s:agent:write", CAPACITY, 1e-6), Bucket(f"{prefix}:rl:t:write", 10_000, 1e-6)]
    tally = Tally()
    enough_before = anyio.Event()
    failover_started = anyio.Event()
    failover_done = anyio.Event()

    async def call(writer: int, n: int) -> None:
        tenant = tenants[writer % len(tenants)]
        me = scope(tenant, write=["user:1"])
        key = IdempotencyKey(tenant, f"agent-{writer}", "record_turn", f"req-{writer}-{n}")
        turn = Turn(role="user", content=f"w{writer} turn {n}", occurred_at=START + timedelta(seconds=n))

        async def operation() -> dict[str, Any]:
            tally.executions[key] = tally.executions.get(key, 0) + 1
            session, _ = await working.append_turn(me, "user:1", f"s{writer}", turn, window=1000, ttl_seconds=3600)
            return {"turns": len(session.turns), "content": turn.content}

        for _ in range(ATTEMPTS):  # as the gateway runs it (gateway/tools/idempotent.py), retried by a client
            tally.attempts += 1
            try:
                claim = await idempotency.begin(key, "fp")
                if isinstance(claim, Replay):
                    tally.acknowledged[key] = claim.response
                    return
                assert claim == Started()
                try:
                    body = await run_claimed(idempotency, key, operation)
                except BackendUnavailable:
                    await idempotency.abandon(key)
                    raise
                await idempotency.complete(key, "fp", body)
                tally.acknowledged[key] = body
                tally.during_failover += failover_started.is_set() and not failover_done.is_set()
                return
            except BackendUnavailable:
                tally.retryable_errors += 1
        raise AssertionError(f"{key} failed {ATTEMPTS} times")

    async def take() -> None:
        try:
            decision = await limiter.acquire(buckets)
        except BackendUnavailable:
            tally.take_errors += 1
            return
        if decision.allowed:
            tally.allowed += 1
        else:
            tally.refused += 1

    calls_of: dict[int, int] = {}

    def finished(after: int) -> bool:
        takes = tally.allowed + tally.refused + tally.take_errors
        return failover_done.is_set() and after >= AFTER_FAILOVER and takes >= CAPACITY + 100

    async def writer(number: int) -> None:
        after = 0
        for n in range(MAX_CALLS_PER_WRITER):
            if finished(after):
                break
            after += failover_done.is_set()
            await call(number, n)
            calls_of[number] = n + 1
            await take()
            if len(tally.acknowledged) >= BEFORE_FAILOVER:
                enough_before.set()

    async def failover() -> None:
        await enough_before.wait()
        started = time.monotonic()
        failover_started.set()
        await anyio.to_thread.run_sync(redis_cluster.failover, replicas[0])
        failover_seconds.append(time.monotonic() - started)
        failover_done.set()

    failover_seconds: list[float] = []
    with anyio.fail_after(120):
        async with anyio.create_task_group() as tg:
            tg.start_soon(failover)
            for number in range(WRITERS):
                tg.start_soon(writer, number)

    assert redis_cluster.info(replicas[0], "replication")["role"] == "master"
    assert primary in redis_cluster.masters()[replicas[0]]  # the old primary now replicates the new one
    acknowledged = len(tally.acknowledged)
    print(
        f"\nfailover {failover_seconds[0]:.2f} s; calls {sum(calls_of.values())}, attempts {tally.attempts}, "
        f"acknowledged {acknowledged} ({tally.during_failover} during the failover), "
        f"retryable errors {tally.retryable_errors}; "
        f"takes allowed {tally.allowed}, refused {tally.refused}, failed {tally.take_errors}"
    )
    assert acknowledged == sum(calls_of.values())
    assert tally.during_failover > 0

    # idempotency: every acknowledged call replays its answer; none ran twice
    for key, answer in tally.acknowledged.items():
        assert await idempotency.begin(key, "fp") == Replay(answer)
    assert set(tally.executions.values()) == {1}

    # no acknowledged turn is lost, none is doubled
    for number in range(WRITERS):
        tenant = tenants[number % len(tenants)]
        session = await working.get(scope(tenant, read=["user:1"]), "user:1", f"s{number}")
        assert session is not None
        assert [t.content for t in session.turns] == [f"w{number} turn {n}" for n in range(calls_of[number])]

    # rate limits: exactly the capacity was allowed
    assert tally.take_errors == 0
    assert tally.allowed == CAPACITY
    assert tally.refused == sum(calls_of.values()) - CAPACITY
    await client.aclose()


async def test_while_a_dead_primary_is_replaced_calls_fail_retryably_and_replicated_writes_survive(
    redis_cluster: RedisClusterServer, redis_cluster_url: str
) -> None:
    primary, replicas = next(iter(redis_cluster.masters().items()))
    tenant = tenants_on(redis_cluster, primary, 1)[0]
    me = scope(tenant, read=["user:1"], write=["user:1"])
    client = RedisTarget(redis_cluster_url, cluster=True).client()
    idempotency = RedisIdempotency(client, wait_timeout_seconds=10, lease_seconds=5)
    working = RedisWorkingMemory(client, ManualClock(START))
    limiter = RedisRateLimiter(client)
    bucket = Bucket(f"{tenant_prefix(tenant)}:rl:t:write", 100, 1e-6)

    def key(n: int) -> IdempotencyKey:
        return IdempotencyKey(tenant, "agent", "record_turn", f"req-{n}")

    async def call(n: int) -> dict[str, Any]:
        """One idempotent turn, as the gateway runs it; BackendUnavailable leaves no claim behind it."""
        claim = await idempotency.begin(key(n), "fp")
        if isinstance(claim, Replay):
            return claim.response
        turn = Turn(role="user", content=f"turn {n}", occurred_at=START + timedelta(seconds=n))
        session, _ = await working.append_turn(me, "user:1", "s", turn, window=1000, ttl_seconds=3600)
        body = {"turns": len(session.turns)}
        await idempotency.complete(key(n), "fp", body)
        return body

    answers = {n: await call(n) for n in range(20)}
    assert (await limiter.acquire([bucket])).allowed
    redis_cluster.wait_replicated(primary)

    redis_cluster.kill(primary)
    failures = 0
    dead_at = time.monotonic()
    with anyio.fail_after(60):
        for n in range(20, 25):
            with pytest.raises(BackendUnavailable):
                await call(n)
            failures += 1
        with pytest.raises(BackendUnavailable):
            await limiter.acquire([bucket])
        failures += 1
        failing_seconds = (time.monotonic() - dead_at) / failures

        await anyio.to_thread.run_sync(redis_cluster.takeover, replicas[0])
        for _ in range(200):  # bounded: until the client has found the new primary
            try:
                answers[20] = await call(20)
                break
            except BackendUnavailable:
                failures += 1
        else:
            raise AssertionError("the promoted replica never answered")
        for n in range(21, 25):
            answers[n] = await call(n)
        await anyio.to_thread.run_sync(redis_cluster.revive, primary)
    print(f"\ndead primary: {failures} calls failed with BackendUnavailable ({failing_seconds:.2f} s each)")

    assert [await call(n) for n in range(25)] == [answers[n] for n in range(25)]  # replays
    session = await working.get(me, "user:1", "s")
    assert session is not None
    assert [t.content for t in session.turns] == [f"turn {n}" for n in range(25)]  # each once, none lost
    assert [(await limiter.acquire([bucket])).allowed for _ in range(100)].count(True) == 99
    await client.aclose()

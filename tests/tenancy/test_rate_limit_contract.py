"""The `RateLimiter` contract, run against `InProcessRateLimiter` and `RedisRateLimiter` (on a real
redis-server and on a real Redis Cluster): token buckets per key, consumed all-or-nothing across the buckets of
one call, which share the tenant's hash tag (one cluster slot)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import redis.asyncio
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from memory.errors import BackendUnavailable
from tenancy.limits import Bucket, RateDecision, RateLimiter, tenant_prefix
from tenancy.rate_limits import InProcessRateLimiter, RedisRateLimiter
from tests.redis_server import RedisServer, RedisTarget
from tests.tenancy.signing import FakeMonotonic

pytestmark = pytest.mark.anyio

ALLOWED = RateDecision(allowed=True, retry_after_seconds=0.0)
MAX_ATTEMPTS = 10_000  # bounded polling against a real server's clock


def bucket(tenant: str, name: str, capacity: float, refill_per_second: float) -> Bucket:
    return Bucket(f"{tenant_prefix(tenant)}:rl:{name}", capacity, refill_per_second)


@pytest.fixture(params=["in_process", "redis", "redis_cluster"])
async def limiter(request: pytest.FixtureRequest) -> AsyncIterator[RateLimiter]:
    made: RateLimiter
    if request.param == "in_process":
        made = InProcessRateLimiter(clock=FakeMonotonic())
    elif request.param == "redis":
        made = RedisRateLimiter(RedisTarget(request.getfixturevalue("redis_url"), cluster=False).client())
    else:
        made = RedisRateLimiter(RedisTarget(request.getfixturevalue("redis_cluster_url"), cluster=True).client())
    yield made
    await made.close()


@pytest.fixture
async def redis_limiter(redis_target: RedisTarget) -> AsyncIterator[RedisRateLimiter]:
    made = RedisRateLimiter(redis_target.client())
    yield made
    await made.close()


async def test_a_burst_gets_exactly_capacity_calls_and_the_rest_wait_about_one_refill_interval(
    limiter: RateLimiter,
) -> None:
    writes = bucket("acme", "w:sub:agent-1", capacity=5, refill_per_second=0.5)

    decisions = [await limiter.acquire([writes]) for _ in range(10)]

    assert decisions[:5] == [ALLOWED] * 5
    refused = decisions[5:]
    assert not any(d.allowed for d in refused)
    assert all(1.9 < d.retry_after_seconds <= 2.0 for d in refused)


async def test_in_process_buckets_refill_as_the_injected_clock_advances() -> None:
    clock = FakeMonotonic()
    limiter = InProcessRateLimiter(clock=clock)
    reads = bucket("acme", "r:sub:agent-1", capacity=2, refill_per_second=4)
    assert [(await limiter.acquire([reads])).allowed for _ in range(3)] == [True, True, False]

    clock.advance(0.25)
    assert [(await limiter.acquire([reads])).allowed for _ in range(2)] == [True, False]

    clock.advance(60)  # refills up to capacity, no further
    assert [(await limiter.acquire([reads])).allowed for _ in range(3)] == [True, True, False]


async def test_in_process_retry_after_is_the_time_until_a_token_is_back() -> None:
    clock = FakeMonotonic()
    limiter = InProcessRateLimiter(clock=clock)
    reads = bucket("acme", "r:sub:agent-1", capacity=1, refill_per_second=2)
    await limiter.acquire([reads])
    clock.advance(0.2)

    refused = await limiter.acquire([reads])

    assert refused.retry_after_seconds == pytest.approx(0.3)
    clock.advance(refused.retry_after_seconds)
    assert await limiter.acquire([reads]) == ALLOWED


async def test_redis_buckets_refill_in_server_time(redis_limiter: RedisRateLimiter) -> None:
    fast = bucket("acme", "r:sub:agent-1", capacity=2, refill_per_second=1000)

    for _ in range(MAX_ATTEMPTS):
        refused = await redis_limiter.acquire([fast])
        if not refused.allowed:
            break
    else:
        pytest.fail("a fast bucket was never empty")
    assert 0 < refused.retry_after_seconds <= 0.001

    for _ in range(MAX_ATTEMPTS):
        if (await redis_limiter.acquire([fast])).allowed:
            break
    else:
        pytest.fail("a fast bucket never refilled")


async def test_redis_buckets_expire_after_twice_their_refill_time(redis_target: RedisTarget) -> None:
    client = redis_target.client()
    limiter = RedisRateLimiter(client)
    slow = bucket("acme", "w:tenant", capacity=10, refill_per_second=0.5)

    await limiter.acquire([slow])

    assert 39_000 < await client.pttl(slow.key) <= 40_000
    await limiter.close()


async def test_when_one_bucket_is_empty_no_bucket_is_consumed(limiter: RateLimiter) -> None:
    tenant = bucket("acme", "w:tenant", capacity=1, refill_per_second=0.01)
    subject = bucket("acme", "w:sub:agent-1", capacity=3, refill_per_second=0.01)
    assert await limiter.acquire([tenant, subject]) == ALLOWED

    refusals = [await limiter.acquire([tenant, subject]) for _ in range(5)]

    assert not any(d.allowed for d in refusals)
    assert [(await limiter.acquire([subject])).allowed for _ in range(3)] == [True, True, False]


async def test_retry_after_is_the_longest_wait_of_the_empty_buckets(limiter: RateLimiter) -> None:
    tenant = bucket("acme", "w:tenant", capacity=1, refill_per_second=1)
    subject = bucket("acme", "w:sub:agent-1", capacity=1, refill_per_second=0.25)
    other = bucket("acme", "w:sub:other", capacity=10, refill_per_second=1)
    await limiter.acquire([tenant, subject])

    refused = await limiter.acquire([tenant, subject, other])

    assert not refused.allowed
    assert 3.9 < refused.retry_after_seconds <= 4.0


async def test_an_empty_bucket_of_one_tenant_does_not_limit_another_tenant(limiter: RateLimiter) -> None:
    acme = bucket("acme", "w:tenant", capacity=2, refill_per_second=0.01)
    globex = bucket("globex", "w:tenant", capacity=2, refill_per_second=0.01)
    assert [(await limiter.acquire([acme])).allowed for _ in range(3)] == [True, True, False]

    assert [(await limiter.acquire([globex])).allowed for _ in range(3)] == [True, True, False]


async def test_a_subject_bucket_and_its_tenant_bucket_are_taken_together_on_every_backend(
    limiter: RateLimiter,
) -> None:
    subject = bucket("acme", "s:agent-1:write", capacity=3, refill_per_second=0.001)
    tenant = bucket("acme", "t:write", capacity=2, refill_per_second=0.001)

    assert [(await limiter.acquire([subject, tenant])).allowed for _ in range(3)] == [True, True, False]


async def test_buckets_of_two_tenants_in_one_call_are_refused_before_any_is_taken(limiter: RateLimiter) -> None:
    acme = bucket("acme", "t:write", capacity=1, refill_per_second=0.001)
    globex = bucket("globex", "t:write", capacity=1, refill_per_second=0.001)

    with pytest.raises(ValueError, match="hash tag"):
        await limiter.acquire([acme, globex])

    assert await limiter.acquire([acme]) == ALLOWED
    assert await limiter.acquire([globex]) == ALLOWED


async def test_a_call_with_no_buckets_is_allowed(limiter: RateLimiter) -> None:
    assert await limiter.acquire([]) == ALLOWED


async def test_redis_down_is_backend_unavailable_and_the_same_client_recovers(own_redis: RedisServer) -> None:
    client = redis.asyncio.Redis.from_url(own_redis.url, retry=Retry(NoBackoff(), 0), socket_timeout=2)
    limiter = RedisRateLimiter(client)
    writes = bucket("acme", "w:tenant", capacity=5, refill_per_second=1)
    assert await limiter.acquire([writes]) == ALLOWED

    own_redis.stop()
    with pytest.raises(BackendUnavailable):
        await limiter.acquire([writes])
    with pytest.raises(BackendUnavailable):
        await limiter.ping()

    own_redis.start()
    assert await limiter.acquire([writes]) == ALLOWED
    await limiter.close()


async def test_a_call_costing_n_tokens_takes_n_and_one_over_the_capacity_leaves_a_debt(limiter: RateLimiter) -> None:
    batch = bucket("acme", "s:batch", capacity=5, refill_per_second=0.001)
    big = bucket("acme", "s:big", capacity=5, refill_per_second=0.001)

    taken = [(await limiter.acquire([batch], cost)).allowed for cost in (3, 3, 2)]
    over_capacity = await limiter.acquire([big], 8)  # a full bucket lets a batch over its burst through
    in_debt = await limiter.acquire([big])

    assert taken == [True, False, True]
    assert over_capacity == ALLOWED
    assert not in_debt.allowed
    assert in_debt.retry_after_seconds == pytest.approx(4 / 0.001, rel=0.01)  # from -3 back to one token


# --- costs known after the fact: `charge` (issue #32, CPU budgets) -------------------------------------------


async def test_a_charge_takes_its_cost_whatever_the_bucket_holds_and_acquire_waits_out_the_debt(
    limiter: RateLimiter,
) -> None:
    cpu = bucket("acme", "cpu:s:agent-1", capacity=500, refill_per_second=0.001)
    other = bucket("acme", "cpu:s:agent-2", capacity=500, refill_per_second=0.001)

    assert await limiter.acquire([cpu]) == ALLOWED  # 499 left
    await limiter.charge([cpu], 1_499)  # a call that spent three times the bucket: 1,000 in debt
    refused = await limiter.acquire([cpu])

    assert not refused.allowed
    assert refused.retry_after_seconds == pytest.approx(1_001 / 0.001, rel=0.01)  # from -1000 back to one token
    assert await limiter.acquire([other]) == ALLOWED  # another subject's bucket is untouched


async def test_a_charge_of_nothing_changes_nothing_and_a_negative_one_is_refused(limiter: RateLimiter) -> None:
    cpu = bucket("acme", "cpu:t", capacity=2, refill_per_second=0.001)

    await limiter.charge([cpu], 0)
    with pytest.raises(ValueError, match="charge"):
        await limiter.charge([cpu], -1)

    assert [(await limiter.acquire([cpu])).allowed for _ in range(3)] == [True, True, False]


async def test_a_charge_takes_from_the_subject_and_the_tenant_bucket_together(limiter: RateLimiter) -> None:
    subject = bucket("acme", "cpu:s:agent-1", capacity=100, refill_per_second=0.001)
    tenant = bucket("acme", "cpu:t", capacity=300, refill_per_second=0.001)
    sibling = bucket("acme", "cpu:s:agent-2", capacity=100, refill_per_second=0.001)

    await limiter.charge([subject, tenant], 350)

    assert not (await limiter.acquire([subject])).allowed
    assert not (await limiter.acquire([sibling, tenant])).allowed  # the tenant's debt stops its other subjects
    assert await limiter.acquire([sibling]) == ALLOWED


async def test_in_process_a_debt_is_repaid_as_the_injected_clock_advances() -> None:
    clock = FakeMonotonic()
    limiter = InProcessRateLimiter(clock=clock)
    cpu = bucket("acme", "cpu:s:agent-1", capacity=500, refill_per_second=250)  # 250 ms of CPU per second

    await limiter.charge([cpu], 1_000)  # from 500 to -500
    clock.advance(2.0)  # back to 0: still short of one

    refused = await limiter.acquire([cpu])
    assert refused.retry_after_seconds == pytest.approx(1 / 250)
    clock.advance(refused.retry_after_seconds)
    assert await limiter.acquire([cpu]) == ALLOWED


async def test_redis_keeps_a_charged_bucket_until_its_debt_is_refilled(redis_target: RedisTarget) -> None:
    client = redis_target.client()
    limiter = RedisRateLimiter(client)
    cpu = bucket("acme", "cpu:t", capacity=500, refill_per_second=250)

    await limiter.charge([cpu], 2_000)  # -1,500: 8 s to refill completely, kept twice that

    assert 15_000 < await client.pttl(cpu.key) <= 16_000
    refused = await limiter.acquire([cpu])
    assert 5.9 < refused.retry_after_seconds <= 6.01  # from -1,500 back to one
    await limiter.close()

"""The `IdempotencyStore` contract, run against `InProcessIdempotency` and `RedisIdempotency` (on a real
redis-server): first call starts, retries replay, other arguments conflict, racing retries run the tool once."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import pytest
import redis.asyncio
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from memory.errors import BackendUnavailable
from tenancy.idempotency import InProcessIdempotency, RedisIdempotency
from tenancy.limits import Claim, Conflict, IdempotencyKey, IdempotencyStore, Replay, Started
from tests.redis_server import RedisServer
from tests.tenancy.signing import FakeMonotonic

pytestmark = pytest.mark.anyio

StoreFactory = Callable[..., IdempotencyStore]

KEY = IdempotencyKey(tenant="acme", subject="agent-1", tool="remember", request_id="req-1")
RESPONSE: dict[str, Any] = {"status": "created", "memory": {"id": "m1", "tags": ["a", "b"], "importance": 0.7}}


@pytest.fixture(params=["in_process", "redis"])
async def make_store(request: pytest.FixtureRequest) -> AsyncIterator[StoreFactory]:
    """Build stores of the parametrized kind (keyword arguments go to the constructor); closed after the test."""
    made: list[IdempotencyStore] = []
    url: str | None = request.getfixturevalue("redis_url") if request.param == "redis" else None

    def factory(**kwargs: Any) -> IdempotencyStore:
        store: IdempotencyStore
        if url is None:
            store = InProcessIdempotency(clock=FakeMonotonic(), **kwargs)
        else:
            store = RedisIdempotency(redis.asyncio.Redis.from_url(url), **kwargs)
        made.append(store)
        return store

    yield factory
    for store in made:
        await store.close()


@pytest.fixture
def store(make_store: StoreFactory) -> IdempotencyStore:
    return make_store(wait_timeout_seconds=10)


async def test_the_first_call_with_a_key_starts(store: IdempotencyStore) -> None:
    assert await store.begin(KEY, "fp-1") == Started()


async def test_a_retry_after_completion_replays_the_stored_response(store: IdempotencyStore) -> None:
    await store.begin(KEY, "fp-1")
    await store.complete(KEY, "fp-1", RESPONSE)

    assert await store.begin(KEY, "fp-1") == Replay(RESPONSE)
    assert await store.begin(KEY, "fp-1") == Replay(RESPONSE)


async def test_the_same_key_with_other_arguments_is_a_conflict(store: IdempotencyStore) -> None:
    await store.begin(KEY, "fp-1")
    assert await store.begin(KEY, "fp-2") == Conflict()  # while the first call is in flight: no waiting

    await store.complete(KEY, "fp-1", RESPONSE)

    assert await store.begin(KEY, "fp-2") == Conflict()


async def test_a_second_completion_does_not_replace_the_first_response(store: IdempotencyStore) -> None:
    await store.begin(KEY, "fp-1")
    await store.complete(KEY, "fp-1", RESPONSE)
    await store.complete(KEY, "fp-1", {"status": "other"})

    assert await store.begin(KEY, "fp-1") == Replay(RESPONSE)


async def test_a_call_racing_an_in_flight_one_waits_and_replays_its_response(store: IdempotencyStore) -> None:
    assert await store.begin(KEY, "fp-1") == Started()
    results: list[Claim] = []

    async def retry() -> None:
        results.append(await store.begin(KEY, "fp-1"))

    async with anyio.create_task_group() as tg:
        tg.start_soon(retry)
        await anyio.wait_all_tasks_blocked()
        assert results == []
        await store.complete(KEY, "fp-1", RESPONSE)

    assert results == [Replay(RESPONSE)]


async def test_of_a_hundred_racing_calls_exactly_one_runs_and_the_others_replay_its_response(
    store: IdempotencyStore,
) -> None:
    claims: list[Claim] = []
    release = anyio.Event()

    async def call() -> None:
        claim = await store.begin(KEY, "fp-1")
        claims.append(claim)
        if isinstance(claim, Started):
            await release.wait()
            await store.complete(KEY, "fp-1", RESPONSE)

    async with anyio.create_task_group() as tg:
        for _ in range(100):
            tg.start_soon(call)
        await anyio.wait_all_tasks_blocked()
        release.set()

    assert len(claims) == 100
    assert claims.count(Started()) == 1
    assert [claim for claim in claims if claim != Started()] == [Replay(RESPONSE)] * 99


async def test_abandoning_a_claim_lets_the_next_call_start(store: IdempotencyStore) -> None:
    await store.begin(KEY, "fp-1")
    await store.abandon(KEY)

    assert await store.begin(KEY, "fp-1") == Started()


async def test_a_waiting_call_takes_over_a_claim_that_is_abandoned(store: IdempotencyStore) -> None:
    await store.begin(KEY, "fp-1")
    results: list[Claim] = []

    async def retry() -> None:
        results.append(await store.begin(KEY, "fp-1"))

    async with anyio.create_task_group() as tg:
        tg.start_soon(retry)
        await anyio.wait_all_tasks_blocked()
        await store.abandon(KEY)

    assert results == [Started()]


async def test_abandon_leaves_a_completed_record_alone(store: IdempotencyStore) -> None:
    await store.begin(KEY, "fp-1")
    await store.complete(KEY, "fp-1", RESPONSE)
    await store.abandon(KEY)

    assert await store.begin(KEY, "fp-1") == Replay(RESPONSE)


async def test_keys_of_other_tenants_subjects_tools_and_request_ids_are_independent(
    store: IdempotencyStore,
) -> None:
    await store.begin(KEY, "fp-1")
    await store.complete(KEY, "fp-1", RESPONSE)
    others = [
        IdempotencyKey("globex", KEY.subject, KEY.tool, KEY.request_id),
        IdempotencyKey(KEY.tenant, "agent-2", KEY.tool, KEY.request_id),
        IdempotencyKey(KEY.tenant, KEY.subject, "forget", KEY.request_id),
        IdempotencyKey(KEY.tenant, KEY.subject, KEY.tool, "req-2"),
    ]

    assert [await store.begin(key, "fp-other") for key in others] == [Started()] * 4


async def test_waiting_longer_than_the_wait_timeout_is_backend_unavailable(make_store: StoreFactory) -> None:
    store = make_store(wait_timeout_seconds=0.2)
    await store.begin(KEY, "fp-1")

    with pytest.raises(BackendUnavailable):
        await store.begin(KEY, "fp-1")


async def test_redis_keeps_a_completed_record_for_the_retention_period(redis_url: str) -> None:
    client = redis.asyncio.Redis.from_url(redis_url)
    store = RedisIdempotency(client, retention_seconds=3600, pending_ttl_seconds=60)
    await store.begin(KEY, "fp-1")
    assert 0 < await client.pttl(KEY.redis_key) <= 60_000

    await store.complete(KEY, "fp-1", RESPONSE)

    assert 60_000 < await client.pttl(KEY.redis_key) <= 3_600_000
    await store.close()


async def test_redis_claim_that_outlives_its_pending_ttl_can_be_taken_over(redis_url: str) -> None:
    store = RedisIdempotency(redis.asyncio.Redis.from_url(redis_url), pending_ttl_seconds=0.05)
    await store.begin(KEY, "fp-1")

    # the first claimer "crashed": a retry waits for the pending marker to expire, then runs the call itself
    assert await store.begin(KEY, "fp-1") == Started()
    await store.close()


async def test_redis_down_is_backend_unavailable_and_the_same_client_recovers(own_redis: RedisServer) -> None:
    client = redis.asyncio.Redis.from_url(own_redis.url, retry=Retry(NoBackoff(), 0), socket_timeout=2)
    store = RedisIdempotency(client)
    await store.ping()

    own_redis.stop()
    with pytest.raises(BackendUnavailable):
        await store.begin(KEY, "fp-1")
    with pytest.raises(BackendUnavailable):
        await store.complete(KEY, "fp-1", RESPONSE)
    with pytest.raises(BackendUnavailable):
        await store.abandon(KEY)
    with pytest.raises(BackendUnavailable):
        await store.ping()

    own_redis.start()
    assert await store.begin(KEY, "fp-1") == Started()
    await store.complete(KEY, "fp-1", RESPONSE)
    assert await store.begin(KEY, "fp-1") == Replay(RESPONSE)
    await store.close()

"""`open_redis`'s guard against a hung server: a real `redis-server` (and a real Redis Cluster) stopped with
SIGSTOP, so connections stay open and nothing answers. Every command, script call and pipeline fails within its
deadline (retries included), a shorter one inside `redis_deadline`; once `threshold` calls got no answer within
the client's whole deadline (a short wait running out says nothing: it may be the process's own delay) the
circuit breaker fails calls at once; a health check passes it; after SIGCONT a probe (after the cool-down) or a
health check closes it and calls work again. Within one request, only the first call that can do without an answer
waits for a hung server."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import redis.exceptions

from ops.circuit_breaker import BreakerState, CircuitBreaker
from ops.redis_client import CircuitOpen, RedisClient, Skipped, health_check, one_request, open_redis, redis_deadline
from tests.conftest import Freeze
from tests.redis_server import RedisServer

pytestmark = pytest.mark.anyio

TIMEOUT = 1.0
SLACK = 0.5  # a loaded test machine's scheduling delay on top of a deadline
KEY = "hs:{acme}:guard"


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def timed(call: Callable[[], Awaitable[Any]]) -> tuple[float, BaseException | None]:
    started = time.monotonic()
    try:
        await call()
    except Exception as exc:
        return time.monotonic() - started, exc
    return time.monotonic() - started, None


async def transaction(client: RedisClient) -> Any:
    async with client.pipeline(transaction=True) as pipe:
        pipe.hgetall(KEY)
        pipe.delete(KEY)
        return await pipe.execute()


async def test_a_hung_server_costs_each_call_its_deadline_then_the_breaker_fails_calls_at_once_until_it_answers(
    hung_redis: tuple[str, bool, Freeze],
) -> None:
    url, cluster, freeze = hung_redis
    clock = Clock()
    breaker = CircuitBreaker("redis", threshold=3, cooldown_seconds=5, clock=clock)
    client = open_redis(url, cluster=cluster, timeout_seconds=TIMEOUT, breaker=breaker)
    script = client.register_script("return redis.call('INCR', KEYS[1])")
    await client.set(KEY, "0")

    with freeze():
        short, short_error = await timed(lambda: _with_deadline(0.2, client.get(KEY)))
        state_after_short = breaker.state
        command, command_error = await timed(lambda: client.get(KEY))
        piped, piped_error = await timed(lambda: transaction(client))
        await timed(lambda: client.get(KEY))
        state_after_three = breaker.state
        refused, refused_error = await timed(lambda: script(keys=[KEY]))
        checked, checked_error = await timed(lambda: _checked(0.3, client.ping()))
        clock.now += 5  # the cool-down is over: the next call probes, and gets no answer either
        probed, probed_error = await timed(lambda: client.get(KEY))
        state_after_probe = breaker.state
    clock.now += 5
    assert await script(keys=[KEY]) == 1  # the next probe gets an answer: closed
    state_after_resume = breaker.state
    assert await client.get(KEY) == b"1"
    await client.aclose()

    assert short < 0.2 + SLACK and isinstance(short_error, redis.exceptions.TimeoutError), (short, short_error)
    assert state_after_short is BreakerState.CLOSED  # no verdict from a short wait
    assert TIMEOUT - 0.05 <= command < TIMEOUT + SLACK, command
    assert isinstance(command_error, redis.exceptions.TimeoutError), command_error
    assert piped < TIMEOUT + SLACK and isinstance(piped_error, redis.exceptions.TimeoutError), (piped, piped_error)
    assert state_after_three is BreakerState.OPEN
    assert refused < 0.05 and isinstance(refused_error, CircuitOpen), (refused, refused_error)
    assert checked < 0.3 + SLACK and isinstance(checked_error, redis.exceptions.TimeoutError)  # it went through
    assert probed < TIMEOUT + SLACK and isinstance(probed_error, redis.exceptions.TimeoutError)
    assert state_after_probe is BreakerState.OPEN
    assert breaker.openings == 2
    assert state_after_resume is BreakerState.CLOSED


async def test_a_health_check_that_gets_an_answer_closes_the_breaker_before_the_cooldown(
    hung_redis: tuple[str, bool, Freeze],
) -> None:
    url, cluster, freeze = hung_redis
    breaker = CircuitBreaker("redis", threshold=1, cooldown_seconds=3600)
    client = open_redis(url, cluster=cluster, timeout_seconds=TIMEOUT, breaker=breaker)
    await client.ping()
    with freeze():
        with pytest.raises(redis.exceptions.TimeoutError):
            await _with_deadline(0.2, client.get(KEY))
        after_a_short_wait = breaker.state
        with pytest.raises(redis.exceptions.TimeoutError):
            await client.get(KEY)
    assert after_a_short_wait is BreakerState.CLOSED
    assert breaker.state is BreakerState.OPEN
    with pytest.raises(CircuitOpen):
        await client.get(KEY)
    assert await _checked(TIMEOUT, client.ping())
    assert breaker.state is BreakerState.CLOSED
    assert await client.exists("hs:{acme}:absent") == 0
    await client.aclose()


async def test_without_a_breaker_every_call_still_has_its_deadline(own_redis: RedisServer) -> None:
    client = open_redis(own_redis.url, cluster=False, timeout_seconds=TIMEOUT)
    await client.ping()
    with own_redis.freeze():
        for _ in range(3):
            took, error = await timed(lambda: client.get(KEY))
            assert took < TIMEOUT + SLACK and isinstance(error, redis.exceptions.TimeoutError), (took, error)
    assert await client.ping()
    await client.aclose()


async def test_in_one_request_only_the_first_call_that_can_do_without_an_answer_waits_for_a_hung_server(
    own_redis: RedisServer,
) -> None:
    breaker = CircuitBreaker("redis", threshold=10, cooldown_seconds=5)
    client = open_redis(own_redis.url, cluster=False, timeout_seconds=TIMEOUT, breaker=breaker)
    await client.ping()
    with own_redis.freeze(), one_request():
        first = await timed(lambda: _with_deadline(0.2, client.get(KEY)))
        second = await timed(lambda: _with_deadline(0.2, client.get(KEY)))
        needed = await timed(lambda: client.get(KEY))  # one that needs its answer still waits for it
    with one_request():
        assert await _with_deadline(0.2, client.ping())  # a new request: made
    await client.aclose()

    assert first[0] < 0.2 + SLACK and isinstance(first[1], redis.exceptions.TimeoutError), first
    assert second[0] < 0.05 and isinstance(second[1], Skipped), second
    assert TIMEOUT - 0.05 <= needed[0] < TIMEOUT + SLACK and isinstance(needed[1], redis.exceptions.TimeoutError)
    assert breaker.state is BreakerState.CLOSED  # two calls without answer, the skipped one not counted


async def _with_deadline(seconds: float, call: Awaitable[Any]) -> Any:
    with redis_deadline(seconds):
        return await call


async def _checked(seconds: float, call: Awaitable[Any]) -> Any:
    with health_check(seconds):
        return await call

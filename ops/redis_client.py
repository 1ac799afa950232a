"""`open_redis`: the one Redis client the gateway's shared state uses, for a single Redis or a Redis Cluster.

`HINDSIGHT_REDIS_URL` names the server (`redis://` or `rediss://`, with credentials if any). With
`HINDSIGHT_REDIS_CLUSTER=true` it names any one node of a Redis Cluster and the client is redis-py's cluster
client (`redis.asyncio.RedisCluster`), which discovers the other nodes, routes each command to the primary of
its key's slot and follows `MOVED`/`ASK` redirections during resharding and failover. The stores only run
single-key commands or Lua scripts over keys of one hash tag (`hs:{tenant}:...`), so they work unchanged on both.

Both clients retry a few times and then fail, so callers see a retryable `BackendUnavailable` instead of waiting
on a dead node: the single client with a short backoff; the cluster client refreshes its slot map before each of
its retries (connection errors, timeouts, `CLUSTERDOWN`), which is how it follows a failover.

A server that stops answering mid-connection (frozen, a network partition) must not hold callers for a multiple
of the timeout, so every command, script call and pipeline of these clients runs under one guard:

- a total deadline per operation, retries, reconnections and the cluster's slot-map refresh included:
  `timeout_seconds`, or less inside `redis_deadline(seconds)` (the calls whose failure is served anyway: rate
  limits that fail open, CPU charges, the recall log); past it the call fails with
  `redis.exceptions.TimeoutError` and its connection is dropped (redis-py disconnects a connection whose read is
  cancelled);
- within `one_request()` (each `POST /mcp`, `gateway.web.rate_limit_gate`), once such a call got no answer, the
  request's other calls inside `redis_deadline` fail at once (`Skipped`): a hung Redis costs a request one short
  wait for all it can do without, however many of those calls it makes;
- with a `CircuitBreaker` (the gateway's client has one, `ops.circuit_breaker`): after `threshold` calls in a row
  got no answer (timeouts, dropped or refused connections) and none got one for a while, calls fail at once with
  `CircuitOpen` (a `redis.exceptions.ConnectionError`, so the stores' `redis_errors` makes it the retryable
  `BackendUnavailable`) until the cool-down is over and a probe gets an answer. Calls inside
  `health_check(seconds)` (`/readyz`) pass the breaker and their answer closes it. A call inside `redis_deadline`
  whose short wait ran out leaves the breaker no verdict: on a process too busy to read answers in time (a CPU
  overload) such waits run out while Redis is well, and opening the breaker would fail every Redis call for the
  cool-down; a hung Redis is found by the calls that wait the whole `timeout_seconds`, by dropped connections and
  by `/readyz`.

Commands run inside a guarded call (the cluster client's own, a cluster pipeline's) are not guarded again. The
connection pool also checks a connection idle for `HEALTH_CHECK_SECONDS` with a PING before using it.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

import redis.asyncio
import redis.exceptions
from redis.asyncio.client import Pipeline
from redis.asyncio.cluster import ClusterPipeline, RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff

from ops.circuit_breaker import Admission, CircuitBreaker

RedisClient = redis.asyncio.Redis | RedisCluster
T = TypeVar("T")
V = TypeVar("V")

HEALTH_CHECK_SECONDS = 10  # a pooled connection idle this long is PINGed before it is used

_deadline: ContextVar[float | None] = ContextVar("hindsight_redis_deadline", default=None)
_fail_open: ContextVar[bool] = ContextVar("hindsight_redis_fail_open", default=False)
_health_check: ContextVar[bool] = ContextVar("hindsight_redis_health_check", default=False)
_inside_guard: ContextVar[bool] = ContextVar("hindsight_redis_inside_guard", default=False)

# No answer from the server: what the breaker counts. An error reply (ResponseError, also CLUSTERDOWN, MOVED,
# TRYAGAIN, which the cluster client handles) is an answer.
NO_ANSWER: tuple[type[BaseException], ...] = (
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
    redis.exceptions.ClusterError,
    redis.exceptions.RedisClusterException,
    OSError,
)


class CircuitOpen(redis.exceptions.ConnectionError):
    """Refused without a call: the Redis circuit breaker is open."""


class Skipped(redis.exceptions.ConnectionError):
    """Not made: a call of this request that could do without an answer got none; so would this one."""


@dataclass
class _Request:
    unanswered: bool = False  # a call inside `redis_deadline` got no answer


_request: ContextVar[_Request | None] = ContextVar("hindsight_redis_request", default=None)


@contextmanager
def _holding(variable: ContextVar[V], value: V) -> Iterator[None]:
    """`variable` is `value` within the block (for this task and the tasks it starts)."""
    token = variable.set(value)
    try:
        yield
    finally:
        variable.reset(token)


@contextmanager
def one_request() -> Iterator[None]:
    """The block (and the tasks it starts) is one request: once one of its calls inside `redis_deadline` got no
    answer, its other calls inside `redis_deadline` fail at once with `Skipped`."""
    with _holding(_request, _Request()):
        yield


@contextmanager
def redis_deadline(seconds: float) -> Iterator[None]:
    """Within the block, each Redis call of this task waits at most `seconds` (or the client's own deadline if
    that is shorter): for calls whose failure the caller serves anyway, which should not wait long for it (and,
    within `one_request`, not at all once such a call got no answer)."""
    with _holding(_fail_open, True), _shorter_deadline(seconds):
        yield


def _shorter_deadline(seconds: float) -> contextlib.AbstractContextManager[None]:
    current = _deadline.get()
    return _holding(_deadline, seconds if current is None else min(current, seconds))


@contextmanager
def health_check(seconds: float) -> Iterator[None]:
    """Within the block, Redis calls are health checks: made whatever the circuit breaker's state (an answer
    closes it), each waiting at most `seconds`."""
    with _holding(_health_check, True), _shorter_deadline(seconds):
        yield


class _Guard:
    """The deadline and circuit breaker of one client (see the module docstring)."""

    def __init__(self, timeout_seconds: float, breaker: CircuitBreaker | None) -> None:
        self.timeout_seconds = timeout_seconds
        self.breaker = breaker

    async def run(self, call: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> T:
        if _inside_guard.get():
            return await call(*args, **kwargs)
        request = _request.get() if _fail_open.get() else None  # the request of a call that can do without
        if request is not None and request.unanswered:
            raise Skipped("not waited for: an earlier redis call of this request got no answer")
        admission = self._admit()
        requested = _deadline.get()
        seconds = self.timeout_seconds if requested is None else min(self.timeout_seconds, requested)
        token = _inside_guard.set(True)
        try:
            async with asyncio.timeout(seconds) as deadline:
                result = await call(*args, **kwargs)
        except TimeoutError as exc:  # builtin: ours, or a socket's
            if request is not None:
                request.unanswered = True
            if not deadline.expired():
                self._failed(admission, exc)
                raise
            error = redis.exceptions.TimeoutError(f"no answer from redis within {seconds:g} s")
            if seconds < self.timeout_seconds and not _health_check.get():
                self._abandoned(admission)  # a short wait that ran out may be this process's own delay
            else:
                self._failed(admission, error)
            raise error from exc
        except redis.exceptions.ResponseError:
            self._succeeded(admission)  # an error reply is an answer
            raise
        except NO_ANSWER as exc:
            if request is not None:
                request.unanswered = True
            self._failed(admission, exc)
            raise
        except BaseException:
            self._abandoned(admission)
            raise
        finally:
            _inside_guard.reset(token)
        self._succeeded(admission)
        return result

    def _admit(self) -> Admission | None:
        if self.breaker is None:
            return None
        admission = self.breaker.admit(health_check=_health_check.get())
        if admission is None:
            raise CircuitOpen(
                f"redis circuit breaker open (no answer lately); next probe in {math.ceil(self.breaker.retry_in())} s"
            )
        return admission

    def _succeeded(self, admission: Admission | None) -> None:
        if self.breaker is not None and admission is not None:
            self.breaker.succeeded(admission)

    def _failed(self, admission: Admission | None, error: BaseException) -> None:
        if self.breaker is not None and admission is not None:
            self.breaker.failed(admission, error)

    def _abandoned(self, admission: Admission | None) -> None:
        if self.breaker is not None and admission is not None:
            self.breaker.abandoned(admission)


class _GuardedPipeline(Pipeline):
    """A single server's pipeline (or transaction) whose `execute` is one guarded operation."""

    guard: _Guard

    async def execute(self, raise_on_error: bool = True) -> list[Any]:
        result: list[Any] = await self.guard.run(super().execute, raise_on_error)
        return result


class _GuardedRedis(redis.asyncio.Redis):
    """redis-py's client for one server, every command (and so every script call) and pipeline guarded."""

    guard: _Guard

    async def execute_command(self, *args: Any, **options: Any) -> Any:
        return await self.guard.run(super().execute_command, *args, **options)

    def pipeline(self, transaction: bool = True, shard_hint: str | None = None) -> Pipeline:
        pipe = _GuardedPipeline(self.connection_pool, self.response_callbacks, transaction, shard_hint)
        pipe.guard = self.guard
        return pipe


class _GuardedClusterPipeline(ClusterPipeline):
    """A cluster pipeline (or single-slot transaction) whose `execute`, and setup when it fetches the slot map, are
    guarded operations."""

    guard: _Guard

    async def initialize(self) -> ClusterPipeline:
        if self.cluster_client._initialize:  # it fetches the slot map first: a call to the cluster
            return await self.guard.run(super().initialize)
        return await super().initialize()  # nothing sent: no verdict for the breaker

    async def execute(self, raise_on_error: bool = True, allow_redirections: bool = True) -> list[Any]:
        result: list[Any] = await self.guard.run(super().execute, raise_on_error, allow_redirections)
        return result


class _RoutedAfterInitialize(RedisCluster):
    """redis-py's cluster client, (re)initialised before it routes each command. redis-py 8.1 routes a command
    that arrives while the client is not initialised (first use, or after it dropped its slot map) by a keyless
    default policy, and a keyed write can then run more than once: 50 concurrent INCRs on a fresh client gave
    51 (tests/ops/test_redis_client.py). `initialize()` is a no-op once initialised. Every command and pipeline
    is guarded, the (re)initialisation included."""

    guard: _Guard

    async def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        return await self.guard.run(self._routed, *args, **kwargs)

    async def _routed(self, *args: Any, **kwargs: Any) -> Any:
        await self.initialize()
        return await super().execute_command(*args, **kwargs)

    def pipeline(self, transaction: Any | None = None, shard_hint: Any | None = None) -> ClusterPipeline:
        if shard_hint:
            raise redis.exceptions.RedisClusterException("shard_hint is deprecated in cluster mode")
        pipe = _GuardedClusterPipeline(self, transaction)  # type: ignore[abstract]  # as redis-py builds its own
        pipe.guard = self.guard
        return pipe


def open_redis(
    url: str, *, cluster: bool, timeout_seconds: float, breaker: CircuitBreaker | None = None
) -> RedisClient:
    """A client for `url` (it connects on first use); `timeout_seconds` bounds every operation, retries
    included; with a `breaker`, calls fail at once while it is open (see the module docstring)."""
    guard = _Guard(timeout_seconds, breaker)
    client: RedisClient
    if cluster:
        client = _RoutedAfterInitialize.from_url(
            url,
            socket_timeout=timeout_seconds,
            socket_connect_timeout=timeout_seconds,
            health_check_interval=HEALTH_CHECK_SECONDS,
            # a MOVED reply (a failover, a resharding) patches that slot only: with the default (a full reset
            # every 5 MOVED) in-flight commands of other tasks lose their connections and are retried
            reinitialize_steps=0,
            retry=Retry(ExponentialBackoff(cap=0.5, base=0.05), 3),  # redis-py uses only the count here
        )
    else:
        client = _GuardedRedis.from_url(
            url,
            socket_timeout=timeout_seconds,
            socket_connect_timeout=timeout_seconds,
            health_check_interval=HEALTH_CHECK_SECONDS,
            retry=Retry(ExponentialBackoff(cap=0.2, base=0.01), 2),  # short: callers get a retryable error
        )
    client.guard = guard  # type: ignore[union-attr]
    return client

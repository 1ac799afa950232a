"""`open_redis`: the one Redis client the gateway's shared state uses, for a single Redis or a Redis Cluster.

`HINDSIGHT_REDIS_URL` names the server (`redis://` or `rediss://`, with credentials if any). With
`HINDSIGHT_REDIS_CLUSTER=true` it names any one node of a Redis Cluster and the client is redis-py's cluster
client (`redis.asyncio.RedisCluster`), which discovers the other nodes, routes each command to the primary of
its key's slot and follows `MOVED`/`ASK` redirections during resharding and failover. The stores only run
single-key commands or Lua scripts over keys of one hash tag (`hs:{tenant}:...`), so they work unchanged on both.

Both clients retry a few times and then fail, so callers see a retryable `BackendUnavailable` instead of waiting
on a dead node: the single client with a short backoff; the cluster client refreshes its slot map before each of
its retries (connection errors, timeouts, `CLUSTERDOWN`), which is how it follows a failover.
"""

from __future__ import annotations

from typing import Any

import redis.asyncio
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff

RedisClient = redis.asyncio.Redis | RedisCluster


class _RoutedAfterInitialize(RedisCluster):
    """redis-py's cluster client, (re)initialised before it routes each command. redis-py 8.1 routes a command
    that arrives while the client is not initialised (first use, or after it dropped its slot map) by a keyless
    default policy, and a keyed write can then run more than once: 50 concurrent INCRs on a fresh client gave
    51 (tests/ops/test_redis_client.py). `initialize()` is a no-op once initialised."""

    async def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        await self.initialize()
        return await super().execute_command(*args, **kwargs)


def open_redis(url: str, *, cluster: bool, timeout_seconds: float) -> RedisClient:
    """A client for `url` (it connects on first use); `timeout_seconds` bounds every connect and command."""
    if cluster:
        return _RoutedAfterInitialize.from_url(
            url,
            socket_timeout=timeout_seconds,
            socket_connect_timeout=timeout_seconds,
            # a MOVED reply (a failover, a resharding) patches that slot only: with the default (a full reset
            # every 5 MOVED) in-flight commands of other tasks lose their connections and are retried
            reinitialize_steps=0,
            retry=Retry(ExponentialBackoff(cap=0.5, base=0.05), 3),  # redis-py uses only the count here
        )
    return redis.asyncio.Redis.from_url(
        url,
        socket_timeout=timeout_seconds,
        socket_connect_timeout=timeout_seconds,
        health_check_interval=10,
        retry=Retry(ExponentialBackoff(cap=0.2, base=0.01), 2),  # short: callers get a retryable error
    )

"""`open_redis` against a real Redis Cluster: the client it builds for `HINDSIGHT_REDIS_CLUSTER` runs every
command once, also when many arrive before it has learnt the cluster's slot map."""

from __future__ import annotations

import anyio
import pytest
from redis.asyncio.cluster import RedisCluster

from ops.redis_client import open_redis

pytestmark = pytest.mark.anyio


async def test_a_fresh_cluster_client_runs_each_of_many_concurrent_writes_exactly_once(
    redis_cluster_url: str,
) -> None:
    for _ in range(5):  # the race of a fresh client is timing-dependent: several fresh clients
        client = open_redis(redis_cluster_url, cluster=True, timeout_seconds=5)
        assert isinstance(client, RedisCluster)
        counter = client.register_script("return redis.call('INCR', KEYS[1])")

        async with anyio.create_task_group() as tg:
            for _ in range(50):
                tg.start_soon(counter, ["hs:{acme}:counter"])

        assert int(await client.getdel("hs:{acme}:counter")) == 50
        await client.aclose()


async def test_without_cluster_the_client_is_a_single_server_client(redis_url: str) -> None:
    client = open_redis(redis_url, cluster=False, timeout_seconds=5)

    assert not isinstance(client, RedisCluster)
    assert await client.ping()
    await client.aclose()

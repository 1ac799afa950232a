"""`redis_errors(backend)`: the one translation of a Redis client failure (a command error, a cluster error, a
dropped connection) into the retryable `BackendUnavailable`, naming the backend that failed. Every Redis-backed
store uses it (working memory, events, the recall log, idempotency, rate limits). `RedisBacked` is the `ping` and
`close` such a store has over its one client, with that translation."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import ClassVar

import redis.asyncio
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import RedisClusterException, RedisError

from memory.errors import BackendUnavailable


@contextmanager
def redis_errors(backend: str) -> Iterator[None]:
    """Turn any failure of the Redis client inside the block into `BackendUnavailable` (the caller may retry)."""
    try:
        yield
    except (RedisError, RedisClusterException, OSError) as exc:
        raise BackendUnavailable(f"{backend} (redis) unavailable: {type(exc).__name__}: {exc}") from exc


class RedisBacked:
    """`ping` and `close` of a store over one Redis client (`_client`: a single Redis or a cluster), a failure
    raised as `BackendUnavailable` naming `backend`."""

    backend: ClassVar[str]
    _client: redis.asyncio.Redis | RedisCluster

    async def ping(self) -> None:
        """Raise `BackendUnavailable` if Redis does not answer."""
        with redis_errors(self.backend):
            await self._client.ping()

    async def close(self) -> None:
        with redis_errors(self.backend):
            await self._client.aclose()

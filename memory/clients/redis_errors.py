"""`redis_errors(backend)`: the one translation of a Redis client failure (a command error, a cluster error, a
dropped connection) into the retryable `BackendUnavailable`, naming the backend that failed. Every Redis-backed
store uses it (working memory, events, the recall log, idempotency, rate limits)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from redis.exceptions import RedisClusterException, RedisError

from memory.errors import BackendUnavailable


@contextmanager
def redis_errors(backend: str) -> Iterator[None]:
    """Turn any failure of the Redis client inside the block into `BackendUnavailable` (the caller may retry)."""
    try:
        yield
    except (RedisError, RedisClusterException, OSError) as exc:
        raise BackendUnavailable(f"{backend} (redis) unavailable: {type(exc).__name__}: {exc}") from exc

"""`shared_state(settings, clock)`: what every gateway replica must share, in Redis (or a Redis Cluster) when
`redis_url` is set, else in this process: working memory, idempotency records, rate-limit buckets, the
per-namespace write locks, the agents' events and sessions (durable: a sqlite file in the data directory when
embedded) and the recall log of the tenants that opted in, with the function that closes their clients. On
Redis they share one client and its circuit breaker (`ops.redis_client`), which the state carries for the
metrics."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from memory.clock import Clock
from memory.events import EventStore, SqliteEventStore
from memory.locking import InProcessNamespaceLocks
from memory.ports import NamespaceLocks, WorkingMemoryStore
from memory.recall_log import InProcessRecallLog, RecallLog
from memory.working.in_process import InProcessWorkingMemory
from ops.circuit_breaker import CircuitBreaker
from ops.config import Settings
from tenancy.limits import IdempotencyStore, RateLimiter

EVENTS_FILE = "events.sqlite3"


@dataclass(frozen=True, slots=True)
class SharedState:
    working: WorkingMemoryStore
    idempotency: IdempotencyStore
    limiter: RateLimiter | None  # None when rate limits are off
    locks: NamespaceLocks
    events: EventStore
    recall_log: RecallLog
    close: Callable[[], Awaitable[None]]
    redis_breaker: CircuitBreaker | None = None  # the Redis client's, on Redis


def shared_state(settings: Settings, clock: Clock) -> SharedState:
    if settings.backends.redis_url:
        from memory.events import RedisEventStore
        from memory.locking.redis_lock import RedisNamespaceLocks
        from memory.recall_log import RedisRecallLog
        from memory.working.redis_store import RedisWorkingMemory
        from ops.redis_client import open_redis
        from tenancy.idempotency import RedisIdempotency
        from tenancy.rate_limits import RedisRateLimiter

        breaker = CircuitBreaker(
            "redis",
            threshold=settings.backends.redis_breaker_threshold,
            cooldown_seconds=settings.backends.redis_breaker_cooldown_seconds,
            min_silence_seconds=settings.backends.redis_breaker_silence_seconds,
        )
        client = open_redis(
            settings.backends.redis_url,
            cluster=settings.backends.redis_cluster,
            timeout_seconds=settings.backends.backend_timeout_seconds,
            breaker=breaker,
        )
        return SharedState(
            working=RedisWorkingMemory(client, clock),
            idempotency=RedisIdempotency(
                client,
                retention_seconds=settings.rate_limits.idempotency_retention_seconds,
                wait_timeout_seconds=settings.rate_limits.idempotency_wait_seconds,
                lease_seconds=settings.rate_limits.idempotency_lease_seconds,
            ),
            limiter=RedisRateLimiter(client) if settings.rate_limits.rate_limit_enabled else None,
            locks=RedisNamespaceLocks(
                client,
                wait_seconds=settings.backends.backend_timeout_seconds * 2,
                release_seconds=settings.backends.redis_fail_open_timeout_seconds,
            ),
            events=RedisEventStore(client),
            recall_log=RedisRecallLog(
                client,
                clock,
                max_entries=settings.observability.recall_log_max_entries,
                max_age_seconds=settings.observability.recall_log_max_age_seconds,
            ),
            close=client.aclose,
            redis_breaker=breaker,
        )
    from tenancy.idempotency import InProcessIdempotency
    from tenancy.rate_limits import InProcessRateLimiter

    working = InProcessWorkingMemory(clock)
    events = SqliteEventStore.open(settings.backends.data_dir / EVENTS_FILE)

    async def close() -> None:
        await working.close()
        await events.close()

    return SharedState(
        working=working,
        idempotency=InProcessIdempotency(
            retention_seconds=settings.rate_limits.idempotency_retention_seconds,
            wait_timeout_seconds=settings.rate_limits.idempotency_wait_seconds,
            lease_seconds=settings.rate_limits.idempotency_lease_seconds,
        ),
        limiter=InProcessRateLimiter(lambda: clock.now().timestamp())
        if settings.rate_limits.rate_limit_enabled
        else None,
        locks=InProcessNamespaceLocks(wait_seconds=settings.backends.backend_timeout_seconds * 2),
        events=events,
        recall_log=InProcessRecallLog(
            clock,
            max_entries=settings.observability.recall_log_max_entries,
            max_age_seconds=settings.observability.recall_log_max_age_seconds,
        ),
        close=close,
    )

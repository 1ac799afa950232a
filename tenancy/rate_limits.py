"""Token-bucket rate limiters (docs/DESIGN.md § "The write path"): `InProcessRateLimiter` (embedded mode) and
`RedisRateLimiter`.

Both implement `tenancy.limits.RateLimiter` and own the bucket state: per bucket key, the tokens left and when
they were last counted. A call takes `cost` tokens (1; a batch of n writes: n) from every bucket it names, or
none if any bucket holds fewer than `min(cost, capacity)`; then `retry_after_seconds` is the longest wait until
every bucket holds that many: `max((min(cost, capacity) - tokens) / refill_per_second)` over the short buckets.
A cost over the capacity is taken from a full bucket, leaving it below zero until refilled. `charge` takes a
cost known only after the fact (a call's CPU time) whatever the buckets hold, so they may go into debt too.

Redis: one Lua script checks and consumes all buckets atomically and reads the clock with `TIME`, so replicas
with skewed clocks agree. Each bucket is a hash `{tokens, ts}` that expires after twice its full-refill time (an
expired bucket is a full one). Redis Cluster: the script's keys must hash to one slot, so the buckets of one
`acquire` (a subject's and its tenant's) share the tenant's hash tag (`hs:{tenant}:rl:...`); both limiters refuse
buckets of several slots with `ValueError` (on a cluster they would fail with CROSSSLOT). Every Redis failure
raises `BackendUnavailable`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import redis.asyncio
from redis.asyncio.cluster import RedisCluster
from redis.crc import key_slot

from memory.clients.redis_errors import RedisBacked, redis_errors
from tenancy.limits import Bucket, RateDecision

_SWEEP_EVERY = 1024


def _checked(buckets: Sequence[Bucket]) -> list[Bucket]:
    """The buckets with duplicate keys dropped (the first wins); raises `ValueError` on an unusable bucket or
    on buckets whose keys hash to different Redis Cluster slots."""
    if len({key_slot(bucket.key.encode()) for bucket in buckets}) > 1:
        raise ValueError("rate-limit buckets of one call must share a hash tag (one Redis Cluster slot)")
    unique: dict[str, Bucket] = {}
    for bucket in buckets:
        if not (bucket.capacity >= 1 and math.isfinite(bucket.capacity)):
            raise ValueError(f"rate-limit bucket {bucket.key!r}: capacity must be a finite number >= 1")
        if not (bucket.refill_per_second > 0 and math.isfinite(bucket.refill_per_second)):
            raise ValueError(f"rate-limit bucket {bucket.key!r}: refill_per_second must be a finite number > 0")
        unique.setdefault(bucket.key, bucket)
    return list(unique.values())


def _check_cost(cost: float) -> None:
    if not (cost >= 1 and math.isfinite(cost)):
        raise ValueError("a rate-limited call costs a finite number of tokens >= 1")


def _check_charge(cost: float) -> None:
    if not (cost >= 0 and math.isfinite(cost)):
        raise ValueError("a charge is a finite number of tokens >= 0")


@dataclass
class _Level:
    tokens: float
    at: float
    capacity: float
    refill_per_second: float

    def full_at(self, at: float) -> bool:
        """Whether the bucket has refilled completely by time `at` (then it can be forgotten)."""
        return self.tokens + max(0.0, at - self.at) * self.refill_per_second >= self.capacity


class InProcessRateLimiter:
    """`RateLimiter` in a dict for one process; `acquire` never awaits, so it is atomic within an event loop.
    Buckets that have refilled completely are forgotten now and then (a missing bucket is a full one)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._levels: dict[str, _Level] = {}
        self._calls = 0

    async def acquire(self, buckets: Sequence[Bucket], cost: float = 1.0) -> RateDecision:
        checked = _checked(buckets)
        _check_cost(cost)
        now = self._clock()
        self._sweep(now)
        tokens = [self._tokens(bucket, now) for bucket in checked]
        waits = [
            (min(cost, bucket.capacity) - left) / bucket.refill_per_second
            for bucket, left in zip(checked, tokens, strict=True)
        ]
        retry_after = max((wait for wait in waits if wait > 0), default=0.0)
        if retry_after > 0:
            return RateDecision(allowed=False, retry_after_seconds=retry_after)
        for bucket, left in zip(checked, tokens, strict=True):
            self._levels[bucket.key] = _Level(left - cost, now, bucket.capacity, bucket.refill_per_second)
        return RateDecision(allowed=True, retry_after_seconds=0.0)

    async def charge(self, buckets: Sequence[Bucket], cost: float) -> None:
        checked = _checked(buckets)
        _check_charge(cost)
        if cost == 0:
            return
        now = self._clock()
        for bucket in checked:
            left = self._tokens(bucket, now) - cost
            self._levels[bucket.key] = _Level(left, now, bucket.capacity, bucket.refill_per_second)

    def _tokens(self, bucket: Bucket, now: float) -> float:
        level = self._levels.get(bucket.key)
        if level is None:
            return bucket.capacity
        return min(bucket.capacity, level.tokens + max(0.0, now - level.at) * bucket.refill_per_second)

    def _sweep(self, now: float) -> None:
        self._calls += 1
        if self._calls % _SWEEP_EVERY:
            return
        for key in [key for key, level in self._levels.items() if level.full_at(now)]:
            del self._levels[key]

    async def ping(self) -> None:
        return None

    async def close(self) -> None:
        self._levels.clear()


# The scripts' common start: the server's time, and `level(key, capacity, refill)`, the tokens a bucket holds now
# (full when it has no record yet).
_LEVEL = """
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
local function level(key, capacity, refill)
  local stored = redis.call('HMGET', key, 'tokens', 'ts')
  local tokens = tonumber(stored[1])
  local at = tonumber(stored[2])
  if tokens == nil or at == nil then return capacity end
  return math.min(capacity, tokens + math.max(0, now - at) * refill)
end
"""

# KEYS: bucket hashes; ARGV: capacity, refill per second, ttl ms for each bucket in turn, then the cost.
# Returns {1, '0'} when every bucket gave the cost (holding min(cost, capacity) tokens; it may go below zero),
# else {0, '<retry after seconds>'} and consumes nothing.
_ACQUIRE = (
    _LEVEL
    + """
local cost = tonumber(ARGV[3 * #KEYS + 1])
local levels = {}
local retry = 0
for i, key in ipairs(KEYS) do
  local capacity = tonumber(ARGV[3 * i - 2])
  local refill = tonumber(ARGV[3 * i - 1])
  local tokens = level(key, capacity, refill)
  levels[i] = tokens
  local need = math.min(cost, capacity)
  if tokens < need then retry = math.max(retry, (need - tokens) / refill) end
end
if retry > 0 then return {0, string.format('%.17g', retry)} end
for i, key in ipairs(KEYS) do
  redis.call('HSET', key, 'tokens', string.format('%.17g', levels[i] - cost), 'ts', string.format('%.6f', now))
  redis.call('PEXPIRE', key, ARGV[3 * i])
end
return {1, '0'}
"""
)

# KEYS: bucket hashes; ARGV: capacity and refill per second for each bucket in turn, then the cost. Takes the cost
# from every bucket whatever it holds; each bucket is kept until twice its full refill from the level it is left at.
_CHARGE = (
    _LEVEL
    + """
local cost = tonumber(ARGV[2 * #KEYS + 1])
for i, key in ipairs(KEYS) do
  local capacity = tonumber(ARGV[2 * i - 1])
  local refill = tonumber(ARGV[2 * i])
  local left = level(key, capacity, refill) - cost
  redis.call('HSET', key, 'tokens', string.format('%.17g', left), 'ts', string.format('%.6f', now))
  redis.call('PEXPIRE', key, math.max(1000, math.ceil((capacity - left) / refill * 2000)))
end
return 1
"""
)


class RedisRateLimiter(RedisBacked):
    """`RateLimiter` on Redis, shared by every replica (see the module docstring for the layout)."""

    backend = "rate limiter"

    def __init__(self, client: redis.asyncio.Redis | RedisCluster) -> None:
        self._client = client
        self._acquire = client.register_script(_ACQUIRE)
        self._charge = client.register_script(_CHARGE)

    async def acquire(self, buckets: Sequence[Bucket], cost: float = 1.0) -> RateDecision:
        checked = _checked(buckets)
        _check_cost(cost)
        if not checked:
            return RateDecision(allowed=True, retry_after_seconds=0.0)
        args: list[float | int] = []
        for bucket in checked:
            # a debt (a batch over the capacity) is kept until refilled: never expire a bucket before that
            ttl_ms = max(1000, math.ceil(max(bucket.capacity, cost) / bucket.refill_per_second * 2000))
            args += [bucket.capacity, bucket.refill_per_second, ttl_ms]
        args.append(cost)
        with redis_errors("rate limiter"):
            allowed, retry_after = await self._acquire(keys=[b.key for b in checked], args=args)
        if int(allowed) == 1:
            return RateDecision(allowed=True, retry_after_seconds=0.0)
        text = retry_after.decode() if isinstance(retry_after, bytes) else str(retry_after)
        return RateDecision(allowed=False, retry_after_seconds=float(text))

    async def charge(self, buckets: Sequence[Bucket], cost: float) -> None:
        checked = _checked(buckets)
        _check_charge(cost)
        if not checked or cost == 0:
            return
        args: list[float] = []
        for bucket in checked:
            args += [bucket.capacity, bucket.refill_per_second]
        args.append(cost)
        with redis_errors("rate limiter"):
            await self._charge(keys=[b.key for b in checked], args=args)

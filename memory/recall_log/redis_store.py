"""`RedisRecallLog`: the recall log shared by every gateway replica, one Redis list per tenant.

Key: `hs:{tenant}:rl`, where `{tenant}` is the Redis Cluster hash tag (as in `memory/working/redis_store.py`).
The list holds the newest entry first (LPUSH); each item is `<micros>|<entry JSON>`, `<micros>` being the entry's
time on the injected clock in integer microseconds since the epoch, so the script that enforces the bounds reads
an item's age without decoding it. One Lua script pushes (when given an item), trims to `max_entries` (LTRIM)
and pops from the tail the items older than the cutoff; reads run it without an item, then LRANGE. The key's
Redis TTL (`PEXPIRE`, relative, real time: `max_age_seconds`) only garbage-collects the log of a tenant that
stopped recalling. `erase` applies the bounds, reads the list, picks the entries to remove in Python (`erasable`)
and removes exactly those items with a second script (one `LREM` each, from the tail: the oldest copy), so an entry
appended meanwhile is never lost. Every Redis failure is raised as `BackendUnavailable`."""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

import redis.asyncio
from redis.asyncio.cluster import RedisCluster

from memory.clients.redis_errors import redis_errors
from memory.clock import Clock
from memory.recall_log.store import (
    DEFAULT_MAX_AGE_SECONDS,
    DEFAULT_MAX_ENTRIES,
    Pick,
    RecallLog,
    RecallLogEntry,
    decode_entry,
    encode_entry,
)
from memory.scope import NamespaceScope

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)

# KEYS[1] the tenant's log; ARGV: item ('' = none), max_entries, cutoff_us, ttl_ms.
_BOUND = """
local key = KEYS[1]
if ARGV[1] ~= '' then
  redis.call('LPUSH', key, ARGV[1])
  redis.call('PEXPIRE', key, ARGV[4])
end
redis.call('LTRIM', key, 0, tonumber(ARGV[2]) - 1)
local cutoff = tonumber(ARGV[3])
while true do
  local last = redis.call('LINDEX', key, -1)
  if not last then break end
  local at = tonumber(string.match(last, '^(%d+)|'))
  if at and at >= cutoff then break end
  redis.call('RPOP', key)
end
return redis.call('LLEN', key)
"""

# KEYS[1] the tenant's log; ARGV: the exact items to remove (one occurrence each). Returns how many were removed.
_REMOVE = """
local key = KEYS[1]
local removed = 0
for i = 1, #ARGV do
  removed = removed + redis.call('LREM', key, -1, ARGV[i])
end
return removed
"""


def _micros(value: datetime) -> int:
    return (value - _EPOCH) // _MICROSECOND


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _entry(item: Any) -> RecallLogEntry:
    """The entry of a stored item `<micros>|<entry JSON>`."""
    return decode_entry(_text(item).split("|", 1)[1])


class RedisRecallLog(RecallLog):
    """`RecallLog` on Redis; same semantics as `InProcessRecallLog`, safe across replicas."""

    def __init__(
        self,
        client: redis.asyncio.Redis | RedisCluster,
        clock: Clock,
        *,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        max_age_seconds: float = DEFAULT_MAX_AGE_SECONDS,
    ) -> None:
        super().__init__(clock, max_entries=max_entries, max_age_seconds=max_age_seconds)
        self._client = client
        self._ttl_ms = max(1, math.ceil(max_age_seconds * 1000))
        self._lua_bound = client.register_script(_BOUND)
        self._lua_remove = client.register_script(_REMOVE)

    @staticmethod
    def _key(tenant: str) -> str:
        return f"hs:{{{tenant}}}:rl"

    async def _run(self, tenant: str, item: str) -> None:
        cutoff = _micros(self._cutoff())
        with redis_errors("recall log"):
            await self._lua_bound(keys=[self._key(tenant)], args=[item, self._max_entries, cutoff, self._ttl_ms])

    async def append(self, scope: NamespaceScope, entry: RecallLogEntry) -> None:
        await self._run(scope.tenant, f"{_micros(entry.at)}|{encode_entry(entry)}")

    async def _newest_first(self, tenant: str) -> Iterable[RecallLogEntry]:
        await self._run(tenant, "")
        with redis_errors("recall log"):
            raw = await self._client.lrange(self._key(tenant), 0, self._max_entries - 1)
        return (_entry(item) for item in raw)

    async def _remove(self, tenant: str, pick: Pick) -> int:
        await self._run(tenant, "")
        with redis_errors("recall log"):
            raw = await self._client.lrange(self._key(tenant), 0, -1)
        doomed = [text for text in map(_text, raw) if pick(_entry(text))]
        if not doomed:
            return 0
        with redis_errors("recall log"):
            removed = await self._lua_remove(keys=[self._key(tenant)], args=doomed)
        return int(removed)

    async def close(self) -> None:
        """The client belongs to the shared state, which closes it."""

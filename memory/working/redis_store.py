"""`RedisWorkingMemory`: working memory shared by every gateway replica, one Redis hash per session.

It owns the session key layout and the atomic update scripts. Key: `hs:{tenant}:wm:{namespace}:{session}` where
`{tenant}` is a Redis Cluster hash tag and the session id is percent-encoded (it may contain ':', as namespaces
do, and must not be able to spell another namespace's key). Hash fields:

- `exp`: expiry on the injected clock, integer microseconds since the epoch. A session whose `exp` is not after
  `clock.now()` is gone: reads return None and the next write starts it afresh. The Redis TTL (`PEXPIRE`,
  relative, real time) only garbage-collects the key; it is relative so a test clock far from real time cannot
  make Redis drop a live key.
- `head`, `tail`, `t:<n>`: the window of turns as numbered fields (`head <= n < tail`), one JSON turn each, so a
  Lua script appends and evicts without re-encoding JSON.
- `state`, `sv`: the state object (JSON) and a random version token. Deep merge runs in Python (`merge_state`)
  and is written with a compare-and-set script on `sv`, retried on conflict.
- `w:<subject>`: one field per subject that appended a turn or updated the state (value `1`), set by the same
  script as the write; a session started afresh (expired, taken, purged) starts without them.

`purge` finds a namespace's sessions with SCAN (on a cluster, redis-py's scan of every primary) and a MATCH pattern
on the key prefix, keeps the keys whose namespace part is exactly that namespace, and drops them in batches with
one script call each (all keys of a tenant share its hash tag, so one slot). `sessions_written_by` scans every
`wm` key of the tenant the same way and reads `exp` and the subject's `w:` field of each with HMGET, in pipelined
batches; it never writes.

Every Redis failure is raised as `BackendUnavailable`.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote, unquote

import redis.asyncio
from redis.asyncio.cluster import RedisCluster

from memory.clients.redis_errors import RedisBacked, redis_errors
from memory.clock import Clock
from memory.errors import BackendUnavailable, InvalidArgument
from memory.models import Turn, WorkingMemory
from memory.ports import SessionKey, WorkingMemoryStore
from memory.working.in_process import merge_state

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
_MAX_STATE_ATTEMPTS = 500
_PURGE_BATCH = 100  # keys per purge script call
_WRITERS_BATCH = 500  # HMGETs per pipeline while listing the sessions a subject wrote
_SCAN_COUNT = 1000  # SCAN's COUNT hint while purging or listing a subject's sessions
_GLOB_SPECIAL = frozenset("*?[]\\")

# KEYS[1] session; ARGV: now_us, expires_us, ttl_ms, window, turn_json[, subject].
# Returns {evicted turns oldest first, HGETALL of the session}.
_APPEND = """
local key = KEYS[1]
local exp = redis.call('HGET', key, 'exp')
if exp and tonumber(exp) <= tonumber(ARGV[1]) then redis.call('DEL', key) end
local tail = redis.call('HINCRBY', key, 'tail', 1)
redis.call('HSET', key, 't:' .. (tail - 1), ARGV[5], 'exp', ARGV[2])
if ARGV[6] then redis.call('HSET', key, 'w:' .. ARGV[6], '1') end
local head = tonumber(redis.call('HGET', key, 'head') or '0')
local window = tonumber(ARGV[4])
local evicted = {}
while head < tail and tail - head > window do
  local field = 't:' .. head
  evicted[#evicted + 1] = redis.call('HGET', key, field)
  redis.call('HDEL', key, field)
  head = head + 1
end
redis.call('HSET', key, 'head', head)
local session = redis.call('HGETALL', key)
redis.call('PEXPIRE', key, ARGV[3])
return {evicted, session}
"""

# KEYS[1] session; ARGV: expected version ('-' = not live), now_us, expires_us, ttl_ms, state_json, new version
# [, subject].
# Returns false if the version moved (the caller re-reads and retries), else HGETALL of the session.
_SET_STATE = """
local key = KEYS[1]
local cur = redis.call('HMGET', key, 'exp', 'sv')
local live = cur[1] and tonumber(cur[1]) > tonumber(ARGV[2])
local version = '-'
if live then version = cur[2] or '' end
if version ~= ARGV[1] then return false end
if not live then redis.call('DEL', key) end
redis.call('HSET', key, 'state', ARGV[5], 'sv', ARGV[6], 'exp', ARGV[3])
if ARGV[7] then redis.call('HSET', key, 'w:' .. ARGV[7], '1') end
local session = redis.call('HGETALL', key)
redis.call('PEXPIRE', key, ARGV[4])
return session
"""


# KEYS: sessions of one tenant; ARGV: now_us. Deletes every key; returns how many of them were live sessions.
_PURGE = """
local now = tonumber(ARGV[1])
local live = 0
for _, key in ipairs(KEYS) do
  local exp = redis.call('HGET', key, 'exp')
  if exp and tonumber(exp) > now then live = live + 1 end
  redis.call('DEL', key)
end
return live
"""


def _glob_escaped(text: str) -> str:
    """`text` as a literal in a Redis MATCH pattern."""
    return "".join("\\" + char if char in _GLOB_SPECIAL else char for char in text)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _micros(value: datetime) -> int:
    return (value - _EPOCH) // _MICROSECOND


def _encode_turn(turn: Turn) -> str:
    return json.dumps({"role": turn.role, "content": turn.content, "occurred_at": turn.occurred_at.isoformat()})


def _decode_turn(raw: Any) -> Turn:
    data = json.loads(_text(raw))
    return Turn(role=data["role"], content=data["content"], occurred_at=datetime.fromisoformat(data["occurred_at"]))


def _fields(raw: Any) -> dict[str, str]:
    """HGETALL's answer (a dict from the client, a flat list from a script) as a str -> str dict."""
    if isinstance(raw, dict):
        return {_text(k): _text(v) for k, v in raw.items()}
    items = list(raw)
    return {_text(items[i]): _text(items[i + 1]) for i in range(0, len(items), 2)}


def _prefix(tenant: str) -> str:
    """The start of every working memory key of the tenant (the '}' ends the tenant: no other tenant's key has it)."""
    return f"hs:{{{tenant}}}:wm:"


def _redis_key(key: SessionKey) -> str:
    return f"{_prefix(key.tenant)}{key.namespace}:{quote(key.session_id, safe='')}"


class RedisWorkingMemory(RedisBacked, WorkingMemoryStore):
    """`WorkingMemoryStore` on Redis; same semantics as `InProcessWorkingMemory`, safe across replicas."""

    backend = "working memory"

    def __init__(self, client: redis.asyncio.Redis | RedisCluster, clock: Clock) -> None:
        super().__init__(clock)
        self._client = client
        self._lua_append = client.register_script(_APPEND)
        self._lua_set_state = client.register_script(_SET_STATE)
        self._lua_purge = client.register_script(_PURGE)

    def _view(self, key: SessionKey, fields: dict[str, str]) -> WorkingMemory:
        head, tail = int(fields.get("head", "0")), int(fields.get("tail", "0"))
        return WorkingMemory(
            session_id=key.session_id,
            namespace=key.namespace,
            state=json.loads(fields["state"]) if "state" in fields else {},
            turns=[_decode_turn(fields[f"t:{n}"]) for n in range(head, tail)],
            expires_at=_EPOCH + int(fields["exp"]) * _MICROSECOND,
        )

    def _live_view(self, key: SessionKey, raw: Any) -> WorkingMemory | None:
        """The session HGETALL read, None unless it is live on the injected clock."""
        fields = _fields(raw)
        if "exp" not in fields or int(fields["exp"]) <= _micros(self._clock.now()):
            return None
        return self._view(key, fields)

    async def _get(self, key: SessionKey) -> WorkingMemory | None:
        with redis_errors("working memory"):
            raw = await self._client.hgetall(_redis_key(key))
        return self._live_view(key, raw)

    async def _take(self, key: SessionKey) -> WorkingMemory | None:
        name = _redis_key(key)
        with redis_errors("working memory"):
            async with self._client.pipeline(transaction=True) as pipe:  # one key: atomic on a cluster too
                pipe.hgetall(name)
                pipe.delete(name)
                raw, _ = await pipe.execute()
        return self._live_view(key, raw)

    async def _append_turn(
        self, key: SessionKey, turn: Turn, window: int, ttl_seconds: int, subject: str | None
    ) -> tuple[WorkingMemory, list[Turn]]:
        now = self._clock.now()
        expires_at = now + timedelta(seconds=ttl_seconds)
        args: list[str | int] = [_micros(now), _micros(expires_at), _ttl_ms(ttl_seconds), window, _encode_turn(turn)]
        if subject is not None:
            args.append(subject)
        with redis_errors("working memory"):
            evicted, session = await self._lua_append(keys=[_redis_key(key)], args=args)
        return self._view(key, _fields(session)), [_decode_turn(t) for t in evicted]

    async def _update_state(
        self, key: SessionKey, state: dict[str, Any], merge: bool, ttl_seconds: int, subject: str | None
    ) -> WorkingMemory:
        name = _redis_key(key)
        for _ in range(_MAX_STATE_ATTEMPTS):
            now = self._clock.now()
            with redis_errors("working memory"):
                current = await self._client.hmget(name, ["exp", "sv", "state"])
            exp, version, stored = (None if v is None else _text(v) for v in current)
            live = exp is not None and int(exp) > _micros(now)
            base: dict[str, Any] = json.loads(stored) if live and stored is not None else {}
            new_state = merge_state(base, state) if merge else state
            try:
                encoded = json.dumps(new_state)
            except (TypeError, ValueError) as exc:
                raise InvalidArgument("state must be a JSON object") from exc
            expires_at = now + timedelta(seconds=ttl_seconds)
            expected = (version or "") if live else "-"
            args: list[str | int] = [
                expected,
                _micros(now),
                _micros(expires_at),
                _ttl_ms(ttl_seconds),
                encoded,
                uuid.uuid4().hex,
            ]
            if subject is not None:
                args.append(subject)
            with redis_errors("working memory"):
                session = await self._lua_set_state(keys=[name], args=args)
            if session is not None:
                return self._view(key, _fields(session))
        raise BackendUnavailable("working memory (redis): too many concurrent updates of one session")

    async def _purge(self, tenant: str, namespace: str) -> int:
        """An expired session whose key Redis has not yet dropped is deleted without being counted; a session
        written while the purge runs may survive it."""
        prefix = f"{_prefix(tenant)}{namespace}:"
        pattern = _glob_escaped(prefix) + "*"
        removed = 0
        batch: list[bytes | str] = []
        with redis_errors("working memory"):
            # the pattern also matches longer namespaces (`user:1` finds `user:1:2`'s keys): a session id is
            # percent-encoded, so a key of this namespace has no ':' after the prefix
            async for key in self._client.scan_iter(match=pattern, count=_SCAN_COUNT):
                name = _text(key)
                if not name.startswith(prefix) or ":" in name[len(prefix) :]:
                    continue
                batch.append(key)
                if len(batch) >= _PURGE_BATCH:
                    removed += await self._drop(batch)
                    batch = []
            if batch:
                removed += await self._drop(batch)
        return removed

    async def _drop(self, keys: list[bytes | str]) -> int:
        live = await self._lua_purge(keys=keys, args=[_micros(self._clock.now())])
        return int(live)

    async def _sessions_written_by(self, tenant: str, subject: str) -> list[tuple[str, str]]:
        """A session written while the scan runs may be missed."""
        prefix = _prefix(tenant)
        pattern = _glob_escaped(prefix) + "*"
        found: set[tuple[str, str]] = set()  # SCAN may return a key more than once
        batch: list[str] = []
        with redis_errors("working memory"):
            async for key in self._client.scan_iter(match=pattern, count=_SCAN_COUNT):
                name = _text(key)
                if name.startswith(prefix):
                    batch.append(name)
                if len(batch) >= _WRITERS_BATCH:
                    found.update(await self._written_by(batch, prefix, subject))
                    batch = []
            if batch:
                found.update(await self._written_by(batch, prefix, subject))
        return sorted(found)

    async def _written_by(self, keys: list[str], prefix: str, subject: str) -> list[tuple[str, str]]:
        """Those of `keys` (sessions of one tenant) that are live sessions `subject` wrote into."""
        async with self._client.pipeline(transaction=False) as pipe:
            for key in keys:
                pipe.hmget(key, ["exp", f"w:{subject}"])
            answers = await pipe.execute()
        now = _micros(self._clock.now())
        written: list[tuple[str, str]] = []
        for key, (exp, wrote) in zip(keys, answers, strict=True):
            if exp is None or wrote is None or int(_text(exp)) <= now:
                continue
            # a session id is percent-encoded, so the namespace is everything before the last ':'
            namespace, _, session_id = key[len(prefix) :].rpartition(":")
            written.append((namespace, unquote(session_id)))
        return written


def _ttl_ms(ttl_seconds: int) -> int:
    """The Redis TTL: real time, relative, at least 1 ms (0 would delete the key inside the script)."""
    return max(1, int(ttl_seconds * 1000))

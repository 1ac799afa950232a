"""Idempotency stores (DESIGN §3): `InProcessIdempotency` for the embedded mode, `RedisIdempotency` for replicas.

Both implement `tenancy.limits.IdempotencyStore` and own the record of one idempotency key: a *pending* claim
while the first call runs, then the *done* record (arguments fingerprint + first response) for the retention
period. `begin` claims atomically; concurrent calls with the same key and fingerprint wait for the claimer and
replay its response; another fingerprint is a `Conflict`.

Redis record (key `IdempotencyKey.redis_key`, i.e. `hs:{tenant}:idem:<digest>`), JSON:
`{"state": "pending", "fp": ..., "owner": ...}` with a short TTL (`pending_ttl_seconds`, so a crashed replica's
claim frees itself), then `{"state": "done", "fp": ..., "response": ...}` with the retention TTL. Waiters poll
with a backoff from 5 ms to 100 ms. The pending TTL must exceed the longest tool call: a claim that outlives it
can be taken over by a retry. Every Redis failure, and a wait that times out, raises `BackendUnavailable`.
"""

from __future__ import annotations

import copy
import json
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import redis.asyncio
from redis.exceptions import RedisError

from memory.errors import BackendUnavailable
from tenancy.limits import Claim, Conflict, IdempotencyKey, Replay, Started

DEFAULT_RETENTION_SECONDS = 86_400
DEFAULT_WAIT_TIMEOUT_SECONDS = 30.0
DEFAULT_PENDING_TTL_SECONDS = 60.0
_POLL_FIRST = 0.005
_POLL_MAX = 0.1


@dataclass
class _Entry:
    fingerprint: str
    done: bool = False
    response: dict[str, Any] | None = None
    expires_at: float | None = None  # on the injected clock; None while pending
    finished: anyio.Event = field(default_factory=anyio.Event)


class InProcessIdempotency:
    """`IdempotencyStore` in a dict, for one process. All decisions happen between awaits, so concurrent
    coroutines of one event loop never both claim a key.

    A pending claim has no TTL here: its claimer lives in this process, and must `complete` or `abandon` it
    (in a `finally`); waiters give up after `wait_timeout_seconds` of real (event-loop) time. Retention of done
    records is measured on the injected clock.
    """

    def __init__(
        self,
        retention_seconds: float = DEFAULT_RETENTION_SECONDS,
        wait_timeout_seconds: float = DEFAULT_WAIT_TIMEOUT_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._retention = retention_seconds
        self._wait_timeout = wait_timeout_seconds
        self._clock = clock
        self._entries: dict[IdempotencyKey, _Entry] = {}
        self._expiry: deque[tuple[float, IdempotencyKey]] = deque()  # done records, in expiry order

    def _drop_expired(self) -> None:
        now = self._clock()
        while self._expiry and self._expiry[0][0] <= now:
            expires_at, key = self._expiry.popleft()
            entry = self._entries.get(key)
            if entry is not None and entry.done and entry.expires_at == expires_at:
                del self._entries[key]

    async def begin(self, key: IdempotencyKey, fingerprint: str) -> Claim:
        with anyio.move_on_after(self._wait_timeout):
            while True:
                self._drop_expired()
                entry = self._entries.get(key)
                if entry is None:
                    self._entries[key] = _Entry(fingerprint)
                    return Started()
                if entry.fingerprint != fingerprint:
                    return Conflict()
                if entry.done:
                    assert entry.response is not None
                    return Replay(copy.deepcopy(entry.response))
                await entry.finished.wait()
        raise BackendUnavailable("timed out waiting for the in-flight call with this idempotency key")

    async def complete(self, key: IdempotencyKey, fingerprint: str, response: dict[str, Any]) -> None:
        entry = self._entries.get(key)
        if entry is not None and (entry.done or entry.fingerprint != fingerprint):
            return  # the first response (or another call's claim) stays
        expires_at = self._clock() + self._retention
        done = _Entry(fingerprint, done=True, response=copy.deepcopy(response), expires_at=expires_at)
        self._entries[key] = done
        self._expiry.append((expires_at, key))
        if entry is not None:
            entry.finished.set()

    async def abandon(self, key: IdempotencyKey) -> None:
        entry = self._entries.get(key)
        if entry is not None and not entry.done:
            del self._entries[key]
            entry.finished.set()

    async def ping(self) -> None:
        return None

    async def close(self) -> None:
        for entry in self._entries.values():
            entry.finished.set()
        self._entries.clear()
        self._expiry.clear()


# KEYS[1] record; ARGV: pending record, pending ttl ms. Returns false if claimed, else the current record.
_CLAIM = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return false end
return redis.call('GET', KEYS[1])
"""

# KEYS[1] record; ARGV: fingerprint, done record, retention ms. Stores the response unless a done record or
# another fingerprint's claim is there.
_COMPLETE = """
local current = redis.call('GET', KEYS[1])
if current then
  local ok, record = pcall(cjson.decode, current)
  if ok and (record['state'] ~= 'pending' or record['fp'] ~= ARGV[1]) then return 0 end
end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
"""

# KEYS[1] record; ARGV: owner token ('' = any). Deletes a pending claim only.
_ABANDON = """
local current = redis.call('GET', KEYS[1])
if not current then return 0 end
local ok, record = pcall(cjson.decode, current)
if not ok or record['state'] ~= 'pending' then return 0 end
if ARGV[1] ~= '' and record['owner'] ~= ARGV[1] then return 0 end
return redis.call('DEL', KEYS[1])
"""


@contextmanager
def _redis_errors() -> Iterator[None]:
    try:
        yield
    except (RedisError, OSError) as exc:
        raise BackendUnavailable(f"idempotency store (redis) unavailable: {type(exc).__name__}: {exc}") from exc


class RedisIdempotency:
    """`IdempotencyStore` on Redis, shared by every replica (see the module docstring for the record)."""

    def __init__(
        self,
        client: redis.asyncio.Redis,
        retention_seconds: float = DEFAULT_RETENTION_SECONDS,
        wait_timeout_seconds: float = DEFAULT_WAIT_TIMEOUT_SECONDS,
        pending_ttl_seconds: float = DEFAULT_PENDING_TTL_SECONDS,
    ) -> None:
        self._client = client
        self._retention_ms = max(1, int(retention_seconds * 1000))
        self._wait_timeout = wait_timeout_seconds
        self._pending_ttl_ms = max(1, int(pending_ttl_seconds * 1000))
        self._claim = client.register_script(_CLAIM)
        self._complete = client.register_script(_COMPLETE)
        self._abandon = client.register_script(_ABANDON)
        # redis key -> owner token of the claims this instance holds (until complete/abandon), so `abandon`
        # never deletes a claim that another replica took over after ours expired
        self._owned: dict[str, str] = {}

    async def begin(self, key: IdempotencyKey, fingerprint: str) -> Claim:
        redis_key = key.redis_key
        delay = _POLL_FIRST
        with anyio.move_on_after(self._wait_timeout):
            while True:
                owner = uuid.uuid4().hex
                pending = json.dumps({"state": "pending", "fp": fingerprint, "owner": owner})
                with _redis_errors():
                    current = await self._claim(keys=[redis_key], args=[pending, self._pending_ttl_ms])
                if current is None:
                    self._owned[redis_key] = owner
                    return Started()
                record = _decode(current)
                if record.get("fp") != fingerprint:
                    return Conflict()
                if record.get("state") == "done":
                    response = record.get("response")
                    if not isinstance(response, dict):
                        raise BackendUnavailable("idempotency store (redis) holds a malformed record")
                    return Replay(response)
                await anyio.sleep(delay)
                delay = min(delay * 2, _POLL_MAX)
        raise BackendUnavailable("timed out waiting for the in-flight call with this idempotency key")

    async def complete(self, key: IdempotencyKey, fingerprint: str, response: dict[str, Any]) -> None:
        redis_key = key.redis_key
        done = json.dumps({"state": "done", "fp": fingerprint, "response": response})
        with _redis_errors():
            await self._complete(keys=[redis_key], args=[fingerprint, done, self._retention_ms])
        self._owned.pop(redis_key, None)

    async def abandon(self, key: IdempotencyKey) -> None:
        redis_key = key.redis_key
        owner = self._owned.pop(redis_key, "")
        with _redis_errors():
            await self._abandon(keys=[redis_key], args=[owner])

    async def ping(self) -> None:
        with _redis_errors():
            await self._client.ping()

    async def close(self) -> None:
        with _redis_errors():
            await self._client.aclose()


def _decode(raw: Any) -> dict[str, Any]:
    try:
        record = json.loads(raw.decode() if isinstance(raw, bytes) else raw)
    except (TypeError, ValueError) as exc:
        raise BackendUnavailable("idempotency store (redis) holds a malformed record") from exc
    if not isinstance(record, dict):
        raise BackendUnavailable("idempotency store (redis) holds a malformed record")
    return record

"""Idempotency stores (docs/DESIGN.md § "The write path"): `InProcessIdempotency` for the embedded mode,
`RedisIdempotency` for replicas, and `run_claimed`, which keeps a running call's claim alive.

Both stores implement `tenancy.limits.IdempotencyStore` and own the record of one idempotency key: a *pending*
claim while the first call runs, then the *done* record (arguments fingerprint + first response) for the
retention period. `begin` claims atomically; concurrent calls with the same key and fingerprint wait for the
claimer and replay its response; another fingerprint is a `Conflict`. `done_response` only looks: the rate-limit
gate asks it whether a call is a replay (which then takes no write token).

A claim is a lease (`lease_seconds`, 5 s by default) that the running call renews every third of the lease
(`run_claimed`). A call that dies (SIGKILL, a lost replica) stops renewing, so a retry waits at most one lease
and then takes the claim over and runs the call itself; a live call keeps its claim however long it runs, and
duplicates wait for it (up to `wait_timeout_seconds`) and replay its answer. The takeover is atomic: a new
claim replaces only an absent or expired one (Redis `SET NX` on a key whose TTL is the lease; one decision
between awaits in process), so of many racing retries exactly one runs.

Redis record (key `IdempotencyKey.redis_key`, i.e. `hs:{tenant}:idem:<digest>`, one key per script, so it
works on Redis Cluster), JSON: `{"state": "pending", "fp": ..., "owner": ...}` with the lease as its TTL,
renewed only by its owner token, then `{"state": "done", "fp": ..., "subject": ..., "response": ...}` with the
retention TTL. Waiters poll with a backoff from 5 ms to 100 ms. Every Redis failure, and a wait that times out, raises
`BackendUnavailable`.

`erase` removes completed records of one tenant by the key's subject or by a value their response holds
(`Erasure`, the one rule both stores apply); a claim still running is never erased. The done record carries the
key's subject for it (the Redis key is a digest); a done record written without it (by an older version, within
its retention) is matched by its response only. On Redis, `erase` SCANs the tenant's
`hs:{tenant}:idem:*` keys (every primary of a cluster; the tenant name glob-escaped, each key's tenant part
checked exactly), reads them, and deletes each matching one with a script that deletes only if the key still
holds the very record it read, so a record claimed or completed meanwhile stays.
"""

from __future__ import annotations

import copy
import json
import logging
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
import redis.asyncio
from redis.asyncio.cluster import RedisCluster

from memory.clients.redis_errors import RedisBacked, redis_errors
from memory.cpu_meter import waiting_elsewhere
from memory.errors import BackendUnavailable
from tenancy.idempotency_records import (
    ABANDON,
    CLAIM,
    COMPLETE,
    ERASE,
    READ_BATCH,
    RENEW,
    SCAN_COUNT,
    Erasure,
    decode_record,
    glob_escape,
    is_record_key,
)
from tenancy.limits import Claim, Conflict, IdempotencyKey, IdempotencyStore, Replay, Started, tenant_prefix

logger = logging.getLogger("hindsight.idempotency")

T = TypeVar("T")

DEFAULT_RETENTION_SECONDS = 86_400
DEFAULT_WAIT_TIMEOUT_SECONDS = 30.0
DEFAULT_LEASE_SECONDS = 5.0
_POLL_FIRST = 0.005
_POLL_MAX = 0.1


async def run_claimed(
    store: IdempotencyStore,
    keys: IdempotencyKey | Collection[IdempotencyKey],
    operation: Callable[[], Awaitable[T]],
) -> T:
    """Run `operation`, the call that got `Started` for `keys` (one key, or one per item of a batch), renewing
    their claims every third of the store's lease until it returns; its exceptions propagate unchanged. A renewal
    that fails (the store is briefly unreachable) is logged and tried again at the next tick; a claim the store no
    longer holds is not renewed again."""
    held = [keys] if isinstance(keys, IdempotencyKey) else list(keys)
    outcome: list[T] = []
    failure: list[Exception] = []
    done = anyio.Event()
    async with anyio.create_task_group() as task_group:
        task_group.start_soon(_keep_renewing, store, held, done)
        try:
            outcome.append(await operation())
        except Exception as exc:  # re-raised below: raised inside the task group it would come out as a group
            failure.append(exc)
        finally:
            done.set()
    if failure:
        raise failure[0]
    return outcome[0]


async def _keep_renewing(store: IdempotencyStore, keys: list[IdempotencyKey], done: anyio.Event) -> None:
    interval = store.lease_seconds / 3
    while keys:
        with anyio.move_on_after(interval):
            await done.wait()
        if done.is_set():
            return
        with anyio.CancelScope(shield=True):  # never cancelled half-way: a client may not survive that
            keys = [key for key in keys if await _renewed(store, key)]


async def _renewed(store: IdempotencyStore, key: IdempotencyKey) -> bool:
    """Whether the claim on `key` is still held after renewing it (True when the store is briefly unreachable:
    tried again at the next tick)."""
    try:
        held = await store.renew(key)
    except BackendUnavailable as exc:
        logger.warning("could not renew an idempotency claim (%s); retrying", exc.message)
        return True
    if not held:
        logger.warning("an idempotency claim ran out while its call was running; a retry may run it too")
    return held


@dataclass
class _Entry:
    fingerprint: str
    done: bool = False
    response: dict[str, Any] | None = None
    expires_at: float | None = None  # done: end of retention; pending: end of the lease (on the injected clock)
    finished: anyio.Event = field(default_factory=anyio.Event)


class InProcessIdempotency:
    """`IdempotencyStore` in a dict, for one process. All decisions happen between awaits, so concurrent
    coroutines of one event loop never both claim a key.

    Leases and retention are measured on the injected clock (`time.monotonic` by default: waiters also wake at
    a lease's end to check it, in event-loop time); waiters give up after `wait_timeout_seconds`.
    """

    def __init__(
        self,
        retention_seconds: float = DEFAULT_RETENTION_SECONDS,
        wait_timeout_seconds: float = DEFAULT_WAIT_TIMEOUT_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
    ) -> None:
        self._retention = retention_seconds
        self._wait_timeout = wait_timeout_seconds
        self._clock = clock
        self._lease = lease_seconds
        self._entries: dict[IdempotencyKey, _Entry] = {}
        self._expiry: deque[tuple[float, IdempotencyKey]] = deque()  # done records, in expiry order

    @property
    def lease_seconds(self) -> float:
        return self._lease

    def _drop_expired(self) -> None:
        now = self._clock()
        while self._expiry and self._expiry[0][0] <= now:
            expires_at, key = self._expiry.popleft()
            entry = self._entries.get(key)
            if entry is not None and entry.done and entry.expires_at == expires_at:
                del self._entries[key]

    def _claim(self, key: IdempotencyKey, fingerprint: str) -> Started:
        previous = self._entries.get(key)
        self._entries[key] = _Entry(fingerprint, expires_at=self._clock() + self._lease)
        if previous is not None:
            previous.finished.set()  # a taken-over claim: its waiters look again
        return Started()

    async def begin(self, key: IdempotencyKey, fingerprint: str) -> Claim:
        with anyio.move_on_after(self._wait_timeout):
            while True:
                self._drop_expired()
                entry = self._entries.get(key)
                if entry is None:
                    return self._claim(key, fingerprint)
                if entry.fingerprint != fingerprint:
                    return Conflict()
                if entry.done:
                    assert entry.response is not None
                    return Replay(copy.deepcopy(entry.response))
                assert entry.expires_at is not None
                lease_left = entry.expires_at - self._clock()
                if lease_left <= 0:
                    return self._claim(key, fingerprint)  # its call stopped renewing: take it over
                async with waiting_elsewhere():  # on another call: this one's turn goes to others meanwhile
                    with anyio.move_on_after(lease_left):
                        await entry.finished.wait()
        raise BackendUnavailable("timed out waiting for the in-flight call with this idempotency key")

    async def renew(self, key: IdempotencyKey) -> bool:
        entry = self._entries.get(key)
        if entry is None or entry.done:
            return False
        entry.expires_at = self._clock() + self._lease
        return True

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

    async def done_response(self, key: IdempotencyKey) -> dict[str, Any] | None:
        self._drop_expired()
        entry = self._entries.get(key)
        if entry is None or not entry.done:
            return None
        assert entry.response is not None
        return copy.deepcopy(entry.response)

    async def abandon(self, key: IdempotencyKey) -> None:
        entry = self._entries.get(key)
        if entry is not None and not entry.done:
            del self._entries[key]
            entry.finished.set()

    async def erase(self, tenant: str, *, subjects: Collection[str] = (), mentions: Collection[str] = ()) -> int:
        erasure = Erasure.of(subjects, mentions)
        if erasure.empty:
            return 0
        self._drop_expired()
        doomed = [
            key
            for key, entry in self._entries.items()
            if key.tenant == tenant and entry.done and erasure.matches(key.subject, entry.response)
        ]
        for key in doomed:  # done records have no waiters; their stale `_expiry` items are skipped when due
            del self._entries[key]
        return len(doomed)

    async def ping(self) -> None:
        return None

    async def close(self) -> None:
        for entry in self._entries.values():
            entry.finished.set()
        self._entries.clear()
        self._expiry.clear()


class RedisIdempotency(RedisBacked):
    """`IdempotencyStore` on Redis, shared by every replica (see the module docstring for the record)."""

    backend = "idempotency store"

    def __init__(
        self,
        client: redis.asyncio.Redis | RedisCluster,
        retention_seconds: float = DEFAULT_RETENTION_SECONDS,
        wait_timeout_seconds: float = DEFAULT_WAIT_TIMEOUT_SECONDS,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
    ) -> None:
        self._client = client
        self._retention_ms = max(1, int(retention_seconds * 1000))
        self._wait_timeout = wait_timeout_seconds
        self._lease = lease_seconds
        self._lease_ms = max(1, int(lease_seconds * 1000))
        self._claim = client.register_script(CLAIM)
        self._renew = client.register_script(RENEW)
        self._complete = client.register_script(COMPLETE)
        self._abandon = client.register_script(ABANDON)
        self._erase = client.register_script(ERASE)
        # redis key -> owner token of the claims this instance holds (until complete/abandon), so `renew` and
        # `abandon` never touch a claim that another replica took over after ours ran out
        self._owned: dict[str, str] = {}

    @property
    def lease_seconds(self) -> float:
        return self._lease

    async def begin(self, key: IdempotencyKey, fingerprint: str) -> Claim:
        redis_key = key.redis_key
        delay = _POLL_FIRST
        deadline = anyio.current_time() + self._wait_timeout
        while True:  # the wait timeout is checked between calls: a Redis call is never cancelled half-way
            owner = uuid.uuid4().hex
            pending = json.dumps({"state": "pending", "fp": fingerprint, "owner": owner})
            with redis_errors("idempotency store"):
                current = await self._claim(keys=[redis_key], args=[pending, self._lease_ms])
            if current is None:
                self._owned[redis_key] = owner
                return Started()
            record = decode_record(current)
            if record.get("fp") != fingerprint:
                return Conflict()
            if record.get("state") == "done":
                response = record.get("response")
                if not isinstance(response, dict):
                    raise BackendUnavailable("idempotency store (redis) holds a malformed record")
                return Replay(response)
            left = deadline - anyio.current_time()
            if left <= 0:
                raise BackendUnavailable("timed out waiting for the in-flight call with this idempotency key")
            async with waiting_elsewhere():  # on another call: this one's turn goes to others meanwhile
                await anyio.sleep(min(delay, left))
            delay = min(delay * 2, _POLL_MAX)

    async def renew(self, key: IdempotencyKey) -> bool:
        owner = self._owned.get(key.redis_key)
        if owner is None:
            return False
        with redis_errors("idempotency store"):
            renewed = await self._renew(keys=[key.redis_key], args=[owner, self._lease_ms])
        return int(renewed) == 1

    async def complete(self, key: IdempotencyKey, fingerprint: str, response: dict[str, Any]) -> None:
        redis_key = key.redis_key
        done = json.dumps({"state": "done", "fp": fingerprint, "subject": key.subject, "response": response})
        with redis_errors("idempotency store"):
            await self._complete(keys=[redis_key], args=[fingerprint, done, self._retention_ms])
        self._owned.pop(redis_key, None)

    async def done_response(self, key: IdempotencyKey) -> dict[str, Any] | None:
        with redis_errors("idempotency store"):
            current = await self._client.get(key.redis_key)
        if current is None:
            return None
        record = decode_record(current)
        if record.get("state") != "done":
            return None
        response = record.get("response")
        if not isinstance(response, dict):
            raise BackendUnavailable("idempotency store (redis) holds a malformed record")
        return response

    async def abandon(self, key: IdempotencyKey) -> None:
        redis_key = key.redis_key
        owner = self._owned.pop(redis_key, "")
        with redis_errors("idempotency store"):
            await self._abandon(keys=[redis_key], args=[owner])

    async def erase(self, tenant: str, *, subjects: Collection[str] = (), mentions: Collection[str] = ()) -> int:
        erasure = Erasure.of(subjects, mentions)
        if erasure.empty:
            return 0
        record_prefix = f"{tenant_prefix(tenant)}:idem:"
        pattern = f"{glob_escape(record_prefix)}*"
        removed = 0
        batch: list[str] = []
        with redis_errors("idempotency store"):
            async for raw_key in self._client.scan_iter(match=pattern, count=SCAN_COUNT):
                key = raw_key.decode() if isinstance(raw_key, bytes) else str(raw_key)
                if not is_record_key(key, record_prefix):
                    continue
                batch.append(key)
                if len(batch) >= READ_BATCH:
                    removed += await self._erase_matching(batch, erasure)
                    batch = []
            if batch:
                removed += await self._erase_matching(batch, erasure)
        return removed

    async def _erase_matching(self, keys: list[str], erasure: Erasure) -> int:
        """Read the records at `keys` and delete the completed ones `erasure` matches, each only if it is still
        the record read. Returns how many were deleted."""
        async with self._client.pipeline(transaction=False) as pipe:
            for key in keys:
                pipe.get(key)
            values: list[Any] = await pipe.execute()
        removed = 0
        for key, raw in zip(keys, values, strict=True):
            if raw is None:
                continue  # gone since the scan (expired, erased by a concurrent erase)
            try:
                record = decode_record(raw)
            except BackendUnavailable:
                logger.warning("an idempotency record that is not JSON was left in place by an erase")
                continue
            if record.get("state") != "done":
                continue  # a call still running
            subject = record.get("subject")
            if erasure.matches(subject if isinstance(subject, str) else None, record.get("response")):
                removed += int(await self._erase(keys=[key], args=[raw]))
        return removed

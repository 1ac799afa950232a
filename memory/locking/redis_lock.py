"""`RedisNamespaceLocks`: a per-namespace write lock shared by every gateway replica.

One key per namespace, `hs:{tenant}:lock:<namespace>` (the tenant is the Redis Cluster hash tag, the namespace is
percent-encoded), set with `SET NX PX` to a random token and released by a compare-and-delete script, so a holder
never releases a lock another one took after its lease ran out. The lease bounds how long a crashed replica can
hold a namespace, and a release that gets no answer within `release_seconds` (a hung Redis) is left to it, so a
write that took the lock just before Redis froze does not wait a second deadline on its way out. Waiters poll
with a short backoff and give up with the retryable `BackendUnavailable`. Within
one process the in-process lock is taken first, so tasks of one replica queue locally instead of polling Redis.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import quote

import anyio
from redis.exceptions import RedisClusterException, RedisError

from memory.errors import BackendUnavailable
from memory.locking.in_process import InProcessNamespaceLocks

logger = logging.getLogger("hindsight.locks")
_FAILURES = (RedisError, RedisClusterException, OSError)

DEFAULT_LEASE_SECONDS = 15.0
DEFAULT_WAIT_SECONDS = 10.0
DEFAULT_RELEASE_SECONDS = 0.5
_RELEASE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end"


def lock_key(tenant: str, namespace: str) -> str:
    return f"hs:{{{tenant}}}:lock:{quote(namespace, safe='')}"


class RedisNamespaceLocks:
    def __init__(
        self,
        client: Any,
        *,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        wait_seconds: float = DEFAULT_WAIT_SECONDS,
        release_seconds: float = DEFAULT_RELEASE_SECONDS,
    ) -> None:
        self._client = client  # redis.asyncio.Redis or RedisCluster: one key per call, any slot
        self.lease_ms = max(1, int(lease_seconds * 1000))
        self.wait_seconds = wait_seconds
        self.release_seconds = release_seconds
        self._local = InProcessNamespaceLocks(wait_seconds)

    @asynccontextmanager
    async def hold(self, tenant: str, namespace: str) -> AsyncIterator[None]:
        async with self._local.hold(tenant, namespace):
            key = lock_key(tenant, namespace)
            token = uuid.uuid4().hex
            await self._acquire(key, token)
            try:
                yield
            finally:
                with anyio.CancelScope(shield=True):
                    await self._release(key, token)

    async def _acquire(self, key: str, token: str) -> None:
        deadline = anyio.current_time() + self.wait_seconds
        delay = 0.002
        while True:
            try:
                if await self._client.set(key, token, nx=True, px=self.lease_ms):
                    return
            except _FAILURES as exc:
                raise BackendUnavailable(f"redis unavailable for the namespace lock: {type(exc).__name__}") from exc
            if anyio.current_time() + delay > deadline:
                raise BackendUnavailable("the namespace is busy with another replica's write; retry shortly")
            await anyio.sleep(delay)
            delay = min(delay * 2, 0.05)

    async def _release(self, key: str, token: str) -> None:
        released = False
        with anyio.move_on_after(self.release_seconds):
            try:
                await self._client.eval(_RELEASE, 1, key, token)
            except _FAILURES as exc:  # the lease ends it anyway
                logger.warning("could not release namespace lock %s (%s); its lease ends it", key, type(exc).__name__)
            released = True
        if not released:
            seconds = self.release_seconds
            logger.warning("no answer releasing namespace lock %s within %g s; its lease ends it", key, seconds)

"""`InProcessNamespaceLocks`: one `anyio.Lock` per (tenant, namespace), created on demand and dropped when no
task holds or waits for it, so the table never grows with the number of namespaces ever written. A call that has to
wait for a lock leaves its turn among its tenant's running calls meanwhile (`memory.cpu_meter.waiting_elsewhere`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

from memory.cpu_meter import waiting_elsewhere
from memory.errors import BackendUnavailable

DEFAULT_WAIT_SECONDS = 10.0


class _Entry:
    __slots__ = ("lock", "users")

    def __init__(self) -> None:
        self.lock = anyio.Lock()
        self.users = 0


class InProcessNamespaceLocks:
    def __init__(self, wait_seconds: float = DEFAULT_WAIT_SECONDS) -> None:
        self.wait_seconds = wait_seconds
        self._entries: dict[tuple[str, str], _Entry] = {}

    @asynccontextmanager
    async def hold(self, tenant: str, namespace: str) -> AsyncIterator[None]:
        """Hold the namespace's lock for the body; waiting longer than `wait_seconds` raises the retryable
        `BackendUnavailable` instead of queueing without bound."""
        key = (tenant, namespace)
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = _Entry()
        entry.users += 1
        try:
            try:
                if not _taken_at_once(entry.lock):
                    async with waiting_elsewhere():  # on another call: this one's turn goes to others meanwhile
                        with anyio.fail_after(self.wait_seconds):
                            await entry.lock.acquire()
            except TimeoutError:
                raise BackendUnavailable("the namespace is busy with other writes; retry shortly") from None
            try:
                yield
            finally:
                entry.lock.release()
        finally:
            entry.users -= 1
            if entry.users == 0:
                self._entries.pop(key, None)

    def held(self) -> int:
        """How many namespaces have a holder or a waiter (for tests and debug views)."""
        return len(self._entries)


def _taken_at_once(lock: anyio.Lock) -> bool:
    try:
        lock.acquire_nowait()
    except anyio.WouldBlock:
        return False
    return True

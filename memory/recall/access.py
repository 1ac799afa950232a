"""`AccessRecorder`: access counts and `last_accessed_at`, bumped off the request path.

Recalls only note which memories they returned; a background flush, at most `flush_delay` later, applies every
noted access in one store call per scope (repeated accesses of one memory in a window still count each time).
Without a task group (scripts, tests) each recall's bump is applied inline.

A flush is background work in the app's task group: nothing it raises may escape (an escaping exception would
cancel that group and with it the runtime). A failed store call drops that scope's bumps, is logged with the
tenant and counted through `report_errors_to`; the other scopes are still flushed.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable

import anyio
import anyio.abc

from memory.clock import Clock
from memory.ports import VectorStore
from memory.scope import NamespaceScope

logger = logging.getLogger("hindsight.access")


class AccessRecorder:
    def __init__(self, store: VectorStore, clock: Clock, flush_delay: float = 0.25) -> None:
        self.store = store
        self.clock = clock
        self.flush_delay = flush_delay
        self._queued: dict[NamespaceScope, Counter[str]] = {}
        self._task_group: anyio.abc.TaskGroup | None = None
        self._flush_scheduled = False
        self._lock = anyio.Lock()
        self._on_error: Callable[[], None] | None = None

    def attach_task_group(self, task_group: anyio.abc.TaskGroup | None) -> None:
        """Flush in this task group (the app's lifespan); without one, bumps are applied inline."""
        self._task_group = task_group

    def report_errors_to(self, on_error: Callable[[], None] | None) -> None:
        """Call `on_error` once per failed flush of a scope (a metric); the failure is logged here."""
        self._on_error = on_error

    async def record(self, scope: NamespaceScope, memory_ids: list[str]) -> None:
        if not memory_ids:
            return
        self._queued.setdefault(scope, Counter()).update(memory_ids)
        if self._task_group is None:
            await self.flush()
        elif not self._flush_scheduled:
            self._flush_scheduled = True
            self._task_group.start_soon(self._flush_later)

    async def _flush_later(self) -> None:
        try:
            await anyio.sleep(self.flush_delay)
        finally:
            self._flush_scheduled = False
        try:
            await self.flush()
        except Exception:  # the top of a background job: never let it end the task group
            logger.exception("flushing access counts failed")
            self._failed()

    async def flush(self) -> None:
        """Apply every queued access now: one store call per scope and round of distinct ids."""
        async with self._lock:  # a flush in flight finishes before the next one (and before drain returns)
            await self._flush_queued()

    async def _flush_queued(self) -> None:
        queued, self._queued = self._queued, {}
        now = self.clock.now()
        for scope, counts in queued.items():
            while counts:
                ids = list(counts)
                try:
                    await self.store.record_access(scope, ids, now)
                except Exception:  # best effort: a failed bump never fails a recall that already answered
                    logger.exception(
                        "could not record %d accesses (tenant %s, namespaces %s)",
                        len(ids),
                        scope.tenant,
                        "*" if scope.admin else ",".join(scope.all_readable),
                    )
                    self._failed()
                    break
                counts.subtract(ids)
                counts = +counts  # drop the ids whose accesses are all recorded

    def _failed(self) -> None:
        if self._on_error is None:
            return
        try:
            self._on_error()
        except Exception:
            logger.exception("counting a failed access flush failed")

    async def drain(self) -> None:
        """Apply every noted access now, after any flush in flight."""
        await self.flush()

"""`InProcessRecallLog`: the recall log of one gateway process (embedded mode), a bounded deque per tenant."""

from __future__ import annotations

from collections import deque
from collections.abc import Collection
from datetime import timedelta

from memory.clock import Clock
from memory.recall_log.store import (
    DEFAULT_MAX_AGE_SECONDS,
    DEFAULT_MAX_ENTRIES,
    RecallLogEntry,
    check_eraser,
    check_reader,
    erasable,
    matches,
)
from memory.scope import NamespaceScope


class InProcessRecallLog:
    """`RecallLog` in memory: lost on restart, not shared between replicas (use `RedisRecallLog` for that)."""

    def __init__(
        self,
        clock: Clock,
        *,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        max_age_seconds: float = DEFAULT_MAX_AGE_SECONDS,
    ) -> None:
        self._clock = clock
        self._max_entries = max_entries
        self._max_age = timedelta(seconds=max_age_seconds)
        self._logs: dict[str, deque[RecallLogEntry]] = {}

    def _live(self, tenant: str) -> deque[RecallLogEntry]:
        """The tenant's log with the entries past the age bound dropped (oldest are on the left)."""
        log = self._logs.setdefault(tenant, deque(maxlen=self._max_entries))
        cutoff = self._clock.now() - self._max_age
        while log and log[0].at < cutoff:
            log.popleft()
        return log

    async def append(self, scope: NamespaceScope, entry: RecallLogEntry) -> None:
        self._live(scope.tenant).append(entry)

    async def entries(
        self,
        scope: NamespaceScope,
        *,
        limit: int,
        session_id: str | None = None,
        subject: str | None = None,
    ) -> list[RecallLogEntry]:
        check_reader(scope, limit)
        cutoff = self._clock.now() - self._max_age
        found: list[RecallLogEntry] = []
        for entry in reversed(self._live(scope.tenant)):
            if entry.at >= cutoff and matches(entry, session_id, subject):
                found.append(entry)
                if len(found) == limit:
                    break
        return found

    async def erase(
        self,
        scope: NamespaceScope,
        *,
        namespaces: Collection[str] = (),
        subjects: Collection[str] = (),
        memory_ids: Collection[str] = (),
    ) -> int:
        check_eraser(scope)
        if not (namespaces or subjects or memory_ids) or scope.tenant not in self._logs:
            return 0
        names, who, ids = frozenset(namespaces), frozenset(subjects), frozenset(memory_ids)
        log = self._live(scope.tenant)
        kept = [entry for entry in log if not erasable(entry, names, who, ids)]
        removed = len(log) - len(kept)
        if removed:
            log.clear()
            log.extend(kept)  # same order, same `maxlen`; nothing awaits in between
        return removed

    async def close(self) -> None:
        self._logs.clear()

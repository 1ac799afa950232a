"""`InProcessRecallLog`: the recall log of one gateway process (embedded mode), a bounded deque per tenant."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from memory.clock import Clock
from memory.recall_log.store import DEFAULT_MAX_AGE_SECONDS, DEFAULT_MAX_ENTRIES, Pick, RecallLog, RecallLogEntry
from memory.scope import NamespaceScope


class InProcessRecallLog(RecallLog):
    """`RecallLog` in memory: lost on restart, not shared between replicas (use `RedisRecallLog` for that)."""

    def __init__(
        self, clock: Clock, *, max_entries: int = DEFAULT_MAX_ENTRIES, max_age_seconds: float = DEFAULT_MAX_AGE_SECONDS
    ) -> None:
        super().__init__(clock, max_entries=max_entries, max_age_seconds=max_age_seconds)
        self._logs: dict[str, deque[RecallLogEntry]] = {}

    def _live(self, tenant: str) -> deque[RecallLogEntry]:
        """The tenant's log with the entries past the age bound dropped (oldest are on the left)."""
        log = self._logs.setdefault(tenant, deque(maxlen=self._max_entries))
        cutoff = self._cutoff()
        while log and log[0].at < cutoff:
            log.popleft()
        return log

    async def append(self, scope: NamespaceScope, entry: RecallLogEntry) -> None:
        self._live(scope.tenant).append(entry)

    async def _newest_first(self, tenant: str) -> Iterable[RecallLogEntry]:
        return reversed(self._live(tenant))

    async def _remove(self, tenant: str, pick: Pick) -> int:
        if tenant not in self._logs:
            return 0
        log = self._live(tenant)
        kept = [entry for entry in log if not pick(entry)]
        removed = len(log) - len(kept)
        if removed:
            log.clear()
            log.extend(kept)  # same order, same `maxlen`; nothing awaits in between
        return removed

    async def close(self) -> None:
        self._logs.clear()

"""`RecallLogBase`: the half of every `RecallLog` that does not depend on the backend.

It owns the checks (only an admin scope reads or erases), the bounds' settings and the age cutoff on the injected
clock, the filtering of `entries` (live, matching, newest first, at most `limit`) and the choice of what `erase`
removes (`erasable`). A backend (`InProcessRecallLog`, `RedisRecallLog`) keeps each tenant's log within the bounds
and implements `append`, `close` and two primitives: the tenant's entries newest first, and the removal of those a
predicate picks.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterable
from datetime import datetime, timedelta
from itertools import islice

from memory.clock import Clock
from memory.errors import InvalidArgument
from memory.recall_log.store import DEFAULT_MAX_AGE_SECONDS, DEFAULT_MAX_ENTRIES, RecallLog, RecallLogEntry
from memory.scope import NamespaceScope
from memory.validation import check_admin

Pick = Callable[[RecallLogEntry], bool]


def named_namespaces(entry: RecallLogEntry) -> set[str]:
    """The namespaces an entry's arguments asked: `namespaces` when it is a list, and `namespace`."""
    named: set[str] = set()
    listed = entry.arguments.get("namespaces")
    if isinstance(listed, list):
        named.update(n for n in listed if isinstance(n, str))
    single = entry.arguments.get("namespace")
    if isinstance(single, str):
        named.add(single)
    return named


def erasable(
    entry: RecallLogEntry, namespaces: Collection[str], subjects: Collection[str], memory_ids: Collection[str]
) -> bool:
    """Whether `erase` removes the entry: asked by one of `subjects`, named one of `namespaces` in its arguments,
    or has a hit in one of `namespaces` or with an id of `memory_ids`."""
    if entry.subject in subjects:
        return True
    if namespaces and not named_namespaces(entry).isdisjoint(namespaces):
        return True
    return any(hit.namespace in namespaces or hit.id in memory_ids for hit in entry.hits)


def matches(entry: RecallLogEntry, session_id: str | None, subject: str | None) -> bool:
    return (session_id is None or entry.session_id == session_id) and (subject is None or entry.subject == subject)


class RecallLogBase(RecallLog, ABC):
    """The checks, bounds and filters of `RecallLog`, over the backend's primitives; see the module docstring."""

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

    def _cutoff(self) -> datetime:
        """The time on the injected clock before which an entry is past the age bound."""
        return self._clock.now() - self._max_age

    async def entries(
        self,
        scope: NamespaceScope,
        *,
        limit: int,
        session_id: str | None = None,
        subject: str | None = None,
    ) -> list[RecallLogEntry]:
        tenant = check_admin(scope, "reading the recall log")
        if limit < 1:
            raise InvalidArgument("limit must be at least 1")
        newest_first = await self._newest_first(tenant)
        cutoff = self._cutoff()
        return list(islice((e for e in newest_first if e.at >= cutoff and matches(e, session_id, subject)), limit))

    async def erase(
        self,
        scope: NamespaceScope,
        *,
        namespaces: Collection[str] = (),
        subjects: Collection[str] = (),
        memory_ids: Collection[str] = (),
    ) -> int:
        tenant = check_admin(scope, "erasing from the recall log")
        if not (namespaces or subjects or memory_ids):
            return 0
        names, who, ids = frozenset(namespaces), frozenset(subjects), frozenset(memory_ids)
        return await self._remove(tenant, lambda entry: erasable(entry, names, who, ids))

    @abstractmethod
    async def _newest_first(self, tenant: str) -> Iterable[RecallLogEntry]:
        """The tenant's entries within the bounds (applied first), newest first; read as `entries` iterates, with
        nothing awaited in between."""

    @abstractmethod
    async def _remove(self, tenant: str, pick: Pick) -> int:
        """Apply the bounds, then remove the tenant's entries `pick` chooses (and none appended meanwhile);
        returns how many live entries it removed."""

"""`RecallLog`: the recall log store (its contract and the half of every backend that does not depend on the
backend), its entry and their JSON encoding.

Rules every backend follows:

- Scope: the tenant always comes from the scope. Any scope of a tenant may append (the gateway appends for the
  caller of a recall); only an admin scope may read (`NamespaceForbidden` otherwise), and only its own tenant's.
- Bounds: at most `max_entries` entries per tenant (appending past it drops the oldest) and none older than
  `max_age_seconds` on the injected clock: older entries are dropped when the tenant's log is appended to or
  read, and are never returned.
- Order: `entries` answers newest first, filtered by `session_id` and `subject` when given, at most `limit`.
- Erasure: only an admin scope erases (`NamespaceForbidden` otherwise), only from its own tenant's log, and only
  the entries `erasable` picks (empty collections pick nothing); the answer counts the live entries removed.
- Errors: an unreachable backend raises `BackendUnavailable`.

`RecallLog` holds these checks once: only an admin scope reads or erases, the bounds' settings and the age cutoff
on the injected clock, the filtering of `entries` (live, matching, newest first, at most `limit`) and the choice of
what `erase` removes (`erasable`). Its subclasses `InProcessRecallLog` and `RedisRecallLog` are the backends: each
keeps a tenant's log within the bounds and implements `append`, `close` and two primitives: the tenant's entries
newest first, and the removal of those a predicate picks.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from itertools import islice
from typing import Any

from memory.clock import Clock
from memory.errors import InvalidArgument
from memory.scope import NamespaceScope
from memory.validation import check_admin

DEFAULT_MAX_ENTRIES = 1000
DEFAULT_MAX_AGE_SECONDS = 7 * 86_400


@dataclass(frozen=True, slots=True)
class LoggedHit:
    """One returned memory: its id, namespace, final score and the parts of it (as `explain` shows them)."""

    id: str
    namespace: str
    score: float
    parts: dict[str, Any]


@dataclass(frozen=True, slots=True)
class RecallLogEntry:
    """One recall: when, who, the query, the arguments that shaped it (namespaces, top_k, kinds, tags,
    session_id, since, until, format, order, ...; unset ones left out) and what it returned, in answer order."""

    at: datetime
    subject: str
    query: str
    arguments: dict[str, Any] = field(default_factory=dict)
    hits: tuple[LoggedHit, ...] = ()

    @property
    def session_id(self) -> str | None:
        value = self.arguments.get("session_id")
        return value if isinstance(value, str) else None


def encode_entry(entry: RecallLogEntry) -> str:
    return json.dumps(
        {
            "at": entry.at.isoformat(),
            "subject": entry.subject,
            "query": entry.query,
            "arguments": entry.arguments,
            "hits": [{"id": h.id, "namespace": h.namespace, "score": h.score, "parts": h.parts} for h in entry.hits],
        },
        ensure_ascii=False,
        separators=(",", ":"),
    )


def decode_entry(text: str) -> RecallLogEntry:
    data = json.loads(text)
    return RecallLogEntry(
        at=datetime.fromisoformat(data["at"]),
        subject=data["subject"],
        query=data["query"],
        arguments=data["arguments"],
        hits=tuple(LoggedHit(h["id"], h["namespace"], h["score"], h["parts"]) for h in data["hits"]),
    )


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


class RecallLog(ABC):
    """The contract, its checks, bounds and filters, over the backend's primitives; see the module docstring."""

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

    @abstractmethod
    async def append(self, scope: NamespaceScope, entry: RecallLogEntry) -> None:
        """Add one entry to the scope's tenant log, dropping what falls outside the bounds."""

    async def entries(
        self,
        scope: NamespaceScope,
        *,
        limit: int,
        session_id: str | None = None,
        subject: str | None = None,
    ) -> list[RecallLogEntry]:
        """Up to `limit` live entries of the admin scope's tenant, newest first, filtered when asked."""
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
        """Remove every entry of the admin scope's tenant that was asked by one of `subjects`, named one of
        `namespaces` in its arguments or hit one (or a memory with an id of `memory_ids`); returns how many."""
        tenant = check_admin(scope, "erasing from the recall log")
        if not (namespaces or subjects or memory_ids):
            return 0
        names, who, ids = frozenset(namespaces), frozenset(subjects), frozenset(memory_ids)
        return await self._remove(tenant, lambda entry: erasable(entry, names, who, ids))

    @abstractmethod
    async def close(self) -> None:
        """Release what the backend holds."""

    @abstractmethod
    async def _newest_first(self, tenant: str) -> Iterable[RecallLogEntry]:
        """The tenant's entries within the bounds (applied first), newest first; read as `entries` iterates, with
        nothing awaited in between."""

    @abstractmethod
    async def _remove(self, tenant: str, pick: Pick) -> int:
        """Apply the bounds, then remove the tenant's entries `pick` chooses (and none appended meanwhile);
        returns how many live entries it removed."""

"""`EventStoreBase`: the half of every `EventStore` that does not depend on the backend.

Each call of the contract (memory/events/store.py) is checked here once: the scope's grant of the namespace (or
an admin scope), the namespace, session and event ids, the limit, the times and the JSON of what is stored. The
backend then gets a narrow primitive (the abstract `_` methods) with checked arguments: the tenant taken from the
scope, times as integer microseconds, an archive already encoded. Export is written here once over the paged
listings. A backend (`SqliteEventStore`, `RedisEventStore`) implements the primitives, `tenants`, `ping` and
`close`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from typing import Any

from memory.events.model import (
    Event,
    EventCounts,
    SessionExport,
    SessionRecord,
    SessionStatus,
    check_event,
    check_event_id,
    check_limit,
    check_record,
    check_session_id,
    dump_json,
    encode_event,
    micros,
)
from memory.events.store import EventStore
from memory.scope import NamespaceScope, validate_namespace
from memory.validation import check_admin, check_granted

EXPORT_PAGE = 500
Pair = tuple[str, str]  # (namespace, session id)


def check_access(scope: NamespaceScope, namespace: str, session_id: str, *, write: bool) -> Pair:
    """(namespace, session_id) if the scope grants the namespace for this access; the check of every store call."""
    return check_granted(scope, namespace, write=write), check_session_id(session_id)


def check_import(scope: NamespaceScope, events: Sequence[Event], sessions: Sequence[SessionRecord]) -> None:
    """Refuse an import batch before storing any of it: a malformed record or an ungranted namespace."""
    for record in sessions:
        check_record(record)
        check_access(scope, record.namespace, record.session_id, write=True)
    for event in events:
        check_event(event)
        check_access(scope, event.namespace, event.session_id, write=True)
        encode_event(event)


class EventStoreBase(EventStore, ABC):
    """The checks and the export of `EventStore`, over the backend's primitives; see the module docstring."""

    async def append(self, scope: NamespaceScope, event: Event) -> Event:
        check_event(event)
        check_access(scope, event.namespace, event.session_id, write=True)
        encode_event(event)  # refuse what cannot be stored before the backend is asked
        return await self._append(scope.tenant, event)

    async def events(
        self,
        scope: NamespaceScope,
        namespace: str,
        session_id: str,
        *,
        task_id: str | None = None,
        after: str | None = None,
        limit: int = 100,
    ) -> list[Event]:
        namespace, session_id = check_access(scope, namespace, session_id, write=False)
        return await self._events(scope.tenant, namespace, session_id, task_id, after, check_limit(limit))

    async def session(self, scope: NamespaceScope, namespace: str, session_id: str) -> SessionRecord | None:
        namespace, session_id = check_access(scope, namespace, session_id, write=False)
        return await self._session(scope.tenant, namespace, session_id)

    async def sessions(
        self,
        scope: NamespaceScope,
        namespace: str,
        *,
        status: SessionStatus | None = None,
        after: str | None = None,
        limit: int = 100,
    ) -> list[SessionRecord]:
        namespace, _ = check_access(scope, namespace, "-", write=False)
        return await self._sessions(scope.tenant, namespace, status, after, check_limit(limit))

    async def start_session(
        self, scope: NamespaceScope, namespace: str, session_id: str, goal: str | None, at: datetime
    ) -> SessionRecord:
        namespace, session_id = check_access(scope, namespace, session_id, write=True)
        return await self._start_session(scope.tenant, namespace, session_id, goal, micros(at))

    async def mark_extracted(
        self, scope: NamespaceScope, namespace: str, session_id: str, through_event_id: str
    ) -> None:
        namespace, session_id = check_access(scope, namespace, session_id, write=True)
        await self._mark_extracted(scope.tenant, namespace, session_id, check_event_id(through_event_id))

    async def end_session(
        self,
        scope: NamespaceScope,
        namespace: str,
        session_id: str,
        at: datetime,
        reason: str,
        archive: dict[str, Any] | None,
    ) -> SessionRecord | None:
        namespace, session_id = check_access(scope, namespace, session_id, write=True)
        encoded = None if archive is None else dump_json(archive, "archive")
        return await self._end_session(scope.tenant, namespace, session_id, micros(at), reason, encoded)

    async def idle_sessions(self, scope: NamespaceScope, idle_before: datetime, limit: int) -> list[SessionRecord]:
        tenant = check_admin(scope, "listing a tenant's idle sessions")
        return await self._idle_sessions(tenant, micros(idle_before), check_limit(limit))

    async def purge(self, scope: NamespaceScope, namespace: str) -> EventCounts:
        tenant = check_admin(scope, "purging a namespace")
        return await self._purge(tenant, validate_namespace(namespace))

    async def erase_subject(self, scope: NamespaceScope, subject: str) -> tuple[EventCounts, list[Pair]]:
        return await self._erase_subject(check_admin(scope, "erasing a subject's events"), subject)

    async def export(self, scope: NamespaceScope, namespace: str) -> AsyncIterator[SessionExport]:
        after: str | None = None
        while page := await self.sessions(scope, namespace, after=after, limit=EXPORT_PAGE):
            for record in page:
                events: list[Event] = []
                cursor: str | None = None
                while chunk := await self.events(scope, namespace, record.session_id, after=cursor, limit=EXPORT_PAGE):
                    events.extend(chunk)
                    cursor = chunk[-1].id
                yield SessionExport(record, events)
            after = page[-1].session_id

    async def import_(
        self, scope: NamespaceScope, events: Sequence[Event], sessions: Sequence[SessionRecord]
    ) -> EventCounts:
        check_import(scope, events, sessions)
        unlisted = {(e.namespace, e.session_id) for e in events} - {(r.namespace, r.session_id) for r in sessions}
        return await self._import(scope.tenant, events, sessions, unlisted)

    async def expire(self, before: datetime) -> EventCounts:
        return await self._expire(micros(before))

    # The backend's primitives: arguments checked, the tenant from the scope, times in microseconds.

    @abstractmethod
    async def _append(self, tenant: str, event: Event) -> Event:
        """`append` of a checked event."""

    @abstractmethod
    async def _events(
        self, tenant: str, namespace: str, session_id: str, task_id: str | None, after: str | None, limit: int
    ) -> list[Event]:
        """`events`, `limit` already capped at `model.MAX_PAGE`."""

    @abstractmethod
    async def _session(self, tenant: str, namespace: str, session_id: str) -> SessionRecord | None:
        """`session`."""

    @abstractmethod
    async def _sessions(
        self, tenant: str, namespace: str, status: SessionStatus | None, after: str | None, limit: int
    ) -> list[SessionRecord]:
        """`sessions`, `limit` already capped."""

    @abstractmethod
    async def _start_session(
        self, tenant: str, namespace: str, session_id: str, goal: str | None, at_us: int
    ) -> SessionRecord:
        """`start_session`."""

    @abstractmethod
    async def _mark_extracted(self, tenant: str, namespace: str, session_id: str, through: str) -> None:
        """`mark_extracted` with a checked event id."""

    @abstractmethod
    async def _end_session(
        self, tenant: str, namespace: str, session_id: str, at_us: int, reason: str, archive: str | None
    ) -> SessionRecord | None:
        """`end_session`, the archive as its JSON (None: keep the previous one)."""

    @abstractmethod
    async def _idle_sessions(self, tenant: str, before_us: int, limit: int) -> list[SessionRecord]:
        """`idle_sessions` of an admin scope's tenant."""

    @abstractmethod
    async def _purge(self, tenant: str, namespace: str) -> EventCounts:
        """`purge` for an admin scope's tenant."""

    @abstractmethod
    async def _erase_subject(self, tenant: str, subject: str) -> tuple[EventCounts, list[Pair]]:
        """`erase_subject` for an admin scope's tenant."""

    @abstractmethod
    async def _import(
        self, tenant: str, events: Sequence[Event], sessions: Sequence[SessionRecord], unlisted: set[Pair]
    ) -> EventCounts:
        """`import_` of a checked batch; `unlisted` are the sessions of `events` that `sessions` has no record
        of (those whose record is missing get it made by their events, as an append would)."""

    @abstractmethod
    async def _expire(self, before_us: int) -> EventCounts:
        """`expire`."""

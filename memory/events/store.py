"""`EventStore`: the durable event and session-record store (issue 17, items 1 and 3), its contract and the half
of every backend that does not depend on the backend.

Two backends keep the same semantics, each a subclass of `EventStore`: `SqliteEventStore` (embedded: one sqlite
file in the data dir) and `RedisEventStore` (server mode: a single Redis or a Redis Cluster). tests/memory/events/
runs one contract suite over both.

Each call of the contract is checked here once: the scope's grant of the namespace (or an admin scope), the
namespace, session and event ids, the limit, the times and the JSON of what is stored. The backend then gets a
narrow primitive (the abstract `_` methods) with checked arguments: the tenant taken from the scope, times as
integer microseconds, an archive already encoded. Export is written here once over the paged listings. A backend
implements the primitives, `tenants`, `ping` and `close`.

Rules every backend follows:

- Scope: reads need `scope.can_read(namespace)`, writes `scope.can_write(namespace)` (else `NamespaceForbidden`);
  the tenant always comes from the scope, so another tenant's data can never be named. `purge` and
  `idle_sessions` need an admin scope, as the vector store's purge does.
- Identity: an event is identified by (tenant, namespace, session_id, id); a session by (tenant, namespace,
  session_id). Event ids are canonical UUIDv7 strings; listings are in id order (time order).
- Session touch: an append creates the session record (`active`) when missing, sets `last_event_at` to the
  latest `recorded_at` seen and counts the events it stored. An append to an `ended` session makes it `active`
  again (ended_at and end_reason cleared; `extracted_through` kept), so what an agent records after the end is
  extracted by the next end or sweep rather than lost.
- Retries: an append is a retry when its id is stored already, or when its request id and subject
  (`model.request_key`) name an event of that session stored by an earlier append, or a result bound into a
  call: it returns what the first append returned (the stored event, or the call the result was bound to),
  unchanged, and stores nothing. The request index is written in the same atomic step as the event, so a
  request whose first attempt died after its append (a SIGKILL, a lost reply, a failover) records its event once,
  whatever id its retry makes. An import stores events as given (never looked up by request id) and indexes them.
- Tool binding: a `tool_result` whose `call_id` names a stored `tool_call` of the same session without a result
  (the one with the highest id when several share it) is folded into that call; nothing else is stored and the
  session's event count does not change. A result without such a call is stored as its own event.
- Retention (`expire(before)`): events recorded before `before` are dropped from ended sessions only; an ended
  session that ended before `before` loses its archive, and its record once it holds no events. Active sessions
  are never touched (the idle sweep ends them first).
- Errors: an unreachable backend (Redis down, sqlite locked or out of disk) raises `BackendUnavailable`.
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


class EventStore(ABC):
    """The contract, its checks and its export, over the backend's primitives; see the module docstring."""

    async def append(self, scope: NamespaceScope, event: Event) -> Event:
        """Store the event (or bind a tool result to its call) and touch its session record. Returns the stored
        event: the event itself, the call it was bound to, or, for a retry (an id, or a request id of the same
        subject, already stored in that session), what the first append returned, unchanged."""
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
        """Up to `limit` events of one session (of one task, when given) with an id after `after`, in id order."""
        namespace, session_id = check_access(scope, namespace, session_id, write=False)
        return await self._events(scope.tenant, namespace, session_id, task_id, after, check_limit(limit))

    async def session(self, scope: NamespaceScope, namespace: str, session_id: str) -> SessionRecord | None:
        """The record of one session; None when it is missing."""
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
        """Up to `limit` sessions of one namespace (of one status, when given) with a session id after `after`,
        in session id order (byte order of the UTF-8 text)."""
        namespace, _ = check_access(scope, namespace, "-", write=False)
        return await self._sessions(scope.tenant, namespace, status, after, check_limit(limit))

    async def start_session(
        self, scope: NamespaceScope, namespace: str, session_id: str, goal: str | None, at: datetime
    ) -> SessionRecord:
        """Create the session (`active`, started and last seen `at`) or make it active again: an ended session
        loses its ended_at and end_reason; the goal is replaced only when given; last_event_at moves to `at` if
        later."""
        namespace, session_id = check_access(scope, namespace, session_id, write=True)
        return await self._start_session(scope.tenant, namespace, session_id, goal, micros(at))

    async def mark_extracted(
        self, scope: NamespaceScope, namespace: str, session_id: str, through_event_id: str
    ) -> None:
        """Record that the events up to `through_event_id` were extracted. It only moves forward (in id order),
        so a slow extractor cannot move it back; a missing session is left missing."""
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
        """Atomically end an active session (ended_at, end_reason, and the archive when given, else the previous
        one is kept) and return its record; None when it is missing or already ended, so of two concurrent
        enders exactly one gets the record (and extracts)."""
        namespace, session_id = check_access(scope, namespace, session_id, write=True)
        encoded = None if archive is None else dump_json(archive, "archive")
        return await self._end_session(scope.tenant, namespace, session_id, micros(at), reason, encoded)

    async def idle_sessions(self, scope: NamespaceScope, idle_before: datetime, limit: int) -> list[SessionRecord]:
        """Active sessions of the admin scope's tenant last touched before `idle_before`, least recent first."""
        tenant = check_admin(scope, "listing a tenant's idle sessions")
        return await self._idle_sessions(tenant, micros(idle_before), check_limit(limit))

    @abstractmethod
    async def tenants(self) -> list[str]:
        """Tenants that have (or had) sessions, sorted: for scheduling the idle sweep and retention."""

    async def purge(self, scope: NamespaceScope, namespace: str) -> EventCounts:
        """Delete every event and session record of one namespace (admin scopes only)."""
        tenant = check_admin(scope, "purging a namespace")
        return await self._purge(tenant, validate_namespace(namespace))

    async def erase_subject(self, scope: NamespaceScope, subject: str) -> tuple[EventCounts, list[Pair]]:
        """Delete every event of the admin scope's tenant that `subject` recorded, in any namespace (admin scopes
        only; a tool call's bound result goes with the call), and the session records left with no event; other
        subjects' events of the same sessions stay. Returns the counts and the (namespace, session id) of every
        session it touched, in order."""
        return await self._erase_subject(check_admin(scope, "erasing a subject's events"), subject)

    async def export(self, scope: NamespaceScope, namespace: str) -> AsyncIterator[SessionExport]:
        """Every session of one readable namespace with all its events, one session at a time, in session id
        order (pages are read as the caller iterates)."""
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
        """Store exported records exactly as given; a session or an event that already exists is skipped, so an
        import can be repeated. Sessions are stored before events; an event whose session record exists leaves
        the record as it is, one whose record is missing creates it as an append would. No binding happens.
        Returns how many events and sessions were new."""
        check_import(scope, events, sessions)
        unlisted = {(e.namespace, e.session_id) for e in events} - {(r.namespace, r.session_id) for r in sessions}
        return await self._import(scope.tenant, events, sessions, unlisted)

    async def expire(self, before: datetime) -> EventCounts:
        """The retention pass over every tenant (see the module docstring); returns what it dropped (events, and
        session records that ended before `before` and held no events any more)."""
        return await self._expire(micros(before))

    @abstractmethod
    async def ping(self) -> None:
        """Raise `BackendUnavailable` if the store cannot serve."""

    @abstractmethod
    async def close(self) -> None:
        """Release the backend's connection."""

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

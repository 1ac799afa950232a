"""`EventStore`: the contract of the durable event and session-record store (issue 17, items 1 and 3).

Two implementations keep the same semantics: `SqliteEventStore` (embedded: one sqlite file in the data dir) and
`RedisEventStore` (server mode: a single Redis or a Redis Cluster), both built on `EventStoreBase`
(memory/events/base.py), which checks every call once. tests/memory/events/ runs one contract suite over both.

Rules every implementation follows:

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

from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from typing import Any, Protocol

from memory.events.model import Event, EventCounts, SessionExport, SessionRecord, SessionStatus
from memory.scope import NamespaceScope


class EventStore(Protocol):
    async def append(self, scope: NamespaceScope, event: Event) -> Event:
        """Store the event (or bind a tool result to its call) and touch its session record. Returns the stored
        event: the event itself, the call it was bound to, or, for a retry (an id, or a request id of the same
        subject, already stored in that session), what the first append returned, unchanged."""
        ...

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
        ...

    async def session(self, scope: NamespaceScope, namespace: str, session_id: str) -> SessionRecord | None: ...

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
        ...

    async def start_session(
        self, scope: NamespaceScope, namespace: str, session_id: str, goal: str | None, at: datetime
    ) -> SessionRecord:
        """Create the session (`active`, started and last seen `at`) or make it active again: an ended session
        loses its ended_at and end_reason; the goal is replaced only when given; last_event_at moves to `at` if
        later."""
        ...

    async def mark_extracted(
        self, scope: NamespaceScope, namespace: str, session_id: str, through_event_id: str
    ) -> None:
        """Record that the events up to `through_event_id` were extracted. It only moves forward (in id order),
        so a slow extractor cannot move it back; a missing session is left missing."""
        ...

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
        ...

    async def idle_sessions(self, scope: NamespaceScope, idle_before: datetime, limit: int) -> list[SessionRecord]:
        """Active sessions of the admin scope's tenant last touched before `idle_before`, least recent first."""
        ...

    async def tenants(self) -> list[str]:
        """Tenants that have (or had) sessions, sorted: for scheduling the idle sweep and retention."""
        ...

    async def purge(self, scope: NamespaceScope, namespace: str) -> EventCounts:
        """Delete every event and session record of one namespace (admin scopes only)."""
        ...

    async def erase_subject(self, scope: NamespaceScope, subject: str) -> tuple[EventCounts, list[tuple[str, str]]]:
        """Delete every event of the admin scope's tenant that `subject` recorded, in any namespace (admin scopes
        only; a tool call's bound result goes with the call), and the session records left with no event; other
        subjects' events of the same sessions stay. Returns the counts and the (namespace, session id) of every
        session it touched, in order."""
        ...

    def export(self, scope: NamespaceScope, namespace: str) -> AsyncIterator[SessionExport]:
        """Every session of one readable namespace with all its events, one session at a time, in session id
        order (pages are read as the caller iterates)."""
        ...

    async def import_(
        self, scope: NamespaceScope, events: Sequence[Event], sessions: Sequence[SessionRecord]
    ) -> EventCounts:
        """Store exported records exactly as given; a session or an event that already exists is skipped, so an
        import can be repeated. Sessions are stored before events; an event whose session record exists leaves
        the record as it is, one whose record is missing creates it as an append would. No binding happens.
        Returns how many events and sessions were new."""
        ...

    async def expire(self, before: datetime) -> EventCounts:
        """The retention pass over every tenant (see the module docstring); returns what it dropped (events, and
        session records that ended before `before` and held no events any more)."""
        ...

    async def ping(self) -> None:
        """Raise `BackendUnavailable` if the store cannot serve."""
        ...

    async def close(self) -> None: ...

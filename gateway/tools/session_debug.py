"""`session_debug`: everything about one agent session of the caller's tenant, for its admins (issue 18, item 2):
the session record (with its archive), its events in order, its live working memory, the memories it left in
its namespace (those with its `session_id`: extracted from its events, with `metadata.source_event_ids`, or
from its turns) and the recall-log entries that named it. One builder for `/debug/sessions/{id}`
(`gateway.web.debug`) and the `debug_session` tool (`gateway.tools.debug`)."""

from __future__ import annotations

from typing_extensions import TypedDict

from gateway.answers.serialize import memory_json, session_json
from gateway.answers.sessions import EventJson, SessionJson, event_json, session_record_json
from gateway.answers.shapes import Record, SessionAnswer
from gateway.services.runtime import Runtime
from gateway.tools.recall_log import RecallLogEntryJson, entry_json
from memory.events import Event
from memory.models import Memory
from memory.requests import ListRequest
from memory.scope import NamespaceScope

MAX_DEBUG_EVENTS = 1000  # events shown; `events_truncated` says when the session holds more
PAGE = 200


class SessionDebugAnswer(TypedDict):
    tenant: str
    namespace: str
    session_id: str
    session: SessionJson | None
    events: list[EventJson]
    events_truncated: bool
    working_memory: SessionAnswer | None
    memories: list[Record]
    recalls: list[RecallLogEntryJson]


async def session_debug(runtime: Runtime, scope: NamespaceScope, session_id: str, namespace: str) -> SessionDebugAnswer:
    """The session's debug view; the scope's read checks apply (an admin scope reads its whole tenant)."""
    record = await runtime.events.session(scope, namespace, session_id)  # checks the namespace and the id
    events: list[Event] = []
    after: str | None = None
    while len(events) <= MAX_DEBUG_EVENTS:
        page = await runtime.events.events(scope, namespace, session_id, after=after, limit=PAGE)
        events.extend(page)
        if len(page) < PAGE:
            break
        after = page[-1].id
    working = await runtime.working.get(scope, namespace, session_id)
    memories: list[Memory] = []
    cursor: str | None = None
    while True:  # pages come oldest first
        listed = await runtime.memories.list(
            scope, ListRequest(namespace=namespace, include_deleted=True, limit=PAGE, cursor=cursor)
        )
        memories.extend(m for m in listed.memories if m.session_id == session_id)
        cursor = listed.next_cursor
        if cursor is None:
            break
    recalls = []
    if runtime.recall_log is not None:
        limit = runtime.settings.observability.recall_log_max_entries
        recalls = await runtime.recall_log.entries(scope, limit=limit, session_id=session_id)
    return {
        "tenant": scope.tenant,
        "namespace": namespace,
        "session_id": session_id,
        "session": None if record is None else session_record_json(record, archive=True),
        "events": [event_json(e) for e in events[:MAX_DEBUG_EVENTS]],
        "events_truncated": len(events) > MAX_DEBUG_EVENTS,
        "working_memory": None if working is None else session_json(working),
        "memories": [memory_json(m) for m in memories],
        "recalls": [entry_json(e) for e in recalls],
    }

"""Sessions and events as export records: a page of `export_events` (each session with its archive and every
event). The strict check of `import_events` records is the engine's (`memory.transfer.sessions`)."""

from __future__ import annotations

from gateway.answers.sessions import ExportEventsAnswer, SessionExportJson, event_json, session_record_json
from memory.errors import InvalidArgument
from memory.events import Event, EventStore
from memory.scope import NamespaceScope, validate_namespace

DEFAULT_SESSIONS_PER_PAGE = 20
MAX_SESSIONS_PER_PAGE = 100
EVENTS_PAGE = 500


async def export_page(
    store: EventStore, scope: NamespaceScope, namespace: str, cursor: str | None, limit: int | None
) -> ExportEventsAnswer:
    namespace = validate_namespace(namespace)
    size = DEFAULT_SESSIONS_PER_PAGE if limit is None else limit
    if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= MAX_SESSIONS_PER_PAGE:
        raise InvalidArgument(f"limit must be a whole number from 1 to {MAX_SESSIONS_PER_PAGE}")
    records = await store.sessions(scope, namespace, after=cursor, limit=size)
    page: list[SessionExportJson] = []
    for record in records:
        events: list[Event] = []
        after: str | None = None
        while True:
            batch = await store.events(scope, namespace, record.session_id, after=after, limit=EVENTS_PAGE)
            events += batch
            if len(batch) < EVENTS_PAGE:
                break
            after = batch[-1].id
        page.append({"session": session_record_json(record, archive=True), "events": [event_json(e) for e in events]})
    next_cursor = records[-1].session_id if len(records) == size else None
    return {"sessions": page, "next_cursor": next_cursor}

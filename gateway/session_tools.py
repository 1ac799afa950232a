"""The agent-loop MCP tools (issue #17): `record_event`, `list_events`, `start_session`, `end_session`, and for
admins `reextract`, `export_events` and `import_events`. Each only translates arguments into an
`AgentSessions`/`EventStore` call and the answer into JSON (`gateway.session_answers`); scopes, idempotency,
audit, metrics and errors are the boundary's (`gateway.tool_support`)."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations
from pydantic import Field

from gateway.answers import Hit
from gateway.serialize import hit_json
from gateway.session_answers import (
    EndSessionAnswer,
    ExportEventsAnswer,
    ImportEventsAnswer,
    ListEventsAnswer,
    RecordEventAnswer,
    ReextractAnswer,
    StartSessionAnswer,
    event_json,
    extraction_json,
    session_record_json,
)
from gateway.session_records import check_event_records, export_page
from gateway.tool_support import SCOPE_META, current_call
from memory.agent_sessions import EventRequest
from memory.events import EventType
from memory.validation import parse_instant
from tenancy import SCOPE_ADMIN

SessionId = Annotated[str, Field(description="The task session (1-128 chars: letters, digits, ':_.@-').")]
Namespace = Annotated[
    str | None, Field(description="Namespace of the session; omit for the token's default write namespace.")
]
RequestId = Annotated[str | None, Field(description="Client-chosen id of this call: a retry does it once.")]
ADMIN = {SCOPE_META: SCOPE_ADMIN}
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


def register_session_tools(server: MCPServer) -> None:
    @server.tool(annotations=WRITES)
    async def record_event(
        session_id: SessionId,
        type: Annotated[
            EventType,
            Field(
                description="user_message, assistant_message, tool_call, tool_result (bound to its call by "
                "metadata.call_id) or system."
            ),
        ],
        content: Annotated[str, Field(description="The message, the tool call's arguments or its result.")],
        namespace: Namespace = None,
        task_id: Annotated[str | None, Field(description="The task within the session this belongs to.")] = None,
        metadata: Annotated[
            dict[str, Any] | None,
            Field(
                description="JSON object kept with the event. 'call_id' binds a tool_call and its tool_result; "
                "'tool' names the tool; 'speaker' names who spoke."
            ),
        ] = None,
        occurred_at: Annotated[str | None, Field(description="ISO 8601 time it happened (default: now).")] = None,
        request_id: RequestId = None,
    ) -> RecordEventAnswer:
        """Record one event of the agent's turn (a message, a tool call, its result) in the session's event log,
        kept whole and durable. Facts in it are extracted into long-term memory automatically, citing it."""
        call = current_call()
        outcome = await call.runtime.agent_sessions.record(
            call.scope,
            EventRequest(
                session_id=session_id,
                type=type,
                content=content,
                subject=call.principal.subject,
                namespace=namespace,
                task_id=task_id,
                metadata=metadata,
                occurred_at=parse_instant(occurred_at, "occurred_at"),
                request_id=request_id,
            ),
        )
        return {"event": event_json(outcome.event), "extraction": extraction_json(outcome.extraction)}

    @server.tool(annotations=READ_ONLY)
    async def list_events(
        session_id: SessionId,
        namespace: Namespace = None,
        task_id: Annotated[str | None, Field(description="Only this task's events.")] = None,
        after: Annotated[str | None, Field(description="next_cursor of the previous page.")] = None,
        limit: Annotated[int | None, Field(description="Page size (default 50).")] = None,
    ) -> ListEventsAnswer:
        """List a session's events in the order they happened (e.g. to trace where a memory came from: its
        source_event_ids)."""
        call = current_call()
        sessions = call.runtime.agent_sessions
        size = limit if limit is not None else sessions.sessions.limits.default_list_limit
        events = await sessions.list_events(call.scope, session_id, namespace, task_id, after, size)
        cursor = events[-1].id if len(events) == size else None
        return {"events": [event_json(e) for e in events], "next_cursor": cursor}

    @server.tool(annotations=WRITES)
    async def start_session(
        session_id: SessionId,
        goal: Annotated[
            str | None, Field(description="What the session is for: the memories relevant to it are loaded.")
        ] = None,
        namespace: Namespace = None,
        request_id: RequestId = None,
    ) -> StartSessionAnswer:
        """Start a task session: its working memory is initialised and, given a goal, the most relevant
        long-term memories are loaded into it and returned. End it with end_session."""
        call = current_call()
        outcome = await call.runtime.agent_sessions.start(
            call.scope, session_id, call.principal.subject, goal, namespace
        )
        background: list[Hit] = [hit_json(hit) for hit in outcome.background]
        return {"session": session_record_json(outcome.session), "background": background}

    @server.tool(annotations=WRITES)
    async def end_session(
        session_id: SessionId,
        namespace: Namespace = None,
        request_id: RequestId = None,
    ) -> EndSessionAnswer:
        """End a task session: what its events say is extracted into long-term memory, its working memory is
        archived and cleared. Sessions left open are ended this way after they idle too long."""
        call = current_call()
        outcome = await call.runtime.agent_sessions.end(call.scope, session_id, call.principal.subject, namespace)
        return {
            "session": session_record_json(outcome.session),
            "extraction": extraction_json(outcome.extraction),
            "turns_kept": outcome.turns_kept,
            "already_ended": outcome.already_ended,
        }

    @server.tool(annotations=WRITES, meta=ADMIN)
    async def reextract(
        session_id: SessionId,
        namespace: Annotated[str, Field(description="Namespace of the session.")],
        request_id: RequestId = None,
    ) -> ReextractAnswer:
        """Admin: extract a session's facts again from its events (e.g. after a bad extraction); the earlier
        extracted memories it does not reproduce are superseded (listable as hidden, with the reason)."""
        call = current_call()
        outcome = await call.runtime.agent_sessions.reextract(call.scope, session_id, call.principal.subject, namespace)
        return {"extraction": extraction_json(outcome.extraction), "superseded": outcome.superseded}

    @server.tool(annotations=READ_ONLY, meta=ADMIN)
    async def export_events(
        namespace: Annotated[str, Field(description="The namespace to export, e.g. 'user:42'.")],
        cursor: Annotated[str | None, Field(description="next_cursor of the previous page.")] = None,
        limit: Annotated[int | None, Field(description="Sessions per page (default 20).")] = None,
    ) -> ExportEventsAnswer:
        """Admin: export one namespace's sessions with every event and archive, a page of sessions at a time,
        for import_events."""
        call = current_call()
        return await export_page(call.runtime.events, call.scope, namespace, cursor, limit)

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True), meta=ADMIN)
    async def import_events(
        namespace: Annotated[str, Field(description="The namespace to import into.")],
        sessions: Annotated[list[dict[str, Any]], Field(description="Exported sessions (export_events).")],
        request_id: RequestId = None,
    ) -> ImportEventsAnswer:
        """Admin: import exported sessions and their events into a namespace; those already present are
        skipped, so an import can be repeated."""
        call = current_call()
        records, events = check_event_records(sessions, namespace, call.runtime.memories.limits)
        counts = await call.runtime.events.import_(call.scope, events, records)
        return {"status": "imported", "namespace": namespace, "events": counts.events, "sessions": counts.sessions}

"""The agent-loop MCP tools (issue #17): `record_event`, `list_events`, `start_session`, `end_session`, and for
admins `reextract`, `export_events` and `import_events`. Each only translates arguments into an
`AgentSessions`/`EventStore` call and the answer into JSON (`gateway.answers.sessions`); scopes, idempotency,
audit, metrics and errors are the boundary's (`gateway.tools.boundary`)."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations
from pydantic import Field

from gateway.answers.records import MAX_SESSIONS_PER_PAGE, export_page
from gateway.answers.serialize import hit_json
from gateway.answers.sessions import (
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
from gateway.answers.shapes import Hit
from gateway.operations import taking
from gateway.operations.sessions import EventArguments
from gateway.tools.boundary import ADMIN, READ_ONLY, WRITES, Namespace, RequestId, SessionId, current_call
from memory.agent.sessions import EventRequest
from memory.transfer.sessions import check_event_records


def register_session_tools(server: MCPServer) -> None:
    @server.tool(annotations=WRITES)
    @taking(EventArguments)
    async def record_event(**fields: Any) -> RecordEventAnswer:
        """Log a message, tool call or tool result of a session; its facts become memories."""
        call = current_call()
        request = EventArguments.model_construct(**fields).engine_request(EventRequest, subject=call.principal.subject)
        outcome = await call.runtime.agent_sessions.record(call.scope, request)
        return {"event": event_json(outcome.event), "extraction": extraction_json(outcome.extraction)}

    @server.tool(annotations=READ_ONLY)
    async def list_events(
        session_id: SessionId,
        namespace: Namespace = None,
        task_id: str | None = None,
        after: Annotated[str | None, Field(description="A next_cursor.")] = None,
        limit: int | None = None,
    ) -> ListEventsAnswer:
        """List a session's events in order (what source_event_ids name)."""
        call = current_call()
        sessions = call.runtime.agent_sessions
        size = limit if limit is not None else sessions.sessions.limits.default_list_limit
        events = await sessions.list_events(call.scope, session_id, namespace, task_id, after, size)
        cursor = events[-1].id if len(events) == size else None
        return {"events": [event_json(e) for e in events], "next_cursor": cursor}

    @server.tool(annotations=WRITES)
    async def start_session(
        session_id: SessionId,
        goal: str | None = None,
        namespace: Namespace = None,
        request_id: RequestId = None,
    ) -> StartSessionAnswer:
        """Start a task session; given a goal, returns the most relevant memories."""
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
        """End a task session: its facts become memories, its working memory is cleared."""
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
        namespace: str,
        request_id: RequestId = None,
    ) -> ReextractAnswer:
        """Admin: extract a session's facts again from its events, superseding earlier ones it does not
        reproduce."""
        call = current_call()
        outcome = await call.runtime.agent_sessions.reextract(call.scope, session_id, call.principal.subject, namespace)
        return {"extraction": extraction_json(outcome.extraction), "superseded": outcome.superseded}

    @server.tool(annotations=READ_ONLY, meta=ADMIN)
    async def export_events(
        namespace: str,
        cursor: str | None = None,
        limit: Annotated[int | None, Field(le=MAX_SESSIONS_PER_PAGE)] = None,
    ) -> ExportEventsAnswer:
        """Admin: export a namespace's sessions with their events, a page at a time, for import_events."""
        call = current_call()
        return await export_page(call.runtime.events, call.scope, namespace, cursor, limit)

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True), meta=ADMIN)
    async def import_events(
        namespace: str,
        sessions: Annotated[list[dict[str, Any]], Field(description="From export_events.")],
        request_id: RequestId = None,
    ) -> ImportEventsAnswer:
        """Admin: import sessions from export_events into a namespace; those already present are skipped."""
        call = current_call()
        records, events = check_event_records(sessions, namespace, call.runtime.memories.limits)
        counts = await call.runtime.events.import_(call.scope, events, records)
        return {"status": "imported", "namespace": namespace, "events": counts.events, "sessions": counts.sessions}

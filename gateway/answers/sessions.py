"""The shape of the agent-loop tools' structured results (`gateway.tools.sessions`): events, session records and
what starting, ending and re-extracting a session did; and how the engine's values become that JSON."""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired, cast

from pydantic import Field
from typing_extensions import TypedDict

from gateway.answers.serialize import iso
from gateway.answers.shapes import Hit, Instant
from memory.agent.extraction import ExtractionOutcome
from memory.events import Event, EventType, SessionRecord


class EventJson(TypedDict):
    id: str
    namespace: str
    session_id: str
    task_id: str | None
    type: EventType
    content: str
    metadata: dict[str, Any]
    occurred_at: Instant
    recorded_at: Instant
    subject: str
    request_id: str | None
    call_id: str | None
    tool: str | None
    result: NotRequired[Annotated[str, Field(description="A tool call's result, bound to it by call_id.")]]
    result_at: NotRequired[Instant | None]
    result_metadata: NotRequired[dict[str, Any] | None]


class SessionJson(TypedDict):
    namespace: str
    session_id: str
    status: Literal["active", "ended"]
    goal: str | None
    started_at: Instant
    last_event_at: Instant
    ended_at: Instant | None
    events: int
    extracted_through: Annotated[str | None, Field(description="The last event already extracted into memory.")]
    end_reason: str | None
    archive: NotRequired[
        Annotated[dict[str, Any] | None, Field(description="The working memory archived when the session ended.")]
    ]


class ExtractionJson(TypedDict):
    written: Annotated[list[str], Field(description="Ids of the memories the extraction created.")]
    facts: int
    events: int
    method: Literal["rules", "llm"] | None
    fallback_reason: str | None


class RecordEventAnswer(TypedDict):
    event: EventJson
    extraction: ExtractionJson


class ListEventsAnswer(TypedDict):
    events: list[EventJson]
    next_cursor: Annotated[str | None, Field(description="Pass as `after` for the next page.")]


class StartSessionAnswer(TypedDict):
    session: SessionJson
    background: Annotated[list[Hit], Field(description="Memories loaded into working memory for the goal.")]


class EndSessionAnswer(TypedDict):
    session: SessionJson
    extraction: ExtractionJson
    turns_kept: Annotated[list[str], Field(description="Ids of window turns written verbatim to memory.")]
    already_ended: bool


class ReextractAnswer(TypedDict):
    extraction: ExtractionJson
    superseded: Annotated[list[str], Field(description="Earlier extracted memories the new extraction replaced.")]


class SessionExportJson(TypedDict):
    session: SessionJson
    events: list[EventJson]


class ExportEventsAnswer(TypedDict):
    sessions: list[SessionExportJson]
    next_cursor: Annotated[str | None, Field(description="Pass as `cursor` for the next page.")]


class ImportEventsAnswer(TypedDict):
    status: Literal["imported"]
    namespace: str
    events: int
    sessions: int


def event_json(event: Event) -> EventJson:
    body: dict[str, Any] = {
        "id": event.id,
        "namespace": event.namespace,
        "session_id": event.session_id,
        "task_id": event.task_id,
        "type": event.type,
        "content": event.content,
        "metadata": event.metadata,
        "occurred_at": iso(event.occurred_at),
        "recorded_at": iso(event.recorded_at),
        "subject": event.subject,
        "request_id": event.request_id,
        "call_id": event.call_id,
        "tool": event.tool,
    }
    if event.result is not None:
        body |= {"result": event.result, "result_at": iso(event.result_at), "result_metadata": event.result_metadata}
    return cast(EventJson, body)


def session_record_json(record: SessionRecord, *, archive: bool = False) -> SessionJson:
    body: dict[str, Any] = {
        "namespace": record.namespace,
        "session_id": record.session_id,
        "status": record.status,
        "goal": record.goal,
        "started_at": iso(record.started_at),
        "last_event_at": iso(record.last_event_at),
        "ended_at": iso(record.ended_at),
        "events": record.events,
        "extracted_through": record.extracted_through,
        "end_reason": record.end_reason,
    }
    if archive:
        body["archive"] = record.archive
    return cast(SessionJson, body)


def extraction_json(outcome: ExtractionOutcome) -> ExtractionJson:
    return {
        "written": outcome.written,
        "facts": outcome.facts,
        "events": outcome.events,
        "method": cast(Literal["rules", "llm"] | None, outcome.method),
        "fallback_reason": outcome.fallback_reason,
    }

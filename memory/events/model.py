"""The event store's types (`Event`, `SessionRecord` and the answers built of them) and their storage codec.

Both backends keep an event as one JSON text (`encode_event`) plus the columns or index entries they query by,
and a bound tool result as a second JSON text (`encode_result`), so the two stores cannot drift in what they keep.
Times are stored as integer microseconds since the epoch (exact) and come back as timezone-aware UTC. JSON is
written without ASCII escaping and without NaN/Infinity: anything the gateway's validators accept (any Unicode a
UTF-8 encoder takes, NUL characters included) round-trips exactly.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, get_args

from memory.errors import InvalidArgument
from memory.ids import parse_memory_id
from memory.scope import validate_namespace

EventType = Literal["user_message", "assistant_message", "tool_call", "tool_result", "system"]
EVENT_TYPES: frozenset[str] = frozenset(get_args(EventType))
SessionStatus = Literal["active", "ended"]
SESSION_STATUSES: frozenset[str] = frozenset(get_args(SessionStatus))
MAX_PAGE = 1000  # most events or sessions one listing call returns

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


@dataclass(frozen=True, slots=True)
class Event:
    """One event of an agent's session. `id` is a UUIDv7 (`memory.ids.new_memory_id`): id order is time order.

    A `tool_call` may carry the result bound to it (`result`, `result_at`, `result_metadata`): a `tool_result`
    with the same `call_id` appended later is folded into the call instead of being stored on its own."""

    id: str
    namespace: str
    session_id: str
    task_id: str | None
    type: EventType
    content: str
    metadata: dict[str, Any]
    occurred_at: datetime
    recorded_at: datetime
    subject: str
    request_id: str | None
    call_id: str | None
    tool: str | None
    result: str | None = None
    result_at: datetime | None = None
    result_metadata: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """What the store knows of one session: its lifecycle, how many events it holds and how far they were
    extracted into long-term memory, and the working memory archived when it ended."""

    namespace: str
    session_id: str
    status: SessionStatus
    goal: str | None
    started_at: datetime
    last_event_at: datetime
    ended_at: datetime | None
    events: int
    extracted_through: str | None
    archive: dict[str, Any] | None
    end_reason: str | None


@dataclass(frozen=True, slots=True)
class SessionExport:
    """One session of an export: its record and every event it holds, in id order."""

    session: SessionRecord
    events: list[Event]


@dataclass(frozen=True, slots=True)
class EventCounts:
    """How many events and session records a purge, an import or a retention pass stored or removed."""

    events: int = 0
    sessions: int = 0

    def __add__(self, other: EventCounts) -> EventCounts:
        return EventCounts(self.events + other.events, self.sessions + other.sessions)


def micros(value: datetime) -> int:
    """A timezone-aware time as integer microseconds since the epoch (naive times are refused)."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidArgument("times must be timezone-aware")
    return (value - _EPOCH) // _MICROSECOND


def from_micros(value: int | str) -> datetime:
    return _EPOCH + int(value) * _MICROSECOND


def dump_json(value: Any, field: str) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidArgument(f"{field} must be JSON-serialisable") from exc


def check_event_id(event_id: object) -> str:
    """An event id as the stores order them: a canonical (lowercase) UUID string."""
    if not isinstance(event_id, str) or parse_memory_id(event_id) != event_id:
        raise InvalidArgument("event id must be a canonical UUID string (memory.ids.new_memory_id)")
    return event_id


def check_event(event: Event) -> None:
    """Refuse an event the stores could not keep exactly or order by id."""
    check_event_id(event.id)
    validate_namespace(event.namespace)
    check_session_id(event.session_id)
    if event.type not in EVENT_TYPES:
        raise InvalidArgument(f"event type must be one of: {', '.join(sorted(EVENT_TYPES))}")
    if not isinstance(event.content, str) or not isinstance(event.metadata, dict):
        raise InvalidArgument("event content must be a string and metadata a JSON object")
    for moment in (event.occurred_at, event.recorded_at, event.result_at):
        if moment is not None:
            micros(moment)


def check_session_id(session_id: object) -> str:
    if not isinstance(session_id, str) or not session_id:
        raise InvalidArgument("session_id must be a non-empty string")
    return session_id


def check_limit(limit: int) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InvalidArgument("limit must be a positive whole number")
    return min(limit, MAX_PAGE)


def encode_event(event: Event) -> str:
    """The stored JSON of an event, without the parts its key already names (namespace, session) and without
    its bound result (`encode_result`)."""
    return dump_json(
        {
            "id": event.id,
            "task": event.task_id,
            "type": event.type,
            "content": event.content,
            "metadata": event.metadata,
            "occurred": micros(event.occurred_at),
            "recorded": micros(event.recorded_at),
            "subject": event.subject,
            "request": event.request_id,
            "call": event.call_id,
            "tool": event.tool,
        },
        "event",
    )


def request_key(event: Event) -> str | None:
    """What the stores index an event by so that a retry of the request that recorded it finds it (issue #32):
    its request id and subject, None without a request id. A request id has no space (`check_request_id`), so
    the key names one (request id, subject) pair."""
    return None if event.request_id is None else f"{event.request_id} {event.subject}"


def encode_result(content: str, at: datetime, metadata: dict[str, Any] | None) -> str:
    return dump_json({"content": content, "at": micros(at), "metadata": metadata}, "tool result")


def binding_of(event: Event) -> str | None:
    """The stored JSON of the result an appended `tool_result` with a call id binds into its call, else None."""
    if event.type != "tool_result" or event.call_id is None:
        return None
    return encode_result(event.content, event.occurred_at, event.metadata)


def result_of(event: Event) -> str | None:
    """The stored JSON of the result an event already carries (an imported bound call), else None."""
    if event.result is None or event.result_at is None:
        return None
    return encode_result(event.result, event.result_at, event.result_metadata)


def decode_event(namespace: str, session_id: str, body: str | bytes, result: str | bytes | None) -> Event:
    data = json.loads(body)
    bound = json.loads(result) if result is not None else None
    return Event(
        id=data["id"],
        namespace=namespace,
        session_id=session_id,
        task_id=data["task"],
        type=data["type"],
        content=data["content"],
        metadata=data["metadata"],
        occurred_at=from_micros(data["occurred"]),
        recorded_at=from_micros(data["recorded"]),
        subject=data["subject"],
        request_id=data["request"],
        call_id=data["call"],
        tool=data["tool"],
        result=None if bound is None else bound["content"],
        result_at=None if bound is None else from_micros(bound["at"]),
        result_metadata=None if bound is None else bound["metadata"],
    )


def check_record(record: SessionRecord) -> None:
    """Refuse an imported session record the stores could not keep."""
    validate_namespace(record.namespace)
    check_session_id(record.session_id)
    if record.status not in SESSION_STATUSES:
        raise InvalidArgument("session status must be 'active' or 'ended'")
    if record.status == "ended" and record.ended_at is None:
        raise InvalidArgument("an ended session needs its ended_at")
    if record.extracted_through is not None:
        check_event_id(record.extracted_through)
    for moment in (record.started_at, record.last_event_at, record.ended_at):
        if moment is not None:
            micros(moment)

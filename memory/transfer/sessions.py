"""Imports of exported agent sessions (`export_events` / `hindsight export` session lines): every session record
and event typed and bounded, the whole batch checked before anything is written, every record put in the namespace
being imported into."""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

from memory.errors import InvalidArgument
from memory.events import EVENT_TYPES, Event, SessionRecord
from memory.ids import parse_memory_id
from memory.scope import MAX_SUBJECT_LENGTH, validate_namespace
from memory.validation import EngineLimits, check_content, check_json_object, check_session_id, parse_instant

MAX_IMPORT_SESSIONS = 100
MAX_EVENTS_PER_IMPORT = 5_000
SESSION_FIELDS = {"session", "events"}
RECORD_FIELDS = {
    "namespace",
    "session_id",
    "status",
    "goal",
    "started_at",
    "last_event_at",
    "ended_at",
    "events",
    "extracted_through",
    "end_reason",
    "archive",
}
EVENT_FIELDS = {
    "id",
    "namespace",
    "session_id",
    "task_id",
    "type",
    "content",
    "metadata",
    "occurred_at",
    "recorded_at",
    "subject",
    "request_id",
    "call_id",
    "tool",
    "result",
    "result_at",
    "result_metadata",
}


def _object(value: object, where: str, fields: set[str]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InvalidArgument(f"{where} must be an object")
    if unknown := sorted(set(value) - fields):
        raise InvalidArgument(f"{where} has unknown fields: {', '.join(unknown)}")
    return cast(dict[str, Any], value)


def _instant(value: object, where: str, *, required: bool = True) -> datetime | None:
    moment = parse_instant(value, where)
    if moment is None and required:
        raise InvalidArgument(f"{where} is required")
    return moment


def _label(value: object, where: str, *, limit: int = 128) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value or len(value) > limit:
        raise InvalidArgument(f"{where} must be a non-empty string of at most {limit} characters")
    return value


def _whole(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidArgument(f"{where} must be a whole number >= 0")
    return value


def _event_id(value: object, where: str) -> str:
    parsed = parse_memory_id(value)
    if parsed is None or parsed != value:
        raise InvalidArgument(f"{where} must be an event id")
    return parsed


def _session(raw: dict[str, Any], where: str, namespace: str, limits: EngineLimits) -> SessionRecord:
    status = raw.get("status")
    if status not in ("active", "ended"):
        raise InvalidArgument(f"{where}.status must be 'active' or 'ended'")
    sid = check_session_id(raw.get("session_id"), required=True)
    assert sid is not None
    goal = raw.get("goal")
    through = raw.get("extracted_through")
    archive = raw.get("archive")
    return SessionRecord(
        namespace=namespace,
        session_id=sid,
        status=status,
        goal=None if goal is None else check_content(goal, limits, field=f"{where}.goal"),
        started_at=cast(datetime, _instant(raw.get("started_at"), f"{where}.started_at")),
        last_event_at=cast(datetime, _instant(raw.get("last_event_at"), f"{where}.last_event_at")),
        ended_at=_instant(raw.get("ended_at"), f"{where}.ended_at", required=False),
        events=_whole(raw.get("events", 0), f"{where}.events"),
        extracted_through=None if through is None else _event_id(through, f"{where}.extracted_through"),
        archive=None if archive is None else check_json_object(archive, limits.max_state_bytes * 2, f"{where}.archive"),
        end_reason=_label(raw.get("end_reason"), f"{where}.end_reason"),
    )


def _event(raw: dict[str, Any], where: str, namespace: str, session_id: str, limits: EngineLimits) -> Event:
    kind = raw.get("type")
    if kind not in EVENT_TYPES:
        raise InvalidArgument(f"{where}.type must be one of {', '.join(sorted(EVENT_TYPES))}")
    if raw.get("session_id", session_id) != session_id:
        raise InvalidArgument(f"{where}.session_id must be its session's")
    result = raw.get("result")
    result_metadata = raw.get("result_metadata")
    subject = _label(raw.get("subject"), f"{where}.subject", limit=MAX_SUBJECT_LENGTH)
    if subject is None:
        raise InvalidArgument(f"{where}.subject is required")
    return Event(
        id=_event_id(raw.get("id"), f"{where}.id"),
        namespace=namespace,
        session_id=session_id,
        task_id=_label(raw.get("task_id"), f"{where}.task_id"),
        type=kind,
        content=check_content(raw.get("content"), limits, field=f"{where}.content"),
        metadata=check_json_object(raw.get("metadata"), limits.max_metadata_bytes, f"{where}.metadata"),
        occurred_at=cast(datetime, _instant(raw.get("occurred_at"), f"{where}.occurred_at")),
        recorded_at=cast(datetime, _instant(raw.get("recorded_at"), f"{where}.recorded_at")),
        subject=subject,
        request_id=_label(raw.get("request_id"), f"{where}.request_id"),
        call_id=_label(raw.get("call_id"), f"{where}.call_id"),
        tool=_label(raw.get("tool"), f"{where}.tool"),
        result=None if result is None else check_content(result, limits, field=f"{where}.result"),
        result_at=_instant(raw.get("result_at"), f"{where}.result_at", required=False),
        result_metadata=None
        if result_metadata is None
        else check_json_object(result_metadata, limits.max_metadata_bytes, f"{where}.result_metadata"),
    )


def check_event_records(
    sessions: list[dict[str, Any]], namespace: str, limits: EngineLimits
) -> tuple[list[SessionRecord], list[Event]]:
    """Every exported session and event of an import, checked before any is written, in `namespace`."""
    namespace = validate_namespace(namespace)
    if not isinstance(sessions, list) or len(sessions) > MAX_IMPORT_SESSIONS:
        raise InvalidArgument(f"import at most {MAX_IMPORT_SESSIONS} sessions per call")
    records: list[SessionRecord] = []
    events: list[Event] = []
    for index, item in enumerate(sessions):
        where = f"sessions[{index}]"
        entry = _object(item, where, SESSION_FIELDS)
        record = _session(_object(entry.get("session"), f"{where}.session", RECORD_FIELDS), where, namespace, limits)
        records.append(record)
        raw_events = entry.get("events", [])
        if not isinstance(raw_events, list):
            raise InvalidArgument(f"{where}.events must be a list")
        for position, raw in enumerate(raw_events):
            at = f"{where}.events[{position}]"
            events.append(_event(_object(raw, at, EVENT_FIELDS), at, namespace, record.session_id, limits))
        if len(events) > MAX_EVENTS_PER_IMPORT:
            raise InvalidArgument(f"import at most {MAX_EVENTS_PER_IMPORT} events per call")
    return records, events

"""Imports of exported sessions (`memory.transfer.sessions`): every record and event checked before anything is
written, each put in the namespace imported into, a bad field named with where it is."""

from __future__ import annotations

from typing import Any

import pytest

from memory.errors import InvalidArgument
from memory.ids import new_memory_id
from memory.transfer.sessions import MAX_IMPORT_SESSIONS, check_event_records
from memory.validation import EngineLimits

LIMITS = EngineLimits()


def exported(namespace: str = "user:old") -> dict[str, Any]:
    at = "2026-03-01T10:00:00Z"
    session = {"namespace": namespace, "session_id": "t1", "status": "ended", "started_at": at, "last_event_at": at}
    event = {
        "id": new_memory_id(),
        "namespace": namespace,
        "session_id": "t1",
        "type": "user_message",
        "content": "The ledger goes to Oslo",
        "occurred_at": at,
        "recorded_at": at,
        "subject": "wren",
    }
    return {"session": session, "events": [event]}


def test_records_and_events_are_put_in_the_namespace_imported_into() -> None:
    records, events = check_event_records([exported()], "user:new", LIMITS)
    assert [(r.namespace, r.session_id) for r in records] == [("user:new", "t1")]
    assert [(e.namespace, e.subject, e.content) for e in events] == [("user:new", "wren", "The ledger goes to Oslo")]


def test_a_bad_field_anywhere_refuses_the_whole_import_naming_where_it_is() -> None:
    bad = exported()
    bad["events"][0]["subject"] = "w" * 300
    with pytest.raises(InvalidArgument, match=r"sessions\[1\]\.events\[0\]\.subject"):
        check_event_records([exported(), bad], "user:new", LIMITS)
    with pytest.raises(InvalidArgument, match=f"at most {MAX_IMPORT_SESSIONS} sessions"):
        check_event_records([exported()] * (MAX_IMPORT_SESSIONS + 1), "user:new", LIMITS)

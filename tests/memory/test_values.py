"""Values the engine can always read back (`memory.values`, applied by `memory.validation`): a write, a filter or
a session state carrying an unbounded time, a non-finite number, a NUL or lone surrogate, or JSON nested too
deep is refused with `InvalidArgument` naming the field, and nothing is stored. Through `MemoryService` and
`SessionService` on the real embedded store."""

from __future__ import annotations

import math
import sys
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from memory.clock import ManualClock
from memory.embedders import WordLlamaEmbedder
from memory.errors import InvalidArgument
from memory.lifecycle.hidden import plan_until
from memory.requests import RecallRequest, StateUpdate, WriteRequest
from memory.scope import NamespaceScope
from memory.service import MemoryService
from memory.stores.edge import EdgeVectorStore
from memory.validation import parse_instant
from memory.values import MAX_JSON_DEPTH, check_json_value
from memory.working.in_process import InProcessWorkingMemory
from memory.working.service import SessionService
from tests.memory.conftest import START, everything

pytestmark = pytest.mark.anyio


def nested(depth: int) -> Any:
    """A list nested `depth` levels deep, built without recursion."""
    value: Any = []
    for _ in range(depth - 1):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("0001-01-01T00:00:00+14:00", "occurred_at"),  # year 0 in UTC: not a datetime at all
        ("9999-12-31T23:59:59-14:00", "occurred_at"),  # year 10000 in UTC
        ("9999-12-30T00:00:00Z", "since"),  # a datetime, but adding an expiry's days would overflow
        ("2201-01-01T00:00:00Z", "until"),
        ("1969-12-31T23:59:59Z", "created_at"),
        ("1970-01-01T00:00:00+01:00", "deleted_at"),  # 1969 in UTC
    ],
)
def test_a_timestamp_outside_years_1970_to_2200_in_utc_is_invalid_and_named(text: str, field: str) -> None:
    with pytest.raises(InvalidArgument, match=f"^{field} must lie within years 1970-2200"):
        parse_instant(text, field)


def test_timestamps_at_the_bounds_parse_and_keep_their_zone() -> None:
    assert parse_instant("1970-01-01T00:00:00Z", "t") == datetime(1970, 1, 1, tzinfo=UTC)
    late = parse_instant("2200-12-31T23:59:59-00:00", "t")
    assert late is not None and late.year == 2200
    tokyo = parse_instant("2026-05-01T09:30:00+09:00", "t")
    assert tokyo is not None and tokyo.utcoffset() == timedelta(hours=9)
    assert parse_instant("2026-05-01T09:30:00", "t") == datetime(2026, 5, 1, 9, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ({"a": math.nan}, "meta.a is not a finite number"),
        ({"a": [1, -math.inf]}, "meta.a[1] is not a finite number"),
        ({"a\x00b": 1}, "a key of meta contains a NUL"),
        ({"a": "x\x00"}, "meta.a contains a NUL"),
        ({"a": "\ud800"}, "meta.a contains a lone surrogate"),
        ({"a": 2**64}, "meta.a is an integer outside the 64-bit range"),
        ({"a": b"bytes"}, "meta.a is a bytes"),
        ({1: "x"}, "meta has a key that is not a string"),
        ({"a": nested(MAX_JSON_DEPTH)}, f"nests deeper than {MAX_JSON_DEPTH} levels"),
    ],
)
def test_a_json_value_the_stores_cannot_hold_is_invalid_with_its_path(value: Any, says: str) -> None:
    with pytest.raises(InvalidArgument, match=says.replace("[", r"\[").replace("]", r"\]")):
        check_json_value(value, "meta")


def test_a_value_nested_far_past_the_recursion_limit_is_refused_without_recursing() -> None:
    deep = nested(10 * sys.getrecursionlimit())
    with pytest.raises(InvalidArgument, match="nests deeper"):
        check_json_value({"a": deep}, "metadata")


def test_plain_json_at_the_depth_bound_is_accepted() -> None:
    check_json_value({"a": nested(MAX_JSON_DEPTH - 1), "n": [1, 2.5, None, True, "好的", -(2**63)]}, "meta")


BAD_WRITES: list[tuple[dict[str, Any], str]] = [
    ({"content": "null \x00 byte"}, "content contains a NUL"),
    ({"content": "lone \udc80 surrogate"}, "content contains a lone surrogate"),
    ({"tags": ["ok", "t\x00"]}, "a tag contains a NUL"),
    ({"tags": "ab"}, "tags must be a list"),
    ({"importance": math.nan}, "importance"),
    ({"importance": math.inf}, "importance"),
    ({"metadata": {"score": math.nan}}, "metadata.score is not a finite number"),
    ({"metadata": {"x": {"y": math.inf}}}, "metadata.x.y is not a finite number"),
    ({"metadata": {"k\ud800": 1}}, "a key of metadata contains a lone surrogate"),
    ({"metadata": {"deep": nested(10_000)}}, "metadata nests deeper than 32 levels"),
    ({"metadata": {"big": 10**30}}, "metadata.big is an integer outside the 64-bit range"),
]


@pytest.mark.parametrize(("fields", "says"), BAD_WRITES)
async def test_a_write_with_an_unstorable_value_is_invalid_and_stores_nothing(
    service: MemoryService, store: EdgeVectorStore, me: NamespaceScope, acme: str, fields: dict[str, Any], says: str
) -> None:
    request = {"content": "The user prefers tea", "subject": "agent-1", **fields}
    with pytest.raises(InvalidArgument, match=says):
        await service.write(me, WriteRequest(**request))
    assert await everything(store, acme) == []


async def test_a_recall_query_with_a_nul_is_invalid(service: MemoryService, me: NamespaceScope) -> None:
    with pytest.raises(InvalidArgument, match="query contains a NUL"):
        await service.recall(me, RecallRequest(query="tea\x00"))


async def test_a_write_dated_in_2200_with_a_time_bound_phrase_is_stored_and_read_back(
    service: MemoryService, me: NamespaceScope, acme: str, store: EdgeVectorStore
) -> None:
    """The latest accepted time plus an expiry's days stays inside what datetime holds."""
    occurred = parse_instant("2200-12-31T23:00:00-00:00", "occurred_at")
    outcome = await service.write(
        me, WriteRequest(content="The demo is tomorrow at noon", subject="agent-1", occurred_at=occurred)
    )
    until = plan_until(outcome.memory)
    assert until is not None and until.year == 2201
    [stored] = await everything(store, acme)
    assert stored.id == outcome.memory.id and plan_until(stored) == until


@pytest.mark.parametrize(
    ("state", "says"),
    [
        ({"progress": math.nan}, "state.progress is not a finite number"),
        ({"limits": [math.inf]}, r"state.limits\[0\] is not a finite number"),
        ({"note": "a\x00b"}, "state.note contains a NUL"),
        ({"tree": nested(5_000)}, "state nests deeper"),
    ],
)
async def test_a_session_state_with_an_unstorable_value_is_invalid_and_not_saved(
    embedder: WordLlamaEmbedder, store: EdgeVectorStore, me: NamespaceScope, state: dict[str, Any], says: str
) -> None:
    clock = ManualClock(START)
    sessions = SessionService(InProcessWorkingMemory(clock), MemoryService(store, embedder, clock))
    with pytest.raises(InvalidArgument, match=says):
        await sessions.update_state(me, StateUpdate(session_id="s-1", state=state))
    assert (await sessions.get(me, "s-1")).state == {}


def test_an_aware_time_in_another_zone_is_bounded_after_conversion_to_utc() -> None:
    just_inside = datetime(2200, 12, 31, 23, 0, tzinfo=timezone(timedelta(hours=1)))
    assert parse_instant(just_inside.isoformat(), "t") == just_inside
    with pytest.raises(InvalidArgument):
        parse_instant(datetime(2200, 12, 31, 23, 0, tzinfo=timezone(timedelta(hours=-2))).isoformat(), "t")

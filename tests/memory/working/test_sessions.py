"""`SessionService` with `InProcessWorkingMemory`, extracting into the real store, on a `ManualClock`."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from memory.clock import ManualClock
from memory.embedders import WordLlamaEmbedder
from memory.errors import InvalidArgument, NamespaceForbidden
from memory.models import MemoryKind
from memory.requests import ListRequest, RecallRequest, StateUpdate, TurnRequest
from memory.scope import NamespaceScope
from memory.service import MemoryService
from memory.stores.edge import EdgeVectorStore
from memory.validation import EngineLimits
from memory.working.in_process import InProcessWorkingMemory
from memory.working.service import SessionService, TurnOutcome
from tests.memory.conftest import START, scope

pytestmark = pytest.mark.anyio


@pytest.fixture
def working(clock: ManualClock) -> InProcessWorkingMemory:
    return InProcessWorkingMemory(clock)


@pytest.fixture
def memories(store: EdgeVectorStore, embedder: WordLlamaEmbedder, clock: ManualClock) -> MemoryService:
    return MemoryService(store, embedder, clock, limits=EngineLimits(working_window=3, max_state_bytes=200))


@pytest.fixture
def sessions(working: InProcessWorkingMemory, memories: MemoryService) -> SessionService:
    return SessionService(working, memories)


async def turn(sessions: SessionService, who: NamespaceScope, content: str, **kwargs: Any) -> TurnOutcome:
    values: dict[str, Any] = {"session_id": "s-1", "role": "user", "subject": "agent-1", **kwargs}
    return await sessions.record_turn(who, TurnRequest(content=content, **values))


async def set_state(sessions: SessionService, who: NamespaceScope, state: dict[str, Any], **kwargs: Any) -> Any:
    values: dict[str, Any] = {"session_id": "s-1", **kwargs}
    return (await sessions.update_state(who, StateUpdate(state=state, **values))).state


# -- turns -----------------------------------------------------------------------------------------------------


async def test_record_turn_keeps_the_last_n_turns_and_extracts_the_overflow_into_episodic_memories(
    sessions: SessionService, memories: MemoryService, clock: ManualClock, me: NamespaceScope
) -> None:
    said = [
        "My favourite programming language is Rust",
        "I live in Lisbon near the river",
        "My dog is called Biscuit",
        "I am allergic to peanuts",
        "I play tennis on Sundays",
    ]
    extracted: list[str] = []
    for content in said:
        outcome = await turn(sessions, me, content)
        extracted.extend(outcome.extracted)
        clock.advance(1)

    session = await sessions.get(me, "s-1")
    assert [t.content for t in session.turns] == said[-3:]
    assert outcome.session.turns == session.turns
    assert len(extracted) == 2
    first = await memories.get(me, extracted[0])
    assert first.content == "user: My favourite programming language is Rust"
    assert first.kind is MemoryKind.EPISODIC
    assert first.session_id == "s-1"
    assert first.namespace == "user:1"
    assert first.created_at == START  # the time the turn was said, not the time it was extracted
    assert first.source.tool == "record_turn"

    hits = await memories.recall(me, RecallRequest(query="Which programming language does the user like?"))
    assert hits[0].memory.id == extracted[0]
    in_session = await memories.recall(me, RecallRequest(query="where does the user live", session_id="s-1"))
    assert {h.memory.id for h in in_session} == set(extracted)


async def test_turns_within_the_window_are_not_extracted(
    sessions: SessionService, memories: MemoryService, me: NamespaceScope
) -> None:
    for content in ["hello", "I live in Lisbon", "bye"]:
        assert (await turn(sessions, me, content)).extracted == []

    assert (await memories.list(me, ListRequest())).memories == []


async def test_record_turn_with_a_read_only_scope_raises_namespace_forbidden(
    sessions: SessionService, acme: str
) -> None:
    with pytest.raises(NamespaceForbidden):
        await turn(sessions, scope(acme, read=["user:1"]), "I live in Lisbon")


@pytest.mark.parametrize(
    "bad",
    [{"role": "narrator"}, {"content": "  "}, {"session_id": "bad session"}, {"request_id": "bad id"}],
)
async def test_record_turn_with_bad_input_raises_invalid_argument(
    sessions: SessionService, bad: dict[str, Any], me: NamespaceScope
) -> None:
    values: dict[str, Any] = {"content": "I live in Lisbon", **bad}

    with pytest.raises(InvalidArgument):
        await turn(sessions, me, **values)

    assert (await sessions.get(me, "s-1")).turns == []


# -- state -----------------------------------------------------------------------------------------------------


async def test_state_update_merges_by_default_deeply(sessions: SessionService, me: NamespaceScope) -> None:
    await set_state(sessions, me, {"step": 1, "user": {"name": "Ana", "lang": "pt"}})

    state = await set_state(sessions, me, {"step": 2, "user": {"lang": "en"}})

    assert state == {"step": 2, "user": {"name": "Ana", "lang": "en"}}
    assert (await sessions.get(me, "s-1")).state == state


async def test_state_update_without_merge_replaces_the_state(sessions: SessionService, me: NamespaceScope) -> None:
    await set_state(sessions, me, {"step": 1, "user": {"name": "Ana"}})

    state = await set_state(sessions, me, {"cart": ["tea"]}, merge=False)

    assert state == {"cart": ["tea"]}


async def test_a_none_value_in_a_merged_update_deletes_the_key(sessions: SessionService, me: NamespaceScope) -> None:
    await set_state(sessions, me, {"step": 1, "user": {"name": "Ana", "lang": "pt"}})

    state = await set_state(sessions, me, {"step": None, "user": {"lang": None}, "absent": None})

    assert state == {"user": {"name": "Ana"}}


async def test_state_returned_is_a_copy_that_callers_cannot_mutate(
    sessions: SessionService, me: NamespaceScope
) -> None:
    state = await set_state(sessions, me, {"user": {"name": "Ana"}})
    state["user"]["name"] = "changed"

    assert (await sessions.get(me, "s-1")).state == {"user": {"name": "Ana"}}


async def test_state_expires_after_its_ttl(sessions: SessionService, clock: ManualClock, me: NamespaceScope) -> None:
    await set_state(sessions, me, {"step": 1}, ttl_seconds=60)

    clock.advance(59)
    session = await sessions.get(me, "s-1")
    assert session.state == {"step": 1}
    assert session.expires_at == START + timedelta(seconds=60)

    clock.advance(1)
    assert (await sessions.get(me, "s-1")).state == {}


async def test_working_memory_expires_after_the_default_ttl_of_a_day(
    sessions: SessionService, clock: ManualClock, me: NamespaceScope
) -> None:
    await set_state(sessions, me, {"step": 1})
    await turn(sessions, me, "I live in Lisbon")

    clock.advance(24 * 3600 - 1)
    assert (await sessions.get(me, "s-1")).turns != []

    clock.advance(1)
    expired = await sessions.get(me, "s-1")
    assert expired.state == {}
    assert expired.turns == []


async def test_an_unknown_session_reads_as_empty(sessions: SessionService, me: NamespaceScope) -> None:
    session = await sessions.get(me, "never-seen")

    assert session.session_id == "never-seen"
    assert session.namespace == "user:1"
    assert session.state == {}
    assert session.turns == []


async def test_sessions_with_the_same_id_in_two_tenants_or_namespaces_are_separate(
    sessions: SessionService, me: NamespaceScope, acme: str, globex: str
) -> None:
    other = scope(globex, write=["user:1"])
    both = scope(acme, write=["user:1", "user:2"])
    await set_state(sessions, me, {"owner": "acme user:1"})
    await set_state(sessions, other, {"owner": "globex user:1"})
    await set_state(sessions, both, {"owner": "acme user:2"}, namespace="user:2")
    await turn(sessions, other, "I live in Oslo")

    assert (await sessions.get(me, "s-1")).state == {"owner": "acme user:1"}
    assert (await sessions.get(me, "s-1")).turns == []
    assert (await sessions.get(other, "s-1")).state == {"owner": "globex user:1"}
    assert (await sessions.get(both, "s-1", namespace="user:2")).state == {"owner": "acme user:2"}


async def test_a_reader_sees_a_session_it_may_read_but_not_one_outside_its_grants(
    sessions: SessionService, me: NamespaceScope, acme: str
) -> None:
    await set_state(sessions, me, {"step": 1})

    assert (await sessions.get(scope(acme, read=["user:1"]), "s-1")).state == {"step": 1}
    with pytest.raises(NamespaceForbidden):
        await sessions.get(scope(acme, read=["user:2"]), "s-1", namespace="user:1")


async def test_a_read_only_scope_cannot_update_state(sessions: SessionService, acme: str) -> None:
    reader = scope(acme, read=["user:1"])

    with pytest.raises(NamespaceForbidden):
        await set_state(sessions, reader, {"step": 1})
    with pytest.raises(NamespaceForbidden):
        await set_state(sessions, reader, {"step": 1}, namespace="user:1")

    assert (await sessions.get(reader, "s-1")).state == {}


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param({"state": {"blob": "x" * 500}}, id="state-over-limit"),
        pytest.param({"state": {"when": object()}}, id="state-not-json"),
        pytest.param({"state": {"step": 2}, "ttl_seconds": 0}, id="ttl-zero"),
        pytest.param({"state": {"step": 2}, "session_id": ""}, id="empty-session-id"),
    ],
)
async def test_bad_state_updates_raise_invalid_argument_and_keep_the_old_state(
    sessions: SessionService, bad: dict[str, Any], me: NamespaceScope
) -> None:
    await set_state(sessions, me, {"step": 1})
    values: dict[str, Any] = {"session_id": "s-1", **bad}

    with pytest.raises(InvalidArgument):
        await sessions.update_state(me, StateUpdate(**values))

    assert (await sessions.get(me, "s-1")).state == {"step": 1}


async def test_merged_updates_cannot_grow_the_state_past_the_size_limit(
    sessions: SessionService, me: NamespaceScope
) -> None:
    await set_state(sessions, me, {"a": "x" * 120})

    with pytest.raises(InvalidArgument):
        await set_state(sessions, me, {"b": "y" * 120})


async def test_an_admin_scope_without_grants_must_name_the_session_namespace(
    sessions: SessionService, acme: str
) -> None:
    admin = scope(acme, admin=True)
    await set_state(sessions, admin, {"step": 1}, namespace="user:1")

    assert (await sessions.get(admin, "s-1", namespace="user:1")).state == {"step": 1}
    with pytest.raises(InvalidArgument):
        await sessions.get(admin, "s-1")


async def test_a_turn_at_the_content_limit_is_still_extracted_when_it_leaves_the_window(
    sessions: SessionService, memories: MemoryService, me: NamespaceScope, clock: ManualClock
) -> None:
    long_turn = ("I keep detailed notes about everything. " * 200)[: memories.limits.max_content_chars]
    await turn(sessions, me, long_turn)
    for content in ["I live in Lisbon", "My dog is called Biscuit", "I play tennis on Sundays"]:
        clock.advance(1)
        outcome = await turn(sessions, me, content)

    assert len(outcome.extracted) == 1
    assert (await memories.get(me, outcome.extracted[0])).content.endswith(long_turn.strip()[-100:])


# -- writers ---------------------------------------------------------------------------------------------------


async def test_record_turn_and_update_state_record_the_requests_subject_among_the_sessions_writers(
    sessions: SessionService, working: InProcessWorkingMemory, acme: str
) -> None:
    me = scope(acme, write=["user:1", "user:2"])
    admin = scope(acme, admin=True)
    await turn(sessions, me, "I live in Lisbon", session_id="talked", subject="agent-1")
    await set_state(sessions, me, {"step": 1}, session_id="planned", namespace="user:2", subject="agent-1")
    await set_state(sessions, me, {"step": 1}, session_id="anonymous")
    await turn(sessions, me, "I play tennis", session_id="other", subject="agent-2")

    assert await working.sessions_written_by(admin, "agent-1") == [("user:1", "talked"), ("user:2", "planned")]
    assert await working.sessions_written_by(admin, "agent-2") == [("user:1", "other")]

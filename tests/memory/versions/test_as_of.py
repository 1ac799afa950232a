"""Recall as of an instant (`RecallRequest.as_of`, `memory.versions`): the versions valid then, each superseded one
with the end of its validity; history lists of one memory's versions. Real engine, real embedder, a manual clock;
supersession made by the write pipeline from the texts."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from memory.clock import ManualClock
from memory.errors import InvalidArgument, NotFound
from memory.models import RecallHit, WriteOutcome
from memory.requests import ListRequest, RecallRequest, WriteRequest
from memory.scope import NamespaceScope
from memory.service import MemoryService
from tests.memory.conftest import START, scope

pytestmark = pytest.mark.anyio

JAN, APR, AUG = START, START + timedelta(days=90), START + timedelta(days=210)


async def said(service: MemoryService, who: NamespaceScope, content: str, at: datetime) -> WriteOutcome:
    return await service.write(who, WriteRequest(content=content, subject="agent-1", occurred_at=at))


async def recall(service: MemoryService, who: NamespaceScope, query: str, **kwargs: Any) -> list[RecallHit]:
    return await service.recall(who, RecallRequest(query=query, **kwargs))


@pytest.fixture
async def moves(service: MemoryService, clock: ManualClock, me: NamespaceScope) -> list[WriteOutcome]:
    """Lived in Berlin from January, moved to Paris in April and to Lisbon in August (each supersedes the last)."""
    clock.set(AUG + timedelta(days=30))
    written = [
        await said(service, me, "I live in Berlin", JAN),
        await said(service, me, "I moved to Paris", APR),
        await said(service, me, "I moved to Lisbon", AUG),
    ]
    assert [w.superseded for w in written[1:]] == [[written[0].memory.id], [written[1].memory.id]]
    return written


async def test_a_recall_as_of_a_date_answers_the_version_valid_then_with_its_validity(
    service: MemoryService, me: NamespaceScope, moves: list[WriteOutcome]
) -> None:
    berlin, paris, lisbon = (w.memory.id for w in moves)
    for at, expected, valid_to in [
        (JAN + timedelta(days=30), berlin, APR),
        (APR + timedelta(days=1), paris, AUG),
        (AUG + timedelta(days=1), lisbon, None),
    ]:
        [hit] = await recall(service, me, "where does the user live?", as_of=at)
        assert (hit.memory.id, hit.valid_to) == (expected, valid_to)
        assert hit.memory.created_at <= at


async def test_a_recall_as_of_a_date_never_answers_what_was_said_later(
    service: MemoryService, me: NamespaceScope, moves: list[WriteOutcome]
) -> None:
    hits = await recall(service, me, "where does the user live?", as_of=JAN + timedelta(days=1))
    assert [h.memory.content for h in hits] == ["I live in Berlin"]
    assert await recall(service, me, "where does the user live?", as_of=JAN - timedelta(days=1)) == []


async def test_a_recall_of_the_present_answers_the_live_version_and_no_end_of_validity(
    service: MemoryService, me: NamespaceScope, moves: list[WriteOutcome]
) -> None:
    hits = await recall(service, me, "where does the user live?")
    assert [(h.memory.content, h.valid_to) for h in hits] == [("I moved to Lisbon", None)]


async def test_superseded_versions_recalled_on_request_carry_the_end_of_their_validity(
    service: MemoryService, me: NamespaceScope, moves: list[WriteOutcome]
) -> None:
    hits = await recall(service, me, "where does the user live?", include_superseded=True)
    assert {h.memory.content: h.valid_to for h in hits} == {
        "I live in Berlin": APR,
        "I moved to Paris": AUG,
        "I moved to Lisbon": None,
    }
    before_august = await recall(
        service, me, "where does the user live?", include_superseded=True, as_of=AUG - timedelta(seconds=1)
    )
    assert {h.memory.content: h.valid_to for h in before_august} == {"I live in Berlin": APR, "I moved to Paris": AUG}


async def test_a_version_forgotten_later_does_not_hide_what_was_valid_before_it(
    service: MemoryService, me: NamespaceScope, moves: list[WriteOutcome]
) -> None:
    await service.forget(me, moves[1].memory.id)  # "I moved to Paris" was wrong
    [before] = await recall(service, me, "where does the user live?", as_of=APR - timedelta(days=1))
    assert (before.memory.content, before.valid_to) == ("I live in Berlin", APR)
    assert await recall(service, me, "where does the user live?", as_of=APR + timedelta(days=1)) == []


async def test_an_until_after_as_of_is_narrowed_to_it_and_a_since_after_it_is_refused(
    service: MemoryService, me: NamespaceScope, moves: list[WriteOutcome]
) -> None:
    hits = await recall(service, me, "where does the user live?", as_of=APR + timedelta(days=1), until=AUG)
    assert [h.memory.content for h in hits] == ["I moved to Paris"]
    with pytest.raises(InvalidArgument, match="since must not be later than until or as_of"):
        await recall(service, me, "where does the user live?", as_of=JAN, since=APR)


async def test_the_history_of_any_version_lists_the_whole_chain_oldest_first(
    service: MemoryService, me: NamespaceScope, moves: list[WriteOutcome]
) -> None:
    chain = [w.memory.id for w in moves]
    for version in chain:
        page = await service.list(me, ListRequest(history_of=version))
        assert ([m.id for m in page.memories], page.next_cursor) == (chain, None)
    superseded = (await service.list(me, ListRequest(history_of=chain[0]))).memories
    assert [m.superseded_by for m in superseded] == [chain[1], chain[2], None]


async def test_a_forgotten_version_shows_in_a_history_only_with_include_deleted(
    service: MemoryService, me: NamespaceScope, moves: list[WriteOutcome]
) -> None:
    chain = [w.memory.id for w in moves]
    await service.forget(me, chain[1])
    assert [m.id for m in (await service.list(me, ListRequest(history_of=chain[2]))).memories] == [chain[0], chain[2]]
    everything = await service.list(me, ListRequest(history_of=chain[2], include_deleted=True))
    assert [m.id for m in everything.memories] == chain


async def test_a_history_names_no_version_another_reader_cannot_see(
    service: MemoryService, me: NamespaceScope, moves: list[WriteOutcome], acme: str
) -> None:
    stranger = scope(acme, read=["user:2"])
    with pytest.raises(NotFound):
        await service.list(stranger, ListRequest(history_of=moves[0].memory.id))
    with pytest.raises(InvalidArgument, match="history_of"):
        await service.list(me, ListRequest(history_of=moves[0].memory.id, hidden="superseded"))

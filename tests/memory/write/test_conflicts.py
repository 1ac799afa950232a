"""Issue #13 through the real write path (MemoryService, embedded engine, WordLlama): `force` changes nothing else,
and first person is the writer in a shared namespace, or the speaker a write gives in `metadata.speaker`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from memory.clock import ManualClock
from memory.models import WriteOutcome, WriteStatus
from memory.requests import WriteRequest
from memory.scope import NamespaceScope
from memory.service import MemoryService
from tests.memory.conftest import scope

pytestmark = pytest.mark.anyio


@pytest.fixture
def team(acme: str) -> NamespaceScope:
    return scope(acme, write=["shared:team"])


async def write(service: MemoryService, who: NamespaceScope, content: str, subject: str, **kw: bool) -> WriteOutcome:
    return await service.write(who, WriteRequest(content=content, subject=subject, namespace="shared:team", **kw))


async def berlin_then_paris(
    say: Callable[[MemoryService, NamespaceScope, str, str], Awaitable[WriteOutcome]],
    service: MemoryService,
    clock: ManualClock,
    team: NamespaceScope,
    people: tuple[str, str, str, str],
) -> tuple[WriteOutcome, WriteOutcome]:
    """The first of `people` lives in Berlin, the second, a minute later, in Paris; the third and fourth say the same
    in Chinese. Returns the outcomes of the two writes about Paris."""
    await say(service, team, "I live in Berlin", people[0])
    clock.advance(60)
    paris = await say(service, team, "I live in Paris", people[1])
    await say(service, team, "我住在柏林", people[2])
    clock.advance(60)
    paris_zh = await say(service, team, "我住在巴黎", people[3])
    return paris, paris_zh


async def test_a_forced_write_neither_merges_nor_supersedes(
    service: MemoryService, clock: ManualClock, team: NamespaceScope
) -> None:
    await write(service, team, "I live in Berlin", "alice")
    await write(service, team, "We deploy to production every Tuesday", "alice")
    clock.advance(60)
    moved = await write(service, team, "I moved to Paris", "alice", force=True)
    again = await write(service, team, "Every Tuesday we deploy to production", "alice", force=True)

    assert (moved.status, moved.superseded) == (WriteStatus.CREATED, [])
    assert again.status is WriteStatus.CREATED


async def test_the_same_write_without_force_supersedes_and_merges(
    service: MemoryService, clock: ManualClock, team: NamespaceScope
) -> None:
    await write(service, team, "I live in Berlin", "alice")
    await write(service, team, "We deploy to production every Tuesday", "alice")
    clock.advance(60)
    moved = await write(service, team, "I moved to Paris", "alice")
    again = await write(service, team, "Every Tuesday we deploy to production", "alice")

    assert len(moved.superseded) == 1
    assert again.status is WriteStatus.UPDATED


async def test_two_writers_first_person_statements_in_a_shared_namespace_both_stay(
    service: MemoryService, clock: ManualClock, team: NamespaceScope
) -> None:
    paris, paris_zh = await berlin_then_paris(write, service, clock, team, ("bob", "alice", "bob", "alice"))

    assert paris.superseded == [] and paris_zh.superseded == []


async def said(service: MemoryService, who: NamespaceScope, content: str, speaker: str) -> WriteOutcome:
    """One agent writing a person's own words, the speaker only in metadata."""
    request = WriteRequest(content=content, subject="agent", namespace="shared:team", metadata={"speaker": speaker})
    return await service.write(who, request)


async def test_two_speakers_i_live_in_x_given_in_metadata_in_one_namespace_do_not_supersede_each_other(
    service: MemoryService, clock: ManualClock, team: NamespaceScope
) -> None:
    paris, paris_zh = await berlin_then_paris(said, service, clock, team, ("Bob", "Alice", "小王", "小李"))

    assert paris.superseded == [] and paris_zh.superseded == []
    assert paris.memory.attributes == ["alice|lives_in"]
    assert paris.memory.content == "I live in Paris"  # stored as written


async def test_one_speaker_given_in_metadata_supersedes_their_own_earlier_statement(
    service: MemoryService, clock: ManualClock, team: NamespaceScope
) -> None:
    berlin = await said(service, team, "I live in Berlin", "Bob")
    clock.advance(60)
    paris = await said(service, team, "I moved to Paris", "Bob")

    assert paris.superseded == [berlin.memory.id]


async def test_the_same_words_from_two_speakers_given_in_metadata_are_two_memories_and_one_speaker_repeats(
    service: MemoryService, team: NamespaceScope
) -> None:
    bob = await said(service, team, "I live in Paris", "Bob")
    alice = await said(service, team, "I live in Paris", "Alice")
    bob_again = await said(service, team, "I live in Paris", "Bob")

    assert alice.status is WriteStatus.CREATED and alice.id != bob.id
    assert bob_again.status is WriteStatus.SKIPPED and bob_again.memory.id == bob.id

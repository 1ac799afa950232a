"""Shared copies carry only what the sharer wrote: a reader of the shared namespace alone sees no private earlier
wording, metadata, tags or ids in any field of a copy, through list and recall, after a near-duplicate update, a
supersession, or an old statement arriving late."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memory.models import Memory
from memory.requests import ListRequest, RecallRequest, WriteRequest
from memory.scope import NamespaceScope
from memory.service import MemoryService
from tests.memory.conftest import START, scope

pytestmark = pytest.mark.anyio

PRIVATE_WORDS = ("Berlin", "secret-project", "private-tag", "Kreuzberg")


async def write(service: MemoryService, who: NamespaceScope, content: str, **kwargs: Any) -> Memory:
    outcome = await service.write(who, WriteRequest(content=content, subject="agent-1", **kwargs))
    return outcome.memory


def assert_nothing_private(memory: Memory, readable_ids: set[str]) -> None:
    """Every field of `memory` as the shared reader got it: no private text, every id one it can read."""
    text = json.dumps(
        {
            "content": memory.content,
            "tags": memory.tags,
            "metadata": memory.metadata,
            "source": [memory.source.subject, memory.source.request_id],
        },
        ensure_ascii=False,
    )
    for word in PRIVATE_WORDS:
        assert word not in text, (word, text)
    named = {memory.origin_id, memory.superseded_by, memory.follows, *memory.supersedes} - {None}
    assert named <= readable_ids, named - readable_ids
    for note in json.dumps(memory.metadata).split('"'):
        if len(note) == 36 and note.count("-") == 4:  # a memory id anywhere in the notes
            assert note in readable_ids, note


async def shared_view(service: MemoryService, team: NamespaceScope, query: str) -> list[Memory]:
    listed = (await service.list(team, ListRequest(include_deleted=True, limit=200))).memories
    recalled = await service.recall(team, RecallRequest(query=query, include_superseded=True))
    return [*listed, *(h.memory for h in recalled)]


async def test_a_near_duplicate_shared_later_carries_no_private_wording_tags_or_metadata(
    service: MemoryService, acme: str
) -> None:
    both = scope(acme, write=["user:1", "team:1"])
    team = scope(acme, read=["team:1"])
    private = await write(
        service,
        both,
        "The user lives in Berlin Kreuzberg and likes the secret-project",
        tags=["private-tag"],
        metadata={"note": "secret-project"},
    )

    await write(service, both, "The user lives in Berlin Kreuzberg and likes the secret project", share_to=["team:1"])
    shared = await write(service, both, "The user lives in Lisbon", share_to=["team:1"], tags=["public"])

    view = await shared_view(service, team, "where does the user live")
    readable = {m.id for m in (await service.list(team, ListRequest(include_deleted=True))).memories}
    assert private.id not in readable
    assert view, "the reader sees the shared copies"
    for memory in view:
        if "Berlin" in memory.content:
            continue  # the sharer did share that wording: its own content may say it
        assert_nothing_private(memory, readable)
    assert shared.id not in readable


async def test_a_copy_of_a_near_duplicate_update_keeps_only_the_sharers_tags_and_metadata(
    service: MemoryService, acme: str
) -> None:
    both = scope(acme, write=["user:1", "team:1"])
    team = scope(acme, read=["team:1"])
    await write(
        service, both, "The user prefers tea over coffee", tags=["private-tag"], metadata={"why": "secret-project"}
    )

    await write(service, both, "User prefers tea to coffee", share_to=["team:1"], tags=["drinks"], metadata={"a": 1})

    [copy] = (await service.list(team, ListRequest())).memories
    assert copy.content == "User prefers tea to coffee"
    assert copy.tags == ["drinks"]
    assert {k: v for k, v in copy.metadata.items() if k != "_pipeline"} == {"a": 1}
    assert "conflict" not in copy.metadata.get("_pipeline", {})  # the private memory's earlier wording stays there
    assert copy.origin_id is None  # the private origin is not named to the team reader
    assert_nothing_private(copy, {copy.id})


async def test_a_supersession_names_only_memories_of_the_copys_own_namespace(service: MemoryService, acme: str) -> None:
    both = scope(acme, write=["user:1", "team:1"])
    team = scope(acme, read=["team:1"])
    await write(service, both, "I live in Berlin")  # private only
    await write(service, both, "I moved to Paris", share_to=["team:1"])
    await write(service, both, "I live in Rome", occurred_at=START.replace(year=2020), share_to=["team:1"])

    view = await shared_view(service, team, "where do I live")
    readable = {m.id for m in (await service.list(team, ListRequest(include_deleted=True))).memories}
    assert {m.content for m in view} == {"I moved to Paris", "I live in Rome"}
    for memory in view:
        assert_nothing_private(memory, readable)


async def test_links_stored_by_an_older_version_are_hidden_from_a_reader_who_cannot_follow_them(
    service: MemoryService, acme: str
) -> None:
    both = scope(acme, write=["user:1", "team:1"])
    team = scope(acme, read=["team:1"])
    private = await write(service, both, "I live in Berlin Kreuzberg")
    copy = await write(service, scope(acme, write=["team:1"]), "The team meets on Mondays")
    legacy = Memory(
        **{
            **{f: getattr(copy, f) for f in copy.__slots__},  # type: ignore[attr-defined]
            "supersedes": [private.id],
            "origin_id": private.id,
            "metadata": {"_pipeline": {"conflict": {"previous_content": "I live in Berlin Kreuzberg"}}},
        }
    )
    await service.store.update(scope(acme, write=["team:1"]), legacy)

    [seen] = (await service.list(team, ListRequest())).memories
    assert_nothing_private(seen, {seen.id})
    assert (await service.list(both, ListRequest(namespace="team:1"))).memories[0].supersedes == [private.id]

"""`MemoryService.write_many` (`memory.write.batch`) on the real store and embedder: a batch leaves the store as
the same writes one by one do (repeats, chit-chat, supersession, updates in place, session turns embedded after
the turn they follow, even when the batch expected another), each invalid item fails alone, and a backend
failure ends the batch with the rest unattempted."""

from __future__ import annotations

import re
from dataclasses import asdict
from datetime import timedelta
from typing import Any

import pytest

from memory.errors import BackendUnavailable, InvalidArgument, NamespaceForbidden
from memory.models import Memory, WriteOutcome
from memory.requests import RecallRequest, WriteRequest
from memory.scope import NamespaceScope
from memory.service import MemoryService
from memory.stores.edge import EdgeVectorStore
from tests.memory.conftest import START, everything, scope

pytestmark = pytest.mark.anyio

MEMORY_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
STATEMENTS: list[dict[str, Any]] = [
    {"content": "Did you book the venue for Anna's birthday dinner?", "session_id": "s1"},
    {"content": "We use MySQL for the orders service", "kind": "semantic"},
    {"content": "I moved to Porto in 2021", "session_id": "s1"},  # a repeat of a stored turn: skipped
    {"content": "Yes, the Lisbon place on Rua Augusta, for eight", "session_id": "s1"},  # follows item 0
    {"content": "thanks!"},
    {"content": "We migrated the orders service to PostgreSQL", "kind": "semantic"},
    {"content": "The user's dog is called Pepper", "tags": ["pets"]},
    {"content": "The user's dog is named Pepper", "tags": ["dog"]},
    {"content": "The user's dog is called Pepper", "tags": ["pets"]},
    {"content": "I moved to Porto in 2021", "force": True},
    {"content": "Did the dinner go well?", "session_id": "s1", "metadata": {"speaker": "Ana"}},
]


def requests(namespace: str) -> list[WriteRequest]:
    return [WriteRequest(subject="agent-1", namespace=namespace, **item) for item in STATEMENTS]


def comparable(outcomes: list[WriteOutcome], memories: list[Memory]) -> str:
    """Outcomes and stored memories with ids numbered by first appearance and namespaces left out. Memories are
    listed by content (a shared copy's id is made when it is stored, so ids alone do not order runs alike)."""
    names: dict[str, str] = {}
    rows = [(o.status.value, o.id, o.superseded, o.reason) for o in outcomes]
    ordered = sorted(memories, key=lambda m: (m.origin_id is not None, m.content, m.id))
    stored = [asdict(m) | {"namespace": None} for m in ordered]
    text = repr((rows, stored))
    for namespace, same in (("user:1", "ns"), ("user:2", "ns"), ("team:1", "team"), ("team:2", "team")):
        text = text.replace(f"'{namespace}'", f"'{same}'")
    return MEMORY_ID.sub(lambda m: names.setdefault(m.group(), f"#{len(names)}"), text)


async def test_a_batch_leaves_the_store_as_the_same_writes_one_by_one_do(
    service: MemoryService, store: EdgeVectorStore, acme: str
) -> None:
    who = scope(acme, read=["user:1", "user:2"], write=["user:1", "user:2"])
    for namespace in ("user:1", "user:2"):  # a turn of the session stored before, which item 2 repeats
        await service.write(who, WriteRequest("I moved to Porto in 2021", "agent-1", namespace, session_id="s1"))

    singles = [await service.write(who, request) for request in requests("user:1")]
    batch = await service.write_many(who, requests("user:2"))
    memories = await everything(store, acme)

    assert all(isinstance(outcome, WriteOutcome) for outcome in batch)
    batched = [o for o in batch if isinstance(o, WriteOutcome)]
    one = [m for m in memories if m.namespace == "user:1"]
    two = [m for m in memories if m.namespace == "user:2"]
    assert comparable(batched, two) == comparable(singles, one)
    assert [o.status.value for o in batched][2:5] == ["skipped", "created", "skipped"]
    for query in ("Where is the birthday dinner?", "Did the dinner go well?", "orders database"):  # same vectors
        scores = []
        for namespace in ("user:1", "user:2"):
            hits = await service.recall(who, RecallRequest(query, namespaces=[namespace], include_superseded=True))
            scores.append([(h.memory.content, round(h.scores.dense_similarity, 5), h.scores.keyword) for h in hits])
        assert scores[0] == scores[1]


def long_batch(size: int, team: str) -> list[dict[str, Any]]:
    """A batch longer than one read-ahead window (`memory.write.batch_commit`): distinct facts, exact repeats of items
    far back and of the item just before, near-duplicates, new values of an attribute stated earlier in the batch
    (supersessions, which stop the read-ahead), chit-chat, forced repeats, tags, importance, memories shared to
    `team`, and turns of a conversation, one said twice."""
    cities = ["Lisbon", "Porto", "Madrid", "Oslo", "Berlin", "Vienna", "Prague", "Dublin", "Athens", "Zurich"]
    pets = ["Pepper", "Biscuit", "Luna", "Milo", "Nala", "Rex", "Coco", "Toby"]
    items: list[dict[str, Any]] = []
    for n in range(size):
        friend = f"Friend{n % 97}"
        match n % 16:
            case 5 if n > 40:
                items.append(dict(items[n - 37]))  # a repeat of an item far back (maybe in another window)
            case 6:
                items.append(dict(items[n - 1]))  # a repeat of the item just before
            case 7:
                items.append({"content": f"The user's dog is called {pets[n // 16 % 8]}", "tags": ["pets"]})
            case 8:  # a near-duplicate of the item before: updated in place
                items.append({"content": f"The user's dog is named {pets[n // 16 % 8]}", "tags": ["dog"]})
            case 9:
                items.append({"content": f"I live in {cities[n % 10]}", "kind": "semantic"})
            case 10:
                items.append({"content": f"I moved to {cities[(n + 3) % 10]}", "kind": "semantic"})
            case 11:
                items.append({"content": "thanks!"})
            case 12:
                items.append({"content": f"{friend} works at company number {n}", "force": True})
            case 4 if n % 64 == 4:
                items.append({"content": f"{friend} joined the book club in {cities[n % 10]}", "share_to": [team]})
            case 13 | 14:  # turns of one conversation, each at its own time
                turn = f"Turn {n}: we talked about {cities[n % 10]} again"
                items.append({"content": turn, "session_id": "s2", "occurred_at": START + timedelta(minutes=n)})
            case 15 if n % 32 == 15:
                items.append(dict(items[n - 1]))  # a turn said twice: the next turn follows the first
            case _:
                items.append({"content": f"{friend} visited {cities[n % 10]} in {1990 + n % 30}", "importance": 0.7})
    return items


async def test_a_long_batch_with_repeats_and_conflicts_among_its_items_stores_what_single_writes_store(
    service: MemoryService, store: EdgeVectorStore, acme: str
) -> None:
    who = scope(acme, write=["user:1", "user:2", "team:1", "team:2"])
    size = service.limits.max_batch_items

    singles = [
        await service.write(who, WriteRequest(subject="agent-1", namespace="user:1", **item))
        for item in long_batch(size, "team:1")
    ]
    batch = await service.write_many(
        who, [WriteRequest(subject="agent-1", namespace="user:2", **item) for item in long_batch(size, "team:2")]
    )
    memories = await everything(store, acme)

    batched = [o for o in batch if isinstance(o, WriteOutcome)]
    assert len(batched) == size
    one = [m for m in memories if m.namespace in ("user:1", "team:1")]
    two = [m for m in memories if m.namespace in ("user:2", "team:2")]
    assert any(m.namespace == "team:2" for m in two)
    assert comparable(batched, two) == comparable(singles, one)
    statuses = {o.status.value for o in batched}
    assert statuses == {"created", "skipped", "updated"}
    assert sum(bool(o.superseded) for o in batched) > 5


async def test_an_invalid_item_fails_alone(service: MemoryService, acme: str) -> None:
    who = scope(acme, write=["user:1"])
    batch = await service.write_many(
        who,
        [
            WriteRequest("The user works at Globex", "agent-1"),
            WriteRequest("The user likes tea", "agent-1", namespace="user:9"),
            WriteRequest("The user likes jazz", "agent-1", importance=2.0),
            WriteRequest("The user's sister is Ines", "agent-1"),
        ],
    )
    assert [type(result) for result in batch] == [WriteOutcome, NamespaceForbidden, InvalidArgument, WriteOutcome]


async def test_more_requests_than_the_limit_are_refused_before_any_is_written(
    service: MemoryService, store: EdgeVectorStore, acme: str
) -> None:
    who = scope(acme, write=["user:1"])
    too_many = [WriteRequest(f"Fact number {n}", "agent-1") for n in range(service.limits.max_batch_items + 1)]
    with pytest.raises(InvalidArgument, match="at most 256"):
        await service.write_many(who, too_many)
    assert await everything(store, acme) == []


async def test_a_backend_failure_ends_the_batch_and_leaves_the_rest_unattempted(
    private_store: EdgeVectorStore, service_on: Any, acme: str
) -> None:
    who: NamespaceScope = scope(acme, write=["user:1"])
    service: MemoryService = service_on(private_store)
    await private_store.close()
    batch = await service.write_many(who, [WriteRequest(f"Fact number {n}", "agent-1") for n in range(3)])
    assert all(isinstance(result, BackendUnavailable) for result in batch)
    assert [r.message.startswith("not attempted") for r in batch if isinstance(r, BackendUnavailable)] == [
        False,
        True,
        True,
    ]


@pytest.fixture
def service_on(embedder: Any, clock: Any) -> Any:
    return lambda store: MemoryService(store, embedder, clock)

"""`MemoryService` with the real qdrant-edge store, the real WordLlama embedder and a `ManualClock`."""

from __future__ import annotations

import base64
import math
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import pytest

from memory.clock import ManualClock
from memory.cursors import encode_cursor
from memory.errors import InvalidArgument, NamespaceForbidden, NotFound
from memory.models import MemoryKind, RecallHit, WriteOutcome, WriteStatus
from memory.recall.scoring import estimate_tokens
from memory.requests import ListRequest, RecallRequest, WriteRequest
from memory.scope import NamespaceScope
from memory.service import MemoryService
from memory.stores.edge import EdgeVectorStore
from tests.memory.conftest import START, everything, scope

pytestmark = pytest.mark.anyio


@pytest.fixture
def other(globex: str) -> NamespaceScope:
    """A caller of another tenant with the same namespace grant."""
    return scope(globex, write=["user:1"])


DISTRACTORS = [
    "The user's dog is called Biscuit",
    "The quarterly report is due on Friday",
    "The user lives in Lisbon near the river",
    "The user is allergic to peanuts",
    "The team meeting moved to Tuesday afternoon",
    "The user drives a blue bicycle to work",
    "The user enjoys hiking in the mountains on weekends",
    "The user's sister works as a nurse",
    "The printer on the third floor is broken",
    "The user prefers tea over coffee",
]


async def write(service: MemoryService, who: NamespaceScope, content: str, **kwargs: Any) -> WriteOutcome:
    return await service.write(who, WriteRequest(content=content, subject=f"{who.tenant}-agent", **kwargs))


async def recall(service: MemoryService, who: NamespaceScope, query: str, **kwargs: Any) -> list[RecallHit]:
    return await service.recall(who, RecallRequest(query=query, **kwargs))


async def recalled(service: MemoryService, who: NamespaceScope, query: str, **kwargs: Any) -> list[str]:
    return [hit.memory.content for hit in await recall(service, who, query, **kwargs)]


async def listed(service: MemoryService, who: NamespaceScope, **kwargs: Any) -> list[str]:
    page = await service.list(who, ListRequest(**kwargs))
    return [m.id for m in page.memories]


# -- write and recall ------------------------------------------------------------------------------------------


async def test_write_then_recall_returns_the_memory_with_score_parts_that_sum_to_the_score(
    service: MemoryService,
    me: NamespaceScope,
    acme: str,
) -> None:
    outcome = await write(service, me, "The user's favourite programming language is Rust", importance=0.9)
    assert outcome.status is WriteStatus.CREATED

    [hit] = await recall(service, me, "Which programming language does the user like best?", explain=True)

    assert hit.memory.id == outcome.memory.id
    assert hit.memory.tenant == acme
    assert hit.memory.namespace == "user:1"
    assert hit.memory.source.subject == f"{acme}-agent"
    parts = hit.scores
    assert 0.0 < parts.similarity <= 1.0
    assert parts.recency == pytest.approx(1.0)  # written just now on the manual clock
    assert parts.importance == pytest.approx(0.9)
    assert parts.access_frequency == 0.0
    w = service.weights
    weighted = (
        w.similarity * parts.similarity
        + w.recency * parts.recency
        + w.importance * parts.importance
        + w.access_frequency * parts.access_frequency
    )
    assert parts.score == pytest.approx(weighted)
    assert parts.similarity == pytest.approx(1.0)  # the only candidate is the best one


async def test_the_relevant_memory_ranks_first_among_distractors(service: MemoryService, me: NamespaceScope) -> None:
    for content in DISTRACTORS:
        await write(service, me, content)
    relevant = await write(service, me, "The user's favourite programming language is Rust")

    hits = await recall(service, me, "Which programming language does the user like best?", top_k=5)

    assert hits[0].memory.id == relevant.memory.id
    assert [h.scores.score for h in hits] == sorted((h.scores.score for h in hits), reverse=True)


async def test_an_exact_repeat_differing_in_case_and_whitespace_is_skipped_with_the_existing_id(
    service: MemoryService, store: EdgeVectorStore, me: NamespaceScope, acme: str
) -> None:
    first = await write(service, me, "The user prefers tea over coffee")

    repeat = await write(service, me, "  the USER prefers\n tea   over COFFEE ")

    assert repeat.status is WriteStatus.SKIPPED
    assert repeat.memory.id == first.memory.id
    assert repeat.reason
    assert len(await everything(store, acme)) == 1


async def test_force_stores_an_exact_repeat_anyway(
    service: MemoryService, store: EdgeVectorStore, me: NamespaceScope, acme: str
) -> None:
    first = await write(service, me, "The user prefers tea over coffee")

    forced = await write(service, me, "The user prefers tea over coffee", force=True)

    assert forced.status is WriteStatus.CREATED
    assert forced.memory.id != first.memory.id
    assert len(await everything(store, acme)) == 2


async def test_a_repeat_in_another_namespace_is_not_a_duplicate(service: MemoryService, acme: str) -> None:
    both = scope(acme, write=["user:1", "user:2"])
    await write(service, both, "The user prefers tea over coffee", namespace="user:1")

    outcome = await write(service, both, "The user prefers tea over coffee", namespace="user:2")

    assert outcome.status is WriteStatus.CREATED


async def test_an_exact_repeat_of_an_expired_memory_is_stored_again(
    service: MemoryService, clock: ManualClock, me: NamespaceScope
) -> None:
    await write(service, me, "The user has a dentist appointment at noon", ttl_seconds=3600)
    clock.advance(7200)

    again = await write(service, me, "The user has a dentist appointment at noon")

    assert again.status is WriteStatus.CREATED
    assert await recalled(service, me, "dentist appointment") == ["The user has a dentist appointment at noon"]


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param({"content": ""}, id="empty-content"),
        pytest.param({"content": "  \n\t "}, id="whitespace-content"),
        pytest.param({"content": "x" * 8_001}, id="content-over-limit"),
        pytest.param({"importance": 1.5}, id="importance-above-1"),
        pytest.param({"importance": -0.1}, id="importance-below-0"),
        pytest.param({"kind": "procedural"}, id="unknown-kind"),
        pytest.param({"namespace": "Bad NS"}, id="malformed-namespace"),
        pytest.param({"share_to": ["Bad NS"]}, id="malformed-share-namespace"),
        pytest.param({"tags": [f"t{i}" for i in range(33)]}, id="too-many-tags"),
        pytest.param({"tags": [""]}, id="empty-tag"),
        pytest.param({"ttl_seconds": 0}, id="ttl-zero"),
        pytest.param({"ttl_seconds": -5}, id="ttl-negative"),
        pytest.param({"session_id": "bad session"}, id="malformed-session"),
        pytest.param({"occurred_at": datetime(2026, 1, 1)}, id="naive-occurred-at"),
        pytest.param({"metadata": {"blob": "x" * 20_000}}, id="metadata-over-limit"),
    ],
)
async def test_bad_write_input_raises_invalid_argument_and_stores_nothing(
    service: MemoryService, store: EdgeVectorStore, bad: dict[str, Any], me: NamespaceScope, acme: str
) -> None:
    await write(service, me, "The user prefers tea over coffee")
    before = await everything(store, acme)
    request: dict[str, Any] = {"content": "The user lives in Lisbon", **bad}

    with pytest.raises(InvalidArgument):
        await write(service, me, **request)

    assert await everything(store, acme) == before


async def test_content_exactly_at_the_limit_is_accepted(service: MemoryService, me: NamespaceScope) -> None:
    outcome = await write(service, me, "x" * 8_000)

    assert outcome.status is WriteStatus.CREATED


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param({"top_k": 0}, id="top-k-zero"),
        pytest.param({"top_k": 10_000}, id="top-k-huge"),
        pytest.param({"query": " "}, id="blank-query"),
        pytest.param({"namespaces": []}, id="empty-namespace-list"),
        pytest.param({"namespaces": ["Bad NS"]}, id="malformed-namespace"),
        pytest.param({"kinds": ["procedural"]}, id="unknown-kind"),
        pytest.param({"token_budget": 0}, id="token-budget-zero"),
        pytest.param({"since": START, "until": START - timedelta(seconds=1)}, id="since-after-until"),
    ],
)
async def test_bad_recall_input_raises_invalid_argument(
    service: MemoryService, bad: dict[str, Any], me: NamespaceScope
) -> None:
    await write(service, me, "The user prefers tea over coffee")
    request: dict[str, Any] = {"query": "what does the user drink", **bad}

    with pytest.raises(InvalidArgument):
        await recall(service, me, **request)


# -- scopes ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("grants", "request_args"),
    [
        pytest.param({"write": ["user:1"]}, {"namespace": "user:2"}, id="namespace-not-granted"),
        pytest.param({"read": ["user:1"]}, {"namespace": "user:1"}, id="namespace-read-only"),
        pytest.param({"read": ["user:1"]}, {}, id="no-write-grant-at-all"),
        pytest.param({"write": ["user:1"]}, {"share_to": ["team:1"]}, id="share-to-not-granted"),
    ],
)
async def test_writing_to_a_namespace_not_granted_raises_namespace_forbidden_and_stores_nothing(
    service: MemoryService,
    store: EdgeVectorStore,
    acme: str,
    grants: dict[str, list[str]],
    request_args: dict[str, Any],
) -> None:
    with pytest.raises(NamespaceForbidden):
        await write(service, scope(acme, **grants), "The user lives in Lisbon", **request_args)

    assert await everything(store, acme) == []


@pytest.mark.parametrize("namespaces", [["user:2"], ["user:1", "user:2"]])
async def test_recall_naming_a_namespace_not_granted_raises_namespace_forbidden(
    service: MemoryService, namespaces: list[str], me: NamespaceScope
) -> None:
    await write(service, me, "The user lives in Lisbon")

    with pytest.raises(NamespaceForbidden):
        await recall(service, me, "where does the user live", namespaces=namespaces)


async def test_recall_without_namespaces_fans_out_over_every_readable_namespace(
    service: MemoryService, acme: str
) -> None:
    caller = scope(acme, read=["team:1"], write=["user:1"])
    await write(service, caller, "The user lives in Lisbon")
    await write(service, scope(acme, write=["team:1"]), "The team lives in Porto")
    await write(service, scope(acme, write=["user:3"]), "Someone else lives in Faro")

    assert set(await recalled(service, caller, "where does everyone live", top_k=10)) == {
        "The user lives in Lisbon",
        "The team lives in Porto",
    }
    assert len(await recalled(service, scope(acme, admin=True), "where does everyone live", top_k=10)) == 3


async def test_recall_never_returns_memories_of_another_tenant(
    service: MemoryService, me: NamespaceScope, other: NamespaceScope, globex: str
) -> None:
    await write(service, me, "The user lives in Lisbon")
    await write(service, other, "The user lives in Oslo")

    assert await recalled(service, me, "where does the user live") == ["The user lives in Lisbon"]
    assert await recalled(service, other, "where does the user live") == ["The user lives in Oslo"]
    assert await recalled(service, scope(globex, admin=True), "where does the user live") == ["The user lives in Oslo"]


async def test_share_to_writes_a_linked_copy_and_recall_returns_one_hit_per_origin(
    service: MemoryService, acme: str
) -> None:
    both = scope(acme, write=["user:1", "team:1"])

    outcome = await write(service, both, "The user lives in Lisbon", namespace="user:1", share_to=["team:1", "user:1"])

    team_page = await service.list(both, ListRequest(namespace="team:1"))
    [copy] = team_page.memories
    assert copy.origin_id == outcome.memory.id
    assert copy.id != outcome.memory.id
    assert copy.content == outcome.memory.content
    assert len(await listed(service, both, namespace="user:1")) == 1  # sharing to itself adds no copy
    [hit] = await recall(service, both, "where does the user live")
    assert outcome.memory.id in (hit.memory.id, hit.memory.origin_id)
    team_reader = scope(acme, read=["team:1"])
    assert [h.memory.id for h in await recall(service, team_reader, "where does the user live")] == [copy.id]


async def test_a_shared_copy_is_listed_in_creation_order(service: MemoryService, acme: str) -> None:
    both = scope(acme, write=["user:1", "team:1"])
    long_ago = datetime(2020, 1, 1, tzinfo=UTC)
    shared = await write(service, both, "The user lives in Lisbon", share_to=["team:1"], occurred_at=long_ago)
    later = await write(
        service, both, "The team lives in Porto", namespace="team:1", occurred_at=long_ago.replace(year=2021)
    )

    page = await service.list(both, ListRequest(namespace="team:1"))

    assert [m.origin_id or m.id for m in page.memories] == [shared.memory.id, later.memory.id]


# -- forget, restore, get --------------------------------------------------------------------------------------


async def test_forget_hides_a_memory_from_recall_and_list_and_restore_brings_it_back(
    service: MemoryService, clock: ManualClock, me: NamespaceScope
) -> None:
    memory = (await write(service, me, "The user lives in Lisbon")).memory
    clock.advance(60)

    forgotten = await service.forget(me, memory.id, reason="moved away")

    assert forgotten.deleted_at == clock.now()
    assert forgotten.delete_reason == "moved away"
    assert await recalled(service, me, "where does the user live") == []
    assert await listed(service, me) == []
    assert await listed(service, me, include_deleted=True) == [memory.id]
    assert (await service.get(me, memory.id)).is_deleted

    restored = await service.restore(me, memory.id)

    assert restored.deleted_at is None
    assert restored.delete_reason is None
    assert await recalled(service, me, "where does the user live") == ["The user lives in Lisbon"]
    assert await listed(service, me) == [memory.id]


async def test_forget_or_restore_with_a_read_only_scope_raises_namespace_forbidden(
    service: MemoryService, me: NamespaceScope, acme: str
) -> None:
    memory = (await write(service, me, "The user lives in Lisbon")).memory
    reader = scope(acme, read=["user:1"])

    with pytest.raises(NamespaceForbidden):
        await service.forget(reader, memory.id)
    with pytest.raises(NamespaceForbidden):
        await service.restore(reader, memory.id)

    assert not (await service.get(reader, memory.id)).is_deleted


async def test_forgetting_an_origin_forgets_its_shared_copies_and_restore_brings_them_back(
    service: MemoryService,
    acme: str,
) -> None:
    both = scope(acme, write=["user:1", "team:1"])
    origin = (await write(service, both, "The user lives in Lisbon", share_to=["team:1"])).memory

    await service.forget(both, origin.id)

    assert await recalled(service, both, "where does the user live") == []
    assert await listed(service, both, namespace="team:1") == []

    await service.restore(both, origin.id)

    assert len(await listed(service, both, namespace="team:1")) == 1
    assert len(await recalled(service, both, "where does the user live")) == 1


async def test_forgetting_a_shared_copy_leaves_its_origin(service: MemoryService, acme: str) -> None:
    both = scope(acme, write=["user:1", "team:1"])
    origin = (await write(service, both, "The user lives in Lisbon", share_to=["team:1"])).memory
    [copy] = (await service.list(both, ListRequest(namespace="team:1"))).memories

    await service.forget(both, copy.id)

    assert await listed(service, both, namespace="team:1") == []
    assert await listed(service, both, namespace="user:1") == [origin.id]


async def test_forgetting_an_origin_leaves_copies_in_namespaces_the_scope_cannot_write(
    service: MemoryService,
    me: NamespaceScope,
    acme: str,
) -> None:
    sharer = scope(acme, write=["user:1", "team:1"])
    origin = (await write(service, sharer, "The user lives in Lisbon", share_to=["team:1"])).memory

    await service.forget(me, origin.id)

    assert await listed(service, me) == []
    assert len(await listed(service, scope(acme, read=["team:1"]))) == 1


async def test_a_repeat_of_a_forgotten_memory_is_created_again_unless_deleted_repeats_are_skipped(
    service: MemoryService,
    me: NamespaceScope,
) -> None:
    forgotten = (await write(service, me, "The user lives in Lisbon")).memory
    await service.forget(me, forgotten.id)

    skipped = await write(service, me, "The user lives in Lisbon", skip_deleted_repeats=True)
    created = await write(service, me, "The user lives in Lisbon")

    assert skipped.status is WriteStatus.SKIPPED
    assert skipped.memory.id == forgotten.id
    assert created.status is WriteStatus.CREATED
    assert created.memory.id != forgotten.id


async def test_purge_hard_deletes_one_namespace_of_one_tenant_and_needs_an_admin_scope(
    service: MemoryService, store: EdgeVectorStore, other: NamespaceScope, acme: str, globex: str
) -> None:
    both = scope(acme, write=["user:1", "user:2"])
    await write(service, both, "The user lives in Lisbon", namespace="user:1")
    await write(service, both, "The user likes tea", namespace="user:1")
    kept = (await write(service, both, "The user likes jazz", namespace="user:2")).memory
    await write(service, other, "The user lives in Oslo", namespace="user:1")

    with pytest.raises(NamespaceForbidden):
        await service.purge(both, "user:1")
    with pytest.raises(InvalidArgument):
        await service.purge(scope(acme, admin=True), "Bad NS")

    assert await service.purge(scope(acme, admin=True), "user:1") == 2
    assert [m.id for m in await everything(store, acme)] == [kept.id]
    assert len(await everything(store, globex)) == 1


@pytest.mark.parametrize("operation", ["get", "forget", "restore"])
async def test_get_forget_or_restore_of_another_tenants_memory_raises_not_found(
    service: MemoryService, operation: str, me: NamespaceScope, other: NamespaceScope
) -> None:
    memory = (await write(service, me, "The user lives in Lisbon")).memory

    with pytest.raises(NotFound):
        await getattr(service, operation)(other, memory.id)

    assert not (await service.get(me, memory.id)).is_deleted


@pytest.mark.parametrize("bad_id", ["", "not-an-id", "x" * 100, "42"])
async def test_get_with_a_malformed_id_raises_invalid_argument(
    service: MemoryService, bad_id: str, me: NamespaceScope
) -> None:
    with pytest.raises(InvalidArgument):
        await service.get(me, bad_id)


async def test_get_accepts_an_id_in_non_canonical_case(service: MemoryService, me: NamespaceScope) -> None:
    memory = (await write(service, me, "The user lives in Lisbon")).memory

    assert (await service.get(me, memory.id.upper())).id == memory.id


# -- expiry, recency, access counts, budget --------------------------------------------------------------------


async def test_a_memory_with_a_ttl_is_no_longer_recalled_once_the_clock_passes_it(
    service: MemoryService, clock: ManualClock, me: NamespaceScope
) -> None:
    outcome = await write(service, me, "The user has a dentist appointment at noon", ttl_seconds=3600)
    assert outcome.memory.expires_at == START + timedelta(hours=1)

    clock.advance(3599)
    assert await recalled(service, me, "dentist appointment") == ["The user has a dentist appointment at noon"]

    clock.advance(1)
    assert await recalled(service, me, "dentist appointment") == []


async def test_of_two_equally_similar_memories_the_newer_scores_higher(service: MemoryService, acme: str) -> None:
    both = scope(acme, write=["user:1", "user:2"])
    content = "The user lives in Lisbon"
    old = await write(service, both, content, namespace="user:1", occurred_at=START - timedelta(hours=48))
    new = await write(service, both, content, namespace="user:2", occurred_at=START - timedelta(hours=1))

    hits = await recall(service, both, "where does the user live")

    assert [h.memory.id for h in hits] == [new.memory.id, old.memory.id]
    assert hits[0].scores.similarity == pytest.approx(hits[1].scores.similarity)
    assert hits[0].scores.recency > hits[1].scores.recency
    assert hits[1].scores.recency == pytest.approx(math.exp(-0.01 * 48))


async def test_recall_bumps_the_access_count_of_the_returned_memories(
    service: MemoryService, clock: ManualClock, me: NamespaceScope
) -> None:
    memory = (await write(service, me, "The user lives in Lisbon")).memory
    clock.advance(30)

    await recall(service, me, "where does the user live")
    await service.drain()

    bumped = await service.get(me, memory.id)
    assert bumped.access_count == 1
    assert bumped.last_accessed_at == clock.now()


async def test_access_counts_bumped_in_an_attached_task_group_are_applied_after_drain(
    service: MemoryService,
    me: NamespaceScope,
) -> None:
    await write(service, me, "The user lives in Lisbon")

    async with anyio.create_task_group() as task_group:
        service.attach_task_group(task_group)
        await recall(service, me, "where does the user live")
        await recall(service, me, "where does the user live")
        await service.drain()
        service.attach_task_group(None)

    [hit] = await recall(service, me, "where does the user live")
    assert hit.memory.access_count == 2
    assert hit.scores.access_frequency > 0


async def test_a_token_budget_stops_the_recall_once_the_hits_estimated_tokens_reach_it(
    service: MemoryService, me: NamespaceScope
) -> None:
    contents = [f"The user visited city number {n} during the summer holidays" for n in range(12)]
    for content in contents:
        await write(service, me, content)
    cost = estimate_tokens(contents[0])

    unlimited = await recall(service, me, "which cities did the user visit", top_k=12)
    small = await recall(service, me, "which cities did the user visit", token_budget=2 * cost)
    larger = await recall(service, me, "which cities did the user visit", token_budget=10 * cost)
    just_over = await recall(service, me, "which cities did the user visit", token_budget=10 * cost + 1)

    assert len(unlimited) == 12
    assert [h.memory.id for h in small] == [h.memory.id for h in unlimited[:8]]  # the default top_k at least
    assert [h.memory.id for h in larger] == [h.memory.id for h in unlimited[:10]]
    assert len(just_over) == 11  # the hit that reaches the budget is kept: the gateway cuts the text exactly


async def test_a_token_budget_without_top_k_recalls_as_many_as_it_can_hold(
    service: MemoryService, me: NamespaceScope
) -> None:
    for n in range(20):
        await write(service, me, f"The user visited city number {n} during the summer holidays")

    assert len(await recall(service, me, "which cities did the user visit")) == 8  # the default top_k
    assert len(await recall(service, me, "which cities did the user visit", token_budget=1000)) == 20
    assert len(await recall(service, me, "which cities did the user visit", token_budget=1000, top_k=5)) == 5


async def test_top_k_caps_the_number_of_hits(service: MemoryService, me: NamespaceScope) -> None:
    for content in DISTRACTORS:
        await write(service, me, content)

    assert len(await recall(service, me, "what about the user", top_k=3)) == 3


async def test_recall_filters_by_kind_tags_and_session(service: MemoryService, me: NamespaceScope) -> None:
    await write(service, me, "The user likes tea", kind="semantic", tags=["drinks"])
    await write(service, me, "The user said they like coffee", tags=["drinks"], session_id="s-1")
    await write(service, me, "The user likes jazz", tags=["music"], session_id="s-1")

    assert await recalled(service, me, "what does the user like", kinds=["semantic"]) == ["The user likes tea"]
    assert set(await recalled(service, me, "what does the user like", tags=["drinks"])) == {
        "The user likes tea",
        "The user said they like coffee",
    }
    assert set(await recalled(service, me, "what does the user like", session_id="s-1")) == {
        "The user said they like coffee",
        "The user likes jazz",
    }


# -- list ------------------------------------------------------------------------------------------------------


async def test_list_cursor_pages_cover_every_memory_exactly_once_in_creation_order(
    service: MemoryService, clock: ManualClock, me: NamespaceScope
) -> None:
    written = []
    for n in range(12):
        written.append((await write(service, me, f"Fact number {n} about the user")).memory.id)
        clock.advance(1)

    seen: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        page = await service.list(me, ListRequest(limit=5, cursor=cursor))
        seen.extend(m.id for m in page.memories)
        pages += 1
        if page.next_cursor is None:
            break
        cursor = page.next_cursor

    assert pages == 3
    assert seen == written


@pytest.mark.parametrize(
    "cursor",
    [
        "not a cursor!",
        "",
        base64.urlsafe_b64encode(b"v1:not-a-uuid").decode(),
        base64.urlsafe_b64encode(b"v2:018bcfe5-687b-716f-a316-5f4176550e29").decode(),
        "%%%%",
    ],
)
async def test_an_invalid_cursor_raises_invalid_argument(
    service: MemoryService, cursor: str, me: NamespaceScope
) -> None:
    with pytest.raises(InvalidArgument):
        await service.list(me, ListRequest(cursor=cursor))


async def test_a_cursor_round_trips_through_encode(
    service: MemoryService, clock: ManualClock, me: NamespaceScope
) -> None:
    first = (await write(service, me, "The user lives in Lisbon")).memory
    clock.advance(1)
    second = (await write(service, me, "The user likes tea")).memory

    page = await service.list(me, ListRequest(limit=1))

    assert [m.id for m in page.memories] == [first.id]
    assert page.next_cursor == encode_cursor(second.id)


async def test_list_filters_by_namespace_and_kind_within_the_scope(
    service: MemoryService, me: NamespaceScope, acme: str
) -> None:
    both = scope(acme, write=["user:1", "user:2"])
    tea = (await write(service, both, "The user likes tea", kind="semantic", namespace="user:1")).memory
    await write(service, both, "The user said they like tea", namespace="user:1")
    await write(service, both, "The user likes jazz", kind="semantic", namespace="user:2")

    assert await listed(service, both, namespace="user:1", kind="semantic") == [tea.id]
    assert len(await listed(service, both, kind=MemoryKind.SEMANTIC.value)) == 2
    with pytest.raises(NamespaceForbidden):
        await listed(service, me, namespace="user:2")
    with pytest.raises(InvalidArgument):
        await listed(service, both, limit=0)


async def test_a_forget_reason_with_a_nul_byte_is_refused_and_the_memory_stays(
    service: MemoryService, acme: str
) -> None:
    me = scope(acme, write=["user:1"])
    memory = (await service.write(me, WriteRequest(content="The user lives in Lisbon", subject="a"))).memory

    with pytest.raises(InvalidArgument, match="reason"):
        await service.forget(me, memory.id, "bad\x00reason")

    assert (await service.get(me, memory.id)).deleted_at is None

"""The `VectorStore` contract, run against every implementation: the embedded store (qdrant-edge on a temp
directory), the Qdrant server store on qdrant-client's local mode, and, when `HINDSIGHT_TEST_QDRANT_URL` is set,
the Qdrant server store against that real server.

Vectors are hand-made and 8-dimensional; no embedder is involved. Tests share one store per backend and keep
apart by tenant (`acme` and `globex` are tenant ids unique to each test); lifecycle tests open a `Location` of
their own. The last section covers what only the server store has: collection naming, creation and errors.
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import socket
import uuid
from collections.abc import AsyncIterator
from dataclasses import fields, replace
from datetime import timedelta
from pathlib import Path

import pytest
from qdrant_client import AsyncQdrantClient
from qdrant_client import models as qm

from memory.errors import BackendUnavailable, NamespaceForbidden, StoreConfigMismatch
from memory.models import CONSOLIDATED, EXTRACTED, Memory, MemoryKind, Source
from memory.ports import ListQuery, NearestQuery, RecallFilter, ScoredMemory, SparseVector, VectorStore
from memory.scope import NamespaceScope
from memory.stores.common import IDF_NAMESPACE_LIMIT
from memory.stores.edge import EdgeVectorStore
from memory.stores.qdrant_collection import collection_name
from memory.stores.qdrant_server import DENSE, SPARSE, QdrantServerStore
from memory.stores.switchable import SwitchableStore
from tests.memory.conftest import (
    START,
    assert_get_is_scoped,
    assert_pages_of_three,
    everything,
    make_memory,
    outsiders,
    scope,
)

pytestmark = [
    pytest.mark.anyio,
    # qdrant-client's local mode warns that payload indexes do nothing there; the server store creates them anyway
    pytest.mark.filterwarnings("ignore:Payload indexes have no effect:UserWarning"),
]

MODEL = "contract-model"
CACHE_POINTS = 64  # the cached backend's search cache: fewer points than some tests write
DIM = 8
NOW = START + timedelta(days=1)
QDRANT_URL = os.environ.get("HINDSIGHT_TEST_QDRANT_URL")
PREFIX = f"contract{uuid.uuid4().hex[:8]}"  # collections of the server-only tests
NEEDS_SERVER = pytest.mark.skipif(
    not QDRANT_URL, reason="set HINDSIGHT_TEST_QDRANT_URL (e.g. http://localhost:6333) to run against a Qdrant server"
)
SERVER_BACKENDS = [
    pytest.param("qdrant-local", id="qdrant-local"),
    pytest.param("qdrant-url", id="qdrant-url", marks=NEEDS_SERVER),
]
# "switchable": the embedded store behind the proxy every runtime holds (memory.stores.switchable), with a search
# cache as the runtime's (memory.stores.point_cache); "edge" reads every payload from the engine
BACKENDS = [pytest.param("edge", id="edge"), pytest.param("switchable", id="switchable"), *SERVER_BACKENDS]


def new_client(backend: str) -> AsyncQdrantClient:
    if backend == "qdrant-local":
        return AsyncQdrantClient(location=":memory:")
    return AsyncQdrantClient(url=QDRANT_URL, timeout=5, check_compatibility=False)


class Location:
    """Somewhere a store lives and can be opened again: a directory (edge) or a collection (server)."""

    def __init__(self, backend: str, tmp: Path) -> None:
        self.backend = backend
        self.path = tmp / "store"
        self.collection = f"contract_{uuid.uuid4().hex[:12]}"
        self.client: AsyncQdrantClient | None = None
        self.opened: list[VectorStore] = []

    async def open(self, model_id: str = MODEL, dimension: int = DIM) -> VectorStore:
        store: VectorStore
        if self.backend == "edge":
            store = EdgeVectorStore.open(self.path, model_id=model_id, dimension=dimension)
        elif self.backend == "switchable":
            edge = EdgeVectorStore.open(self.path, model_id=model_id, dimension=dimension, cache_points=CACHE_POINTS)
            store = SwitchableStore(edge, model_id, dimension)
        else:
            self.client = self.client or new_client(self.backend)
            store = await QdrantServerStore.open(
                self.client, collection=self.collection, model_id=model_id, dimension=dimension
            )
        self.opened.append(store)
        return store

    async def set_aside(self, store: VectorStore) -> None:
        """Let the location be opened again: an embedded store holds its directory's lock until closed, while a
        server store must stay open (its client is the connection, and for local mode the data itself)."""
        if self.backend in ("edge", "switchable"):
            await store.close()

    async def discard(self) -> None:
        for store in self.opened:
            await store.close()
        if self.backend == "qdrant-url":
            cleaner = new_client(self.backend)
            await cleaner.delete_collection(self.collection)
            await cleaner.close()


@pytest.fixture(scope="module", params=BACKENDS)
async def shared_location(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Location]:
    location = Location(request.param, tmp_path_factory.mktemp("contract"))
    await location.open()
    yield location
    await location.discard()


@pytest.fixture
def store(shared_location: Location) -> VectorStore:
    return shared_location.opened[0]


@pytest.fixture
async def location(shared_location: Location, tmp_path: Path) -> AsyncIterator[Location]:
    """A location of this test alone, on the same backend as `store`."""
    own = Location(shared_location.backend, tmp_path)
    yield own
    await own.discard()


@pytest.fixture
def backend(shared_location: Location) -> str:
    return shared_location.backend


def vec(axis: int | None = None) -> list[float]:
    """A hand-made vector: a little of every axis, and much of `axis` if given."""
    vector = [0.1] * DIM
    if axis is not None:
        vector[axis] = 1.0
    return vector


async def put(store: VectorStore, who: NamespaceScope, *memories: Memory, axis: int | None = None) -> None:
    await store.upsert(who, [(m, vec(axis)) for m in memories])


async def found(
    store: VectorStore, reader: NamespaceScope, namespaces: tuple[str, ...], flt: RecallFilter | None = None
) -> set[str]:
    hits = await store.search(reader, namespaces, vec(), 50, flt or RecallFilter(now=NOW))
    return {hit.memory.content for hit in hits}


@pytest.fixture
async def tea(store: VectorStore, writer: NamespaceScope, acme: str) -> Memory:
    """A live memory of `user:1` of the test's `acme`, "The user likes tea", stored by `writer`."""
    memory = make_memory("The user likes tea", tenant=acme)
    await put(store, writer, memory)
    return memory


async def ids_listed(store: VectorStore, who: NamespaceScope, query: ListQuery) -> list[str]:
    page, _ = await store.list(who, query)
    return [m.id for m in page]


# -- round trip and get ----------------------------------------------------------------------------------------


async def test_upsert_then_get_round_trips_every_field_of_a_memory(
    store: VectorStore, writer: NamespaceScope, acme: str
) -> None:
    at = START + timedelta(microseconds=123_456)
    memory = make_memory(
        "The user prefers short answers",
        tenant=acme,
        at=at,
        kind=MemoryKind.SEMANTIC,
        importance=0.8,
        updated_at=at + timedelta(minutes=5, microseconds=1),
        last_accessed_at=at + timedelta(hours=1, microseconds=7),
        access_count=3,
        expires_at=at + timedelta(days=30),
        deleted_at=at + timedelta(hours=2),
        delete_reason="user asked to forget",
        supersedes=["018bcfe5-687b-716f-a316-5f4176550e29"],
        superseded_by="018bcfe5-77a0-7357-98cf-d59b421f7726",
        origin_id="018bcfe5-8358-70da-9617-3a35a38c5e70",
        session_id="sess-42",
        source=Source(subject="agent-7", request_id="req-1", tool="write_memory"),
        tags=["prefs", "style"],
        metadata={"n": 1, "f": 1.5, "nested": {"list": [1, "x", None, True]}, "unicode": "好的"},
        attributes=["user|pref:answer"],
        follows="018bcfe5-6000-7000-8000-000000000001",
        archived_at=at + timedelta(days=1, microseconds=3),
        archive_reason="idle",
        stored_at=at + timedelta(hours=2, microseconds=5),
    )
    # every field is set to a non-default value, so the comparison below checks them all
    assert all(getattr(memory, f.name) not in (None, [], {}, 0, "") for f in fields(Memory))

    await put(store, writer, memory)

    assert await store.get(writer, memory.id) == memory


async def test_get_returns_none_to_another_tenant_and_to_a_scope_without_the_namespace(
    store: VectorStore, writer: NamespaceScope, acme: str, globex: str
) -> None:
    memory = make_memory("The user lives in Lisbon", tenant=acme)
    await put(store, writer, memory)

    await assert_get_is_scoped(store, memory, acme, globex)


async def test_get_many_returns_the_readable_memories_of_the_ids_deleted_or_not_and_none_of_another_tenant(
    store: VectorStore, writer: NamespaceScope, acme: str, globex: str
) -> None:
    kept = make_memory("The user lives in Lisbon", tenant=acme)
    deleted = make_memory("The user lived in Porto", tenant=acme, deleted_at=START)
    elsewhere = make_memory("The team meets on Mondays", tenant=acme, namespace="team:1")
    theirs = make_memory("The user lives in Oslo", tenant=globex)
    await put(store, writer, kept, deleted, elsewhere)
    await put(store, scope(globex, write=["user:1"]), theirs)
    missing = make_memory("never stored", tenant=acme).id
    ids = [kept.id, deleted.id, elsewhere.id, theirs.id, missing, kept.id]

    assert sorted(m.id for m in await store.get_many(writer, ids)) == sorted([kept.id, deleted.id, elsewhere.id])
    assert await store.get_many(scope(acme, read=["user:1"]), ids) in ([kept, deleted], [deleted, kept])
    assert await store.get_many(scope(globex, admin=True), ids) == [theirs]
    assert await store.get_many(writer, []) == []


async def test_update_replaces_the_stored_fields_and_keeps_the_vector(
    store: VectorStore, writer: NamespaceScope, acme: str
) -> None:
    memory = make_memory("The user likes tea", tenant=acme)
    await put(store, writer, memory, axis=3)
    changed = replace(memory, content="The user likes green tea", tags=["drinks"], importance=0.9)

    await store.update(writer, changed)

    assert await store.get(writer, memory.id) == changed
    [hit] = await store.search(writer, ("user:1",), vec(3), 1, RecallFilter(now=NOW))
    assert hit.memory == changed
    assert hit.similarity == pytest.approx(1.0, abs=1e-4)


async def test_update_to_deleted_removes_the_memory_from_search_but_not_from_get(
    store: VectorStore, writer: NamespaceScope, tea: Memory
) -> None:
    deleted = replace(tea, deleted_at=NOW, delete_reason="asked to forget")

    await store.update(writer, deleted)

    assert await found(store, writer, ("user:1",)) == set()
    assert await store.get(writer, tea.id) == deleted


async def test_an_update_back_to_live_clears_the_deletion_it_replaces(
    store: VectorStore, writer: NamespaceScope, tea: Memory
) -> None:
    await store.update(writer, replace(tea, deleted_at=NOW, delete_reason="asked to forget"))

    await store.update(writer, tea)  # restored: no deletion time or reason left stored

    assert await store.get(writer, tea.id) == tea
    assert await found(store, writer, ("user:1",)) == {tea.content}
    assert await store.find_by_hash(writer, "user:1", tea.content_hash) == tea


async def test_an_update_that_clears_fields_leaves_none_of_their_old_values(
    store: VectorStore, writer: NamespaceScope, acme: str
) -> None:
    full = make_memory(
        "The user likes tea",
        tenant=acme,
        tags=["drinks"],
        metadata={"speaker": "Ana"},
        session_id="s-1",
        attributes=["user|pref:tea"],
        expires_at=NOW + timedelta(days=9),
        last_accessed_at=NOW,
        source=Source(subject="agent-1", request_id="r-1", tool="remember"),
    )
    await put(store, writer, full)
    cleared = replace(
        full,
        tags=[],
        metadata={},
        session_id=None,
        attributes=[],
        expires_at=None,
        last_accessed_at=None,
        source=Source(subject="agent-1"),
    )

    await store.update(writer, cleared)

    assert await store.get(writer, full.id) == cleared
    assert await found(store, writer, ("user:1",), RecallFilter(now=NOW, tags=("drinks",))) == set()
    assert await found(store, writer, ("user:1",), RecallFilter(now=NOW, session_id="s-1")) == set()
    assert await found(store, writer, ("user:1",), RecallFilter(now=NOW + timedelta(days=10))) == {full.content}


async def test_unarchiving_a_memory_clears_its_archive_time_and_reason(
    store: VectorStore, writer: NamespaceScope, acme: str
) -> None:
    memory = make_memory("The user once rented a canoe", tenant=acme)
    await put(store, writer, memory)
    await store.update(writer, replace(memory, archived_at=NOW, archive_reason="idle"))

    await put(store, writer, memory)  # how `MemoryService.restore` brings it back: with its vectors again

    assert await store.get(writer, memory.id) == memory
    assert await ids_listed(store, writer, ListQuery(("user:1",), None, False, 10, None)) == [memory.id]


# -- search ----------------------------------------------------------------------------------------------------


async def test_search_ranks_the_nearest_memory_first_with_its_cosine_similarity(
    store: VectorStore, writer: NamespaceScope, acme: str
) -> None:
    near, middle, far = (make_memory(f"fact {i}", tenant=acme) for i in range(3))
    await store.upsert(writer, [(near, vec(1)), (middle, [0.1, 0.6, 0.6, 0.1, 0.1, 0.1, 0.1, 0.1]), (far, vec(5))])

    hits = await store.search(writer, ("user:1",), vec(1), 10, RecallFilter(now=NOW))

    assert [h.memory.id for h in hits] == [near.id, middle.id, far.id]
    assert hits[0].similarity == pytest.approx(1.0, abs=1e-4)
    assert hits[0].similarity > hits[1].similarity > hits[2].similarity > 0


async def test_search_returns_at_most_limit_hits(store: VectorStore, writer: NamespaceScope, acme: str) -> None:
    await put(store, writer, *(make_memory(f"fact {i}", tenant=acme) for i in range(5)))

    assert len(await store.search(writer, ("user:1",), vec(), 3, RecallFilter(now=NOW))) == 3


async def test_search_never_returns_memories_of_another_tenant(
    store: VectorStore, writer: NamespaceScope, acme: str, globex: str
) -> None:
    other = scope(globex, write=["user:1"])
    await put(store, writer, make_memory("The user likes green tea", tenant=acme))
    await put(store, other, make_memory("The user likes black coffee", tenant=globex))

    assert await found(store, writer, ("user:1",)) == {"The user likes green tea"}
    assert await found(store, other, ("user:1",)) == {"The user likes black coffee"}
    assert await found(store, scope(acme, admin=True), ()) == {"The user likes green tea"}
    assert await found(store, scope(globex, admin=True), ()) == {"The user likes black coffee"}


async def test_search_fans_out_over_exactly_the_requested_namespaces(
    store: VectorStore, writer: NamespaceScope, acme: str
) -> None:
    await put(
        store,
        writer,
        make_memory("The user likes tea", tenant=acme, namespace="user:1"),
        make_memory("The user likes jazz", tenant=acme, namespace="user:2"),
        make_memory("The team likes pizza", tenant=acme, namespace="team:1"),
    )

    assert await found(store, writer, ("user:1", "user:2")) == {"The user likes tea", "The user likes jazz"}
    assert await found(store, writer, ("team:1",)) == {"The team likes pizza"}
    assert await found(store, writer, writer.read_targets(None)) == {
        "The user likes tea",
        "The user likes jazz",
        "The team likes pizza",
    }
    assert len(await found(store, scope(acme, admin=True), ())) == 3


async def test_search_refuses_namespaces_outside_the_scope_and_unrestricted_queries_from_non_admins(
    store: VectorStore, writer: NamespaceScope, acme: str
) -> None:
    reader = scope(acme, read=["user:1"])
    await put(store, writer, make_memory("The user likes tea", tenant=acme, namespace="user:2"))

    with pytest.raises(NamespaceForbidden):
        await found(store, reader, ("user:1", "user:2"))
    with pytest.raises(NamespaceForbidden):
        await found(store, reader, ())


async def test_search_filters_by_kind(store: VectorStore, writer: NamespaceScope, acme: str) -> None:
    await put(
        store,
        writer,
        make_memory("The user said they like tea", tenant=acme),
        make_memory("The user likes tea", tenant=acme, kind=MemoryKind.SEMANTIC),
    )

    semantic = RecallFilter(now=NOW, kinds=(MemoryKind.SEMANTIC,))
    episodic = RecallFilter(now=NOW, kinds=(MemoryKind.EPISODIC,))
    both = RecallFilter(now=NOW, kinds=(MemoryKind.EPISODIC, MemoryKind.SEMANTIC))
    assert await found(store, writer, ("user:1",), semantic) == {"The user likes tea"}
    assert await found(store, writer, ("user:1",), episodic) == {"The user said they like tea"}
    assert len(await found(store, writer, ("user:1",), both)) == 2


async def test_search_filters_by_tags_matching_any_of_them(
    store: VectorStore, writer: NamespaceScope, acme: str
) -> None:
    await put(
        store,
        writer,
        make_memory("The user likes tea", tenant=acme, tags=["drinks", "prefs"]),
        make_memory("The user likes jazz", tenant=acme, tags=["music"]),
        make_memory("The user likes chess", tenant=acme),
    )

    drinks = RecallFilter(now=NOW, tags=("drinks",))
    either = RecallFilter(now=NOW, tags=("music", "prefs"))
    assert await found(store, writer, ("user:1",), drinks) == {"The user likes tea"}
    assert await found(store, writer, ("user:1",), either) == {"The user likes tea", "The user likes jazz"}


async def test_search_filters_by_session_id(store: VectorStore, writer: NamespaceScope, acme: str) -> None:
    await put(
        store,
        writer,
        make_memory("The user likes tea", tenant=acme, session_id="s-1"),
        make_memory("The user likes jazz", tenant=acme, session_id="s-2"),
        make_memory("The user likes chess", tenant=acme),
    )

    assert await found(store, writer, ("user:1",), RecallFilter(now=NOW, session_id="s-1")) == {"The user likes tea"}


async def test_search_filters_by_creation_time_with_inclusive_bounds(
    store: VectorStore, writer: NamespaceScope, acme: str
) -> None:
    hour = timedelta(hours=1)
    await put(
        store,
        writer,
        make_memory("The user likes tea", tenant=acme, at=START),
        make_memory("The user likes jazz", tenant=acme, at=START + hour),
        make_memory("The user likes chess", tenant=acme, at=START + 2 * hour),
    )

    since = RecallFilter(now=NOW, since=START + hour)
    until = RecallFilter(now=NOW, until=START + hour)
    window = RecallFilter(now=NOW, since=START + hour, until=START + hour)
    assert await found(store, writer, ("user:1",), since) == {"The user likes jazz", "The user likes chess"}
    assert await found(store, writer, ("user:1",), until) == {"The user likes tea", "The user likes jazz"}
    assert await found(store, writer, ("user:1",), window) == {"The user likes jazz"}


async def test_search_excludes_deleted_and_superseded_memories(
    store: VectorStore, writer: NamespaceScope, acme: str
) -> None:
    live = make_memory("The user likes tea", tenant=acme)
    await put(
        store,
        writer,
        live,
        make_memory("The user likes jazz", tenant=acme, deleted_at=START),
        make_memory("The user likes chess", tenant=acme, superseded_by=live.id),
    )

    assert await found(store, writer, ("user:1",)) == {"The user likes tea"}


async def test_search_excludes_memories_whose_expiry_is_now_or_past(
    store: VectorStore, writer: NamespaceScope, acme: str
) -> None:
    second = timedelta(seconds=1)
    await put(
        store,
        writer,
        make_memory("The user likes tea", tenant=acme, expires_at=NOW - second),
        make_memory("The user likes jazz", tenant=acme, expires_at=NOW),
        make_memory("The user likes chess", tenant=acme, expires_at=NOW + second),
        make_memory("The user likes hiking", tenant=acme),
    )

    assert await found(store, writer, ("user:1",)) == {"The user likes chess", "The user likes hiking"}


# -- keyword search, supersession and attribute filters --------------------------------------------------------


def terms(*indices: int) -> SparseVector:
    return SparseVector(tuple(sorted(indices)), tuple(1.0 for _ in indices))


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


async def test_a_keyword_search_ranks_first_a_match_far_by_meaning_with_its_true_cosine_and_reads_at_least_50_deep(
    store: VectorStore, writer: NamespaceScope, acme: str
) -> None:
    near = make_memory("near by meaning", tenant=acme)
    keyword = make_memory("the rare keyword", tenant=acme)
    others = [make_memory(f"filler {i}", tenant=acme) for i in range(6)]
    await store.upsert(
        writer,
        [
            (near, vec(1), terms(1, 2)),
            (keyword, vec(5), terms(42, 2)),
            *((m, [0.1, 0.9, 0.1 * i, 0.1, 0.1, 0.1, 0.1, 0.1], terms(2)) for i, m in enumerate(others)),
        ],
    )

    dense = await store.search(writer, ("user:1",), vec(1), 3, RecallFilter(now=NOW))
    by_keyword = await store.search(writer, ("user:1",), vec(1), 3, RecallFilter(now=NOW), sparse=terms(42, 2))

    assert keyword.id not in [h.memory.id for h in dense]
    assert by_keyword[0].memory.id == keyword.id  # both query terms, one of them rare
    assert by_keyword[0].similarity == pytest.approx(cosine(vec(1), vec(5)), abs=1e-4)
    assert by_keyword[0].keyword > by_keyword[1].keyword > 0  # its BM25 score for the rare term
    by_id = {h.memory.id: h for h in by_keyword}
    assert by_id[near.id].similarity == pytest.approx(1.0, abs=1e-4) and by_id[near.id].keyword > 0
    assert set(by_id) == {near.id, keyword.id, *(m.id for m in others)}  # a limit of 3 still reads 50 deep
    assert len(by_id) == len(by_keyword)  # one entry per memory


async def test_a_search_by_meaning_returns_each_hits_keyword_term_ids_and_none_for_a_memory_without_them(
    store: VectorStore, writer: NamespaceScope, acme: str
) -> None:
    worded, wordless = make_memory("worded", tenant=acme), make_memory("wordless", tenant=acme)
    await store.upsert(writer, [(worded, vec(1), terms(7, 8))])
    await store.upsert(writer, [(wordless, vec(2))])

    hits = await store.search(writer, ("user:1",), vec(1), 5, RecallFilter(now=NOW))

    assert {h.memory.id: sorted(h.terms) for h in hits} == {worded.id: [7, 8], wordless.id: []}
    assert all(h.keyword == 0 for h in hits)


async def test_a_keyword_search_gives_a_match_close_by_meaning_both_scores_and_leaves_out_a_memory_without_the_term(
    store: VectorStore, writer: NamespaceScope, acme: str
) -> None:
    both = make_memory("close and matching", tenant=acme)
    other = make_memory("close only", tenant=acme)
    await store.upsert(writer, [(both, vec(1), terms(7, 8)), (other, vec(1), terms(9))])

    hits = await store.search(writer, ("user:1",), vec(1), 5, RecallFilter(now=NOW), sparse=terms(7))

    assert [h.memory.id for h in hits] == [both.id]
    assert hits[0].similarity == pytest.approx(1.0, abs=1e-4) and hits[0].keyword > 0
    assert sorted(hits[0].terms) == [7, 8]


async def test_latest_in_session_is_the_newest_memory_of_that_session_and_namespace_only(
    store: VectorStore, writer: NamespaceScope, acme: str
) -> None:
    first = make_memory("first turn", tenant=acme, at=START, session_id="s-1")
    second = make_memory("second turn", tenant=acme, at=START + timedelta(seconds=1), session_id="s-1")
    other_session = make_memory("elsewhere", tenant=acme, at=START + timedelta(seconds=2), session_id="s-2")
    other_namespace = make_memory(
        "shared", tenant=acme, namespace="team:1", at=START + timedelta(seconds=3), session_id="s-1"
    )
    await store.upsert(writer, [(m, vec(i + 1)) for i, m in enumerate((second, first, other_session, other_namespace))])

    latest = await store.latest_in_session(writer, "user:1", "s-1")

    assert latest is not None and latest.id == second.id
    assert await store.latest_in_session(writer, "user:1", "s-9") is None


async def test_latest_in_session_skips_facts_extracted_from_events(
    store: VectorStore, writer: NamespaceScope, acme: str
) -> None:
    turn = make_memory("Caroline: I went to the support group", tenant=acme, at=START, session_id="s-1")
    fact = make_memory(
        "Caroline went to the support group",
        tenant=acme,
        at=START + timedelta(seconds=1),
        session_id="s-1",
        source=Source(subject="agent-1", tool=EXTRACTED),
    )
    await store.upsert(writer, [(turn, vec(1)), (fact, vec(2))])

    latest = await store.latest_in_session(writer, "user:1", "s-1")

    assert latest is not None and latest.id == turn.id


async def test_a_keyword_search_keeps_every_filter_on_its_candidates(
    store: VectorStore, writer: NamespaceScope, acme: str, globex: str
) -> None:
    live = make_memory("live", tenant=acme)
    hidden = [
        make_memory("deleted", tenant=acme, deleted_at=START),
        make_memory("superseded", tenant=acme, superseded_by=live.id),
        make_memory("expired", tenant=acme, expires_at=NOW),
        make_memory("other namespace", tenant=acme, namespace="user:2"),
    ]
    await store.upsert(writer, [(m, vec(1), terms(7)) for m in (live, *hidden)])
    await store.upsert(scope(globex, write=["user:1"]), [(make_memory("theirs", tenant=globex), vec(1), terms(7))])

    hits = await store.search(writer, ("user:1",), vec(3), 10, RecallFilter(now=NOW), sparse=terms(7))

    assert [h.memory.content for h in hits] == ["live"]


async def test_a_memory_stored_without_a_keyword_vector_is_found_by_meaning_and_not_by_keywords(
    store: VectorStore, writer: NamespaceScope, acme: str
) -> None:
    memory = make_memory("dense only", tenant=acme)
    worded = make_memory("with keywords", tenant=acme)
    await put(store, writer, memory, axis=2)
    await store.upsert(writer, [(worded, vec(5), terms(99))])

    by_meaning = await store.search(writer, ("user:1",), vec(2), 5, RecallFilter(now=NOW))
    by_keyword = await store.search(writer, ("user:1",), vec(2), 5, RecallFilter(now=NOW), sparse=terms(99))

    assert (by_meaning[0].memory, by_meaning[0].similarity) == (memory, pytest.approx(1.0, abs=1e-4))
    assert by_meaning[0].terms == ()
    assert [h.memory.id for h in by_keyword] == [worded.id]


async def test_upserting_an_existing_id_replaces_its_content_and_both_vectors(
    store: VectorStore, writer: NamespaceScope, acme: str
) -> None:
    memory = make_memory("The user likes tea", tenant=acme)
    await store.upsert(writer, [(memory, vec(1), terms(1))])
    changed = replace(memory, content="The user likes green tea")

    await store.upsert(writer, [(changed, vec(4), terms(4))])

    [hit] = await store.search(writer, ("user:1",), vec(4), 5, RecallFilter(now=NOW))
    assert (hit.memory, hit.similarity) == (changed, pytest.approx(1.0, abs=1e-4))
    [by_keyword] = await store.search(writer, ("user:1",), vec(6), 5, RecallFilter(now=NOW), sparse=terms(4))
    assert (by_keyword.memory, by_keyword.similarity) == (changed, pytest.approx(cosine(vec(6), vec(4)), abs=1e-4))
    assert by_keyword.terms == (4,)
    assert await store.search(writer, ("user:1",), vec(6), 5, RecallFilter(now=NOW), sparse=terms(1)) == []
    assert len(await everything(store, acme)) == 1


async def test_include_superseded_returns_superseded_memories_but_never_deleted_or_expired_ones(
    store: VectorStore, writer: NamespaceScope, acme: str
) -> None:
    live = make_memory("The user lives in Paris", tenant=acme)
    await put(
        store,
        writer,
        live,
        make_memory("The user lives in Berlin", tenant=acme, superseded_by=live.id),
        make_memory("The user lives in Rome", tenant=acme, superseded_by=live.id, deleted_at=START),
        make_memory("The user lives in Oslo", tenant=acme, superseded_by=live.id, expires_at=NOW),
    )

    assert await found(store, writer, ("user:1",)) == {"The user lives in Paris"}
    assert await found(store, writer, ("user:1",), RecallFilter(now=NOW, include_superseded=True)) == {
        "The user lives in Paris",
        "The user lives in Berlin",
    }


async def test_an_attribute_filter_returns_only_memories_stating_one_of_the_attributes(
    store: VectorStore, writer: NamespaceScope, acme: str
) -> None:
    await put(
        store,
        writer,
        make_memory("I live in Berlin", tenant=acme, attributes=["user|lives_in"]),
        make_memory("I work at Acme", tenant=acme, attributes=["user|works_at"]),
        make_memory("I like tea", tenant=acme, attributes=["user|pref:tea"]),
    )

    flt = RecallFilter(now=NOW, attributes=("user|lives_in", "user|pref:tea"))
    assert await found(store, writer, ("user:1",), flt) == {"I live in Berlin", "I like tea"}


# -- list ------------------------------------------------------------------------------------------------------


async def test_list_pages_through_memories_in_id_order_and_the_cursor_is_the_first_id_of_the_next_page(
    store: VectorStore, writer: NamespaceScope, acme: str
) -> None:
    memories = [make_memory(f"fact number {i}", tenant=acme, at=START + timedelta(seconds=i)) for i in range(7)]
    shuffled = memories[:]
    random.Random(7).shuffle(shuffled)
    await put(store, writer, *shuffled)

    await assert_pages_of_three(store, writer, memories)


async def test_list_hides_deleted_memories_unless_include_deleted(
    store: VectorStore, writer: NamespaceScope, acme: str
) -> None:
    live = make_memory("The user likes tea", tenant=acme, at=START)
    gone = make_memory("The user likes jazz", tenant=acme, at=START + timedelta(seconds=1), deleted_at=START)
    await put(store, writer, live, gone)

    assert await ids_listed(store, writer, ListQuery(("user:1",), None, False, 10, None)) == [live.id]
    assert await ids_listed(store, writer, ListQuery(("user:1",), None, True, 10, None)) == [live.id, gone.id]


async def test_list_filters_by_kind_and_namespace_and_never_shows_another_tenant(
    store: VectorStore, writer: NamespaceScope, acme: str, globex: str
) -> None:
    episodic = make_memory("The user said they like tea", tenant=acme, at=START)
    semantic = make_memory("The user likes tea", tenant=acme, at=START + timedelta(seconds=1), kind=MemoryKind.SEMANTIC)
    other_ns = make_memory("The user likes jazz", tenant=acme, namespace="user:2")
    await put(store, writer, episodic, semantic, other_ns)
    await put(store, scope(globex, write=["user:1"]), make_memory("The user likes tea", tenant=globex))

    assert await ids_listed(store, writer, ListQuery(("user:1",), MemoryKind.SEMANTIC, False, 10, None)) == [
        semantic.id
    ]
    assert await ids_listed(store, writer, ListQuery(("user:1",), None, False, 10, None)) == [episodic.id, semantic.id]
    assert {m.id for m in await everything(store, acme)} == {episodic.id, semantic.id, other_ns.id}


async def test_list_of_the_whole_tenant_or_an_ungranted_namespace_is_refused_to_non_admins(
    store: VectorStore, writer: NamespaceScope
) -> None:
    with pytest.raises(NamespaceForbidden):
        await store.list(writer, ListQuery((), None, False, 10, None))
    with pytest.raises(NamespaceForbidden):
        await store.list(writer, ListQuery(("shared:x",), None, False, 10, None))


# -- find_by_hash, copies_of -----------------------------------------------------------------------------------


async def test_find_by_hash_returns_a_live_memory_of_that_namespace_unless_live_only_is_false(
    store: VectorStore, writer: NamespaceScope, acme: str, globex: str
) -> None:
    live = make_memory("The user likes tea", tenant=acme)
    deleted = make_memory("The user likes jazz", tenant=acme, deleted_at=START)
    superseded = make_memory("The user likes chess", tenant=acme, superseded_by=live.id)
    elsewhere = make_memory("The user likes opera", tenant=acme, namespace="user:2")
    await put(store, writer, live, deleted, superseded, elsewhere)

    assert await store.find_by_hash(writer, "user:1", live.content_hash) == live
    assert await store.find_by_hash(writer, "user:1", deleted.content_hash) is None
    assert await store.find_by_hash(writer, "user:1", superseded.content_hash) is None
    assert await store.find_by_hash(writer, "user:1", deleted.content_hash, live_only=False) == deleted
    assert await store.find_by_hash(writer, "user:1", superseded.content_hash, live_only=False) == superseded
    assert await store.find_by_hash(writer, "user:1", elsewhere.content_hash, live_only=False) is None
    assert await store.find_by_hash(scope(globex, write=["user:1"]), "user:1", live.content_hash) is None
    with pytest.raises(NamespaceForbidden):
        await store.find_by_hash(scope(acme, read=["user:2"]), "user:1", live.content_hash)


async def test_find_by_hashes_returns_every_memory_of_those_hashes_in_the_namespace_whatever_its_status_in_id_order(
    store: VectorStore, writer: NamespaceScope, acme: str, globex: str
) -> None:
    later = START + timedelta(seconds=1)
    live = make_memory("The user likes tea", tenant=acme, at=later)
    forced = make_memory("The user likes tea", tenant=acme)  # an earlier id with the same text
    deleted = make_memory("The user likes jazz", tenant=acme, deleted_at=START)
    superseded = make_memory("The user likes chess", tenant=acme, superseded_by=live.id)
    archived = make_memory("The user likes opera", tenant=acme, archived_at=START, archive_reason="idle")
    expired = make_memory("The user likes golf", tenant=acme, expires_at=NOW)
    elsewhere = make_memory("The user likes tea", tenant=acme, namespace="user:2")
    unrelated = make_memory("The user likes cats", tenant=acme)
    await put(store, writer, live, forced, deleted, superseded, archived, expired, elsewhere, unrelated)
    await put(store, scope(globex, write=["user:1"]), make_memory("The user likes tea", tenant=globex))
    hashes = [m.content_hash for m in (live, deleted, superseded, archived, expired)]

    found = await store.find_by_hashes(writer, "user:1", hashes)
    assert [m.id for m in found] == sorted(m.id for m in (live, forced, deleted, superseded, archived, expired))
    assert [m for m in found if m.id == archived.id] == [archived]
    assert [m.id for m in await store.find_by_hashes(writer, "user:1", hashes, now=NOW)] == sorted(
        m.id for m in (live, forced, deleted, superseded, archived)
    )
    assert [m.id for m in await store.find_by_hashes(writer, "user:2", hashes)] == [elsewhere.id]
    assert await store.find_by_hashes(scope(globex, write=["user:2"]), "user:2", hashes) == []
    assert await store.find_by_hashes(writer, "user:1", []) == []
    with pytest.raises(NamespaceForbidden):
        await store.find_by_hashes(scope(acme, read=["user:2"]), "user:1", hashes)


async def test_find_by_hashes_reads_past_a_page_of_memories_sharing_one_hash(
    store: VectorStore, writer: NamespaceScope, acme: str
) -> None:
    copies = [make_memory("ok", tenant=acme, at=START + timedelta(milliseconds=i)) for i in range(300)]
    await put(store, writer, *copies)

    assert [m.id for m in await store.find_by_hashes(writer, "user:1", [copies[0].content_hash])] == sorted(
        m.id for m in copies
    )


async def test_search_many_answers_each_query_as_a_search_by_meaning_with_the_stored_vectors(
    store: VectorStore, writer: NamespaceScope, acme: str, globex: str
) -> None:
    near, far = make_memory("fact near", tenant=acme), make_memory("fact far", tenant=acme)
    fact = make_memory("a semantic fact", tenant=acme, kind=MemoryKind.SEMANTIC, attributes=["user|home"])
    gone = make_memory("a forgotten fact", tenant=acme, deleted_at=START)
    elsewhere = make_memory("a team fact", tenant=acme, namespace="team:1")
    await store.upsert(writer, [(near, vec(1)), (far, vec(5)), (fact, vec(2)), (gone, vec(1)), (elsewhere, vec(1))])
    await put(store, scope(globex, write=["user:1"]), make_memory("their fact", tenant=globex), axis=1)
    semantic = RecallFilter(now=NOW, kinds=(MemoryKind.SEMANTIC,), attributes=("user|home", "user|job"))
    queries = [
        NearestQuery(("user:1",), vec(1), 10, RecallFilter(now=NOW, kinds=(MemoryKind.EPISODIC,))),
        NearestQuery(("user:1",), vec(1), 1, RecallFilter(now=NOW)),
        NearestQuery(("user:1",), vec(1), 10, semantic),
        NearestQuery(("user:2",), vec(1), 10, RecallFilter(now=NOW)),
    ]

    answers = await store.search_many(writer, queries)

    assert [[h.memory.id for h in hits] for hits in answers] == [[near.id, far.id], [near.id], [fact.id], []]
    for query, hits in zip(queries, answers, strict=True):
        alone = await store.search(writer, query.namespaces, query.vector, query.limit, query.flt)
        assert [(h.memory, h.similarity) for h in hits] == [(h.memory, h.similarity) for h in alone]
    unit = [[x / math.sqrt(sum(y * y for y in vec(axis))) for x in vec(axis)] for axis in (1, 5)]  # as cosine keeps it
    assert [list(h.vector) for h in answers[0]] == [pytest.approx(u, abs=1e-6) for u in unit]
    assert await store.search_many(writer, []) == []
    with pytest.raises(NamespaceForbidden):
        await store.search_many(scope(acme, read=["user:2"]), [NearestQuery(("user:1",), vec(), 5, RecallFilter(NOW))])


async def test_copies_of_returns_linked_copies_in_writable_namespaces_deleted_or_not(
    store: VectorStore, acme: str, globex: str
) -> None:
    writer = scope(acme, read=["shared:x"], write=["user:1", "team:1"])
    admin = scope(acme, admin=True)
    origin = make_memory("The user likes tea", tenant=acme)
    team_copy = replace(make_memory(origin.content, tenant=acme, namespace="team:1"), origin_id=origin.id)
    gone_copy = replace(
        make_memory(origin.content, tenant=acme, namespace="team:1", deleted_at=START), origin_id=origin.id
    )
    shared_copy = replace(make_memory(origin.content, tenant=acme, namespace="shared:x"), origin_id=origin.id)
    await put(store, writer, origin, team_copy, gone_copy)
    await put(store, admin, shared_copy)

    assert {m.id for m in await store.copies_of(writer, origin.id)} == {team_copy.id, gone_copy.id}
    assert {m.id for m in await store.copies_of(admin, origin.id)} == {team_copy.id, gone_copy.id, shared_copy.id}
    assert await store.copies_of(scope(acme, read=["user:1", "team:1", "shared:x"]), origin.id) == []
    assert await store.copies_of(scope(globex, admin=True), origin.id) == []
    assert await store.copies_of(scope(globex, write=["team:1"]), origin.id) == []


# -- purge, record_access --------------------------------------------------------------------------------------


async def test_purge_needs_an_admin_scope_and_removes_only_that_namespace_of_that_tenant(
    store: VectorStore, writer: NamespaceScope, acme: str, globex: str
) -> None:
    kept = make_memory("The user likes jazz", tenant=acme, namespace="user:2")
    theirs = make_memory("The user likes tea", tenant=globex)
    await put(store, writer, make_memory("The user likes tea", tenant=acme), make_memory("x", tenant=acme), kept)
    await put(store, scope(globex, write=["user:1"]), theirs)

    with pytest.raises(NamespaceForbidden):
        await store.purge(writer, "user:1")
    assert len(await everything(store, acme)) == 3

    assert await store.purge(scope(acme, admin=True), "user:1") == 2

    assert await everything(store, acme) == [kept]
    assert await everything(store, globex) == [theirs]
    assert await store.purge(scope(acme, admin=True), "user:1") == 0


async def test_record_access_increments_access_count_and_sets_last_accessed_at(
    store: VectorStore, writer: NamespaceScope, acme: str
) -> None:
    memory = make_memory("The user likes tea", tenant=acme)
    other = make_memory("The user likes chess", tenant=acme, access_count=5)
    untouched = make_memory("The user likes jazz", tenant=acme)
    await put(store, writer, memory, other, untouched)

    await store.record_access(writer, [memory.id, other.id], START + timedelta(minutes=1))
    await store.record_access(scope(acme, read=["user:1"]), [memory.id], START + timedelta(minutes=2))

    accessed = await store.get(writer, memory.id)
    assert accessed is not None
    assert (accessed.access_count, accessed.last_accessed_at) == (2, START + timedelta(minutes=2))
    assert replace(accessed, access_count=0, last_accessed_at=None) == memory
    assert await store.get(writer, other.id) == replace(
        other, access_count=6, last_accessed_at=START + timedelta(minutes=1)
    )
    assert await store.get(writer, untouched.id) == untouched


async def test_record_access_from_another_tenant_or_namespace_changes_nothing(
    store: VectorStore, writer: NamespaceScope, acme: str, globex: str, tea: Memory
) -> None:
    for outsider in outsiders(acme, globex):
        await store.record_access(outsider, [tea.id], NOW)

    assert await store.get(writer, tea.id) == tea


# -- delete ----------------------------------------------------------------------------------------------------

EVERY_STATUS = RecallFilter(now=NOW, include_superseded=True, include_archived=True)


async def test_deleting_ids_removes_exactly_those_memories_whatever_their_namespace_or_status_from_every_read(
    store: VectorStore, writer: NamespaceScope, acme: str
) -> None:
    admin = scope(acme, admin=True)
    kept = make_memory("The user likes jazz", tenant=acme)
    live = make_memory("The user likes tea", tenant=acme)
    forgotten = make_memory("The user liked coffee", tenant=acme, deleted_at=START)
    archived = make_memory("The user liked chess", tenant=acme, archived_at=START)
    elsewhere = make_memory("The team meets on Mondays", tenant=acme, namespace="team:1")
    await store.upsert(writer, [(m, vec(1), terms(42)) for m in (kept, live, forgotten, archived, elsewhere)])
    spaces = ("user:1", "team:1")
    assert await found(store, writer, spaces) == {kept.content, live.content, elsewhere.content}
    gone = [live.id, forgotten.id, archived.id, elsewhere.id]
    missing = make_memory("never stored", tenant=acme).id

    assert await store.delete(admin, [*gone, missing, live.id]) == 4

    assert [await store.get(admin, memory_id) for memory_id in gone] == [None] * 4
    assert await store.get_many(admin, gone) == []
    assert await everything(store, acme) == [kept]
    assert await store.namespace_counts(admin) == {"user:1": 1}
    assert await found(store, writer, spaces) == {kept.content}
    keyword_hits = await store.search(writer, spaces, vec(1), 10, EVERY_STATUS, sparse=terms(42))
    assert [h.memory.id for h in keyword_hits] == [kept.id]
    assert await store.delete(admin, gone) == 0
    assert await store.delete(admin, []) == 0


async def test_deleting_leaves_a_memory_of_another_tenant_alone_even_when_its_id_is_named(
    store: VectorStore, writer: NamespaceScope, acme: str, globex: str
) -> None:
    mine = make_memory("The user likes tea", tenant=acme)
    theirs = make_memory("The user likes tea too", tenant=globex)
    await put(store, writer, mine)
    await put(store, scope(globex, write=["user:1"]), theirs)

    assert await store.delete(scope(acme, admin=True), [mine.id, theirs.id]) == 1

    assert await everything(store, acme) == []
    assert await everything(store, globex) == [theirs]
    assert await found(store, scope(globex, read=["user:1"]), ("user:1",)) == {theirs.content}


async def test_deleting_memories_needs_an_admin_scope_and_a_refused_delete_removes_nothing(
    store: VectorStore, writer: NamespaceScope, acme: str, tea: Memory
) -> None:
    with pytest.raises(NamespaceForbidden):
        await store.delete(writer, [tea.id])

    assert await everything(store, acme) == [tea]


@pytest.mark.parametrize("kept_statistics", [True, False], ids=["kept-statistics", "counted"])
async def test_a_keyword_search_after_a_delete_scores_as_if_the_deleted_memories_had_never_been_written(
    location: Location, acme: str, globex: str, kept_statistics: bool
) -> None:
    # `globex` is given the same writes as `acme` but the deleted memories: its scores are the never-written ones
    store = await location.open()
    if kept_statistics:
        await store.maintain()  # the embedded store keeps its keyword statistics through every write from now on
    doomed: list[str] = []
    matches: dict[str, str] = {}
    for tenant in (acme, globex):
        who = scope(tenant, write=["user:1", "user:2"])
        match = make_memory("rare term", tenant=tenant)
        matches[tenant] = match.id
        items = [
            (match, vec(1), terms(42, 7)),
            (make_memory("common", tenant=tenant, namespace="user:2"), vec(2), terms(7)),
        ]
        if tenant == acme:
            extra = [make_memory(f"rare {i}", tenant=acme, namespace=f"user:{1 + i % 2}") for i in range(4)]
            items += [(m, vec(3), terms(42)) for m in extra]
            doomed = [m.id for m in extra]
        await store.upsert(who, items)

    async def keyword_score(tenant: str, who: NamespaceScope, namespaces: tuple[str, ...]) -> float:
        hits = await store.search(who, namespaces, vec(1), 10, RecallFilter(now=NOW), sparse=terms(42))
        return next(h.keyword for h in hits if h.memory.id == matches[tenant])

    async def scores(tenant: str) -> list[float]:
        reader = scope(tenant, read=["user:1", "user:2"])
        searches = [(reader, ("user:1",)), (reader, ("user:1", "user:2")), (scope(tenant, admin=True), ())]
        return [await keyword_score(tenant, who, namespaces) for who, namespaces in searches]

    never_written = await scores(globex)
    assert all(a < b for a, b in zip(await scores(acme), never_written, strict=True))  # the rare term is common

    assert await store.delete(scope(acme, admin=True), doomed) == len(doomed)

    assert await scores(acme) == pytest.approx(never_written, rel=1e-5)
    await store.maintain()  # built now if it was not, and the engine's segments optimized
    assert await scores(acme) == pytest.approx(never_written, rel=1e-5)


# -- writes under a scope --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("grants", "claimed_tenant"),
    [
        pytest.param({"write": ["user:1"]}, "acme", id="namespace-not-granted"),
        pytest.param({"read": ["user:2"], "write": ["user:1"]}, "acme", id="namespace-read-only"),
        pytest.param({"write": ["user:1", "user:2"]}, "globex", id="memory-claims-another-tenant"),
    ],
)
async def test_upsert_into_a_namespace_the_scope_cannot_write_raises_and_stores_nothing(
    store: VectorStore, acme: str, globex: str, grants: dict[str, list[str]], claimed_tenant: str
) -> None:
    who = scope(acme, **grants)
    allowed = make_memory("The user likes tea", tenant=acme, namespace="user:1")
    forbidden = make_memory("The user likes jazz", tenant={"acme": acme, "globex": globex}[claimed_tenant])
    forbidden = replace(forbidden, namespace="user:2")

    with pytest.raises(NamespaceForbidden):
        await put(store, who, allowed, forbidden)

    assert await everything(store, acme) == []
    assert await everything(store, globex) == []


async def test_update_into_a_namespace_the_scope_cannot_write_raises_and_changes_nothing(
    store: VectorStore, writer: NamespaceScope, acme: str, tea: Memory
) -> None:
    with pytest.raises(NamespaceForbidden):
        await store.update(scope(acme, read=["user:1"]), replace(tea, content="changed"))
    with pytest.raises(NamespaceForbidden):
        await store.update(scope(acme, write=["user:2"]), replace(tea, namespace="user:3"))

    assert await store.get(writer, tea.id) == tea


async def test_update_never_overwrites_a_memory_of_another_tenant(
    store: VectorStore, writer: NamespaceScope, globex: str, tea: Memory
) -> None:
    forged = replace(tea, tenant=globex, content="overwritten by globex")

    with contextlib.suppress(NamespaceForbidden, BackendUnavailable):
        await store.update(scope(globex, write=["user:1"]), forged)

    assert await store.get(writer, tea.id) == tea


async def test_upsert_never_replaces_a_memory_of_another_tenant_or_an_unwritable_namespace(
    store: VectorStore, writer: NamespaceScope, acme: str, globex: str, tea: Memory
) -> None:
    for who, forged in [
        (scope(globex, write=["user:1"]), replace(tea, tenant=globex, content="overwritten by globex")),
        (scope(acme, read=["user:1"], write=["user:9"]), replace(tea, namespace="user:9", content="moved away")),
    ]:
        with contextlib.suppress(NamespaceForbidden, BackendUnavailable):
            await put(store, who, forged)

    assert await store.get(writer, tea.id) == tea


# -- lifecycle -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("model_id", "dimension"), [("another-model", DIM), (MODEL, 4)])
async def test_opening_a_store_with_another_model_or_dimension_raises_store_config_mismatch(
    location: Location, writer: NamespaceScope, acme: str, model_id: str, dimension: int
) -> None:
    first = await location.open()
    memory = make_memory("The user likes tea", tenant=acme)
    await put(first, writer, memory)
    await location.set_aside(first)

    with pytest.raises(StoreConfigMismatch):
        await location.open(model_id, dimension)

    # the refusal changed nothing: the right configuration still opens, with the memory in it
    again = await location.open()
    assert await again.get(writer, memory.id) == memory


async def test_a_closed_store_raises_backend_unavailable(location: Location, writer: NamespaceScope) -> None:
    store = await location.open()
    await store.close()

    with pytest.raises(BackendUnavailable):
        await store.get(writer, make_memory("x", tenant=writer.tenant).id)
    with pytest.raises(BackendUnavailable):
        await store.ping()


async def test_ping_and_maintain_leave_search_and_list_results_unchanged(
    store: VectorStore, writer: NamespaceScope, acme: str
) -> None:
    memories = [make_memory(f"fact {i}", tenant=acme, at=START + timedelta(seconds=i)) for i in range(6)]
    for i, memory in enumerate(memories):
        await put(store, writer, memory, axis=i)
    query = ListQuery(("user:1",), None, False, 50, None)

    before = (
        await store.search(writer, ("user:1",), vec(2), 3, RecallFilter(now=NOW)),
        await store.list(writer, query),
    )
    await store.ping()
    await store.maintain()
    after = (await store.search(writer, ("user:1",), vec(2), 3, RecallFilter(now=NOW)), await store.list(writer, query))

    assert [h.memory for h in after[0]] == [h.memory for h in before[0]]
    assert after[1] == before[1]


# -- the archive: kept whole, out of the dense index ----------------------------------------------------------


def archived(memory: Memory, reason: str = "idle") -> Memory:
    return replace(memory, archived_at=NOW, archive_reason=reason)


ARCHIVE = RecallFilter(now=NOW, include_archived=True)


async def test_an_archived_memory_leaves_the_dense_index_and_default_search_and_keeps_every_field(
    store: VectorStore, writer: NamespaceScope, acme: str
) -> None:
    memory = make_memory("The user once rented a canoe", tenant=acme, tags=["trips"], metadata={"row": 1})
    await store.upsert(writer, [(memory, vec(3), terms(7, 8))])

    await store.update(writer, archived(memory))

    assert await store.get(writer, memory.id) == archived(memory)
    assert await store.search(writer, ("user:1",), vec(3), 5, ARCHIVE) == []  # no dense vector left to find
    assert await store.search(writer, ("user:1",), vec(3), 5, RecallFilter(now=NOW), sparse=terms(7)) == []
    [hit] = await store.search(writer, ("user:1",), vec(3), 5, ARCHIVE, sparse=terms(7))
    assert (hit.memory, hit.similarity, set(hit.terms)) == (archived(memory), 0.0, {7, 8})
    assert hit.keyword > 0


async def test_a_memory_upserted_archived_is_stored_without_its_dense_vector(
    store: VectorStore, writer: NamespaceScope, acme: str
) -> None:
    memory = archived(make_memory("The user once rented a canoe", tenant=acme), "capacity")

    await store.upsert(writer, [(memory, vec(3), terms(7))])

    assert await store.get(writer, memory.id) == memory
    assert await store.search(writer, ("user:1",), vec(3), 5, ARCHIVE) == []
    [hit] = await store.search(writer, ("user:1",), vec(3), 5, ARCHIVE, sparse=terms(7))
    assert (hit.memory, hit.similarity) == (memory, 0.0)


async def test_upserting_an_archived_memory_unarchived_puts_it_back_in_the_dense_index(
    store: VectorStore, writer: NamespaceScope, acme: str
) -> None:
    memory = make_memory("The user once rented a canoe", tenant=acme)
    await store.upsert(writer, [(archived(memory), vec(3), terms(7))])

    await store.upsert(writer, [(memory, vec(3), terms(7))])

    [hit] = await store.search(writer, ("user:1",), vec(3), 5, RecallFilter(now=NOW))
    assert (hit.memory, hit.similarity) == (memory, pytest.approx(1.0, abs=1e-4))


async def test_a_keyword_search_of_the_archive_scores_an_archived_memory_without_a_cosine_with_known_none_or_empty(
    store: VectorStore, writer: NamespaceScope, acme: str
) -> None:
    live = make_memory("live and matching", tenant=acme)
    gone = make_memory("archived and matching", tenant=acme)
    await store.upsert(writer, [(live, vec(1), terms(42)), (archived(gone), vec(1), terms(42))])

    plain = await store.search(writer, ("user:1",), vec(1), 5, ARCHIVE, sparse=terms(42))
    known = await store.search(writer, ("user:1",), vec(1), 5, ARCHIVE, sparse=terms(42), known={})

    for hits in (plain, known):
        by_id = {h.memory.id: h for h in hits}
        assert set(by_id) == {live.id, gone.id}
        assert by_id[gone.id].similarity == 0.0 and by_id[gone.id].keyword > 0
        assert by_id[live.id].similarity == pytest.approx(1.0, abs=1e-4)


async def test_archived_memories_are_not_live_for_lists_counts_or_repeats(
    store: VectorStore, writer: NamespaceScope, acme: str
) -> None:
    live = make_memory("The user likes tea", tenant=acme, at=START)
    gone = archived(make_memory("The user likes jazz", tenant=acme, at=START + timedelta(seconds=1)))
    await put(store, writer, live, gone)

    assert await ids_listed(store, writer, ListQuery(("user:1",), None, False, 10, None)) == [live.id]
    assert await ids_listed(store, writer, ListQuery(("user:1",), None, True, 10, None)) == [live.id, gone.id]
    assert await store.namespace_counts(scope(acme, admin=True)) == {"user:1": 1}
    assert await store.find_by_hash(writer, "user:1", gone.content_hash) is None
    assert await store.find_by_hash(writer, "user:1", gone.content_hash, live_only=False) == gone


async def test_an_archived_memory_of_another_tenant_never_appears_even_with_include_archived(
    store: VectorStore, writer: NamespaceScope, acme: str, globex: str
) -> None:
    theirs = scope(globex, write=["user:1"])
    gone = archived(make_memory("The user once rented a canoe", tenant=globex))
    await store.upsert(theirs, [(gone, vec(3), terms(7))])
    await store.upsert(writer, [(make_memory("ours", tenant=acme), vec(3), terms(8))])

    by_meaning = await store.search(writer, ("user:1",), vec(3), 5, ARCHIVE)
    by_keyword = await store.search(writer, ("user:1",), vec(3), 5, ARCHIVE, sparse=terms(7))

    assert [h.memory.content for h in by_meaning] == ["ours"]
    assert by_keyword == []  # the archived one matches, but it is not theirs to see
    assert await store.get(writer, gone.id) is None
    assert await store.get(scope(acme, admin=True), gone.id) is None
    with pytest.raises(NamespaceForbidden):  # archiving is an update: never another tenant's memory
        await store.update(writer, gone)
    assert await store.get(theirs, gone.id) == gone


async def test_archiving_never_touches_a_memory_of_another_tenant_that_shares_its_id(
    store: VectorStore, writer: NamespaceScope, acme: str, globex: str
) -> None:
    theirs = scope(globex, write=["user:1"])
    mine = make_memory("The user likes tea", tenant=acme)
    await store.upsert(theirs, [(replace(mine, tenant=globex), vec(3), terms(7))])

    await store.update(writer, archived(mine))

    [hit] = await store.search(theirs, ("user:1",), vec(3), 5, RecallFilter(now=NOW))
    assert hit.memory.archived_at is None and hit.similarity == pytest.approx(1.0, abs=1e-4)


# -- the server store alone ------------------------------------------------------------------------------------


def test_collection_names_carry_the_prefix_a_slug_of_the_model_id_and_the_dimension() -> None:
    assert collection_name("hindsight", "wordllama-l2-supercat-256", 256) == "hindsight_wordllama_l2_supercat_256_256d"
    assert collection_name("hs", "BAAI/bge-small-en-v1.5", 384) == "hs_baai_bge_small_en_v1_5_384d"
    assert collection_name("hs", "///", 8) == "hs_model_8d"
    with pytest.raises(ValueError, match="prefix"):
        collection_name("bad prefix", "m", 8)


@pytest.fixture(params=SERVER_BACKENDS)
async def client(request: pytest.FixtureRequest) -> AsyncIterator[AsyncQdrantClient]:
    """A Qdrant client of this test alone; collections it makes carry a unique prefix and are dropped after."""
    qdrant = new_client(request.param)
    yield qdrant
    if request.param == "qdrant-url":
        cleaner = new_client(request.param)
        for described in (await cleaner.get_collections()).collections:
            if described.name.startswith(PREFIX):
                await cleaner.delete_collection(described.name)
        await cleaner.close()
    await qdrant.close()


async def open_server(client: AsyncQdrantClient, model_id: str = MODEL, dimension: int = DIM) -> QdrantServerStore:
    return await QdrantServerStore.open(client, collection_prefix=PREFIX, model_id=model_id, dimension=dimension)


async def test_open_creates_a_collection_with_dense_and_bm25_vectors_and_records_the_model(
    client: AsyncQdrantClient,
) -> None:
    store = await open_server(client)

    assert store.collection == f"{PREFIX}_contract_model_8d"
    info = await client.get_collection(store.collection)
    vectors = info.config.params.vectors
    assert isinstance(vectors, dict)
    assert (vectors[DENSE].size, vectors[DENSE].distance) == (DIM, qm.Distance.COSINE)
    sparse = info.config.params.sparse_vectors or {}
    assert sparse[SPARSE].modifier == qm.Modifier.IDF
    assert (info.config.metadata or {})["embedding_model"] == MODEL
    assert (info.config.metadata or {})["dimension"] == DIM


async def test_each_embedding_model_gets_a_collection_of_its_own(client: AsyncQdrantClient, acme: str) -> None:
    writer = scope(acme, write=["user:1"])
    first = await open_server(client)
    second = await open_server(client, "other-model", 4)
    memory = make_memory("The user likes tea", tenant=acme)
    await put(first, writer, memory)

    assert second.collection != first.collection
    assert await second.get(writer, memory.id) is None
    assert await (await open_server(client)).get(writer, memory.id) == memory


async def test_model_ids_that_share_a_collection_name_are_refused(client: AsyncQdrantClient) -> None:
    await open_server(client, "Contract/Model")

    with pytest.raises(StoreConfigMismatch):
        await open_server(client, "contract-model")


async def test_a_collection_that_hindsight_did_not_create_is_refused(client: AsyncQdrantClient) -> None:
    name = collection_name(PREFIX, MODEL, DIM)
    await client.create_collection(name, vectors_config={DENSE: qm.VectorParams(size=DIM, distance=qm.Distance.COSINE)})

    with pytest.raises(StoreConfigMismatch):
        await open_server(client)


async def test_ping_raises_backend_unavailable_once_the_collection_is_gone(client: AsyncQdrantClient) -> None:
    store = await open_server(client)
    await store.ping()

    await client.delete_collection(store.collection)

    with pytest.raises(BackendUnavailable):
        await store.ping()


def unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def test_an_unreachable_server_raises_backend_unavailable_after_a_few_quick_retries() -> None:
    with pytest.raises(BackendUnavailable):
        await QdrantServerStore.connect(
            f"http://127.0.0.1:{unused_port()}", model_id=MODEL, dimension=DIM, call_timeout=1.0
        )


@pytest.mark.parametrize("granted", [1, IDF_NAMESPACE_LIMIT + 1])
async def test_keyword_scores_never_depend_on_another_tenants_memories_however_wide_the_search(
    store: VectorStore, acme: str, globex: str, granted: int
) -> None:
    names = [f"user:{i}" for i in range(granted)]
    mine = scope(acme, write=names)
    match = make_memory("rare term", tenant=acme, namespace="user:0")
    other = make_memory("common words", tenant=acme, namespace="user:0")
    await store.upsert(mine, [(match, vec(1), terms(42, 7)), (other, vec(2), terms(7))])

    async def keyword_score() -> float:
        hits = await store.search(mine, tuple(names), vec(3), 5, RecallFilter(now=NOW), sparse=terms(42))
        return next(h.keyword for h in hits if h.memory.id == match.id)

    before = await keyword_score()
    theirs = scope(globex, write=["user:0"])
    await store.upsert(
        theirs, [(make_memory(f"x {i}", tenant=globex, namespace="user:0"), vec(4), terms(42)) for i in range(20)]
    )

    assert before > 0
    assert await keyword_score() == pytest.approx(before)


async def test_keyword_scores_over_named_namespaces_do_not_count_consolidated_memories(
    store: VectorStore, acme: str
) -> None:
    mine = scope(acme, write=["user:0"])
    match = make_memory("rare term", tenant=acme, namespace="user:0")
    other = make_memory("common words", tenant=acme, namespace="user:0")
    await store.upsert(mine, [(match, vec(1), terms(42, 7)), (other, vec(2), terms(7))])

    async def keyword_score() -> float:
        hits = await store.search(mine, ("user:0",), vec(3), 5, RecallFilter(now=NOW), sparse=terms(42))
        return next(h.keyword for h in hits if h.memory.id == match.id)

    before = await keyword_score()
    consolidated = Source(subject="hindsight-consolidation", tool=CONSOLIDATED)
    summaries = [
        make_memory(f"rare term summary {i}", tenant=acme, namespace="user:0", source=consolidated) for i in range(5)
    ]
    await store.upsert(mine, [(m, vec(4), terms(42)) for m in summaries])
    assert await keyword_score() == pytest.approx(before)  # the summaries restate; they do not make "42" common

    episode = make_memory("rare term again", tenant=acme, namespace="user:0")
    await store.upsert(mine, [(episode, vec(5), terms(42))])
    assert await keyword_score() < before  # an episode with the term does


async def test_a_keyword_search_returns_just_the_keyword_matches_with_their_cosines(
    store: VectorStore, writer: NamespaceScope, acme: str
) -> None:
    near = make_memory("near by meaning", tenant=acme)
    keyword = make_memory("the rare keyword", tenant=acme)
    await store.upsert(writer, [(near, vec(1), terms(1)), (keyword, vec(5), terms(42))])

    hits = await store.search(writer, ("user:1",), vec(1), 5, RecallFilter(now=NOW), sparse=terms(42))

    assert [h.memory.id for h in hits] == [keyword.id]
    assert hits[0].keyword > 0
    assert hits[0].similarity == pytest.approx(cosine(vec(1), vec(5)), abs=1e-4)


async def test_a_keyword_search_returns_the_hits_the_caller_holds_as_held_with_the_new_bm25_score_and_reads_the_others(
    store: VectorStore, writer: NamespaceScope, acme: str
) -> None:
    held = make_memory("held by the caller", tenant=acme)
    new = make_memory("not held yet", tenant=acme)
    await store.upsert(writer, [(held, vec(1), terms(42, 7)), (new, vec(5), terms(42))])
    flt = RecallFilter(now=NOW)
    plain = await store.search(writer, ("user:1",), vec(1), 5, flt, sparse=terms(42))
    copy = replace(held, content="the caller's own copy")  # what the store returns if it does not read it again
    known = {held.id: ScoredMemory(copy, 0.123, 9.9, (7, 42))}

    hits = await store.search(writer, ("user:1",), vec(1), 5, flt, sparse=terms(42), known=known)

    by_id = {h.memory.id: h for h in hits}
    fresh = {h.memory.id: h for h in plain}
    assert set(by_id) == set(fresh) == {held.id, new.id}
    assert by_id[held.id].memory is copy and by_id[held.id].similarity == 0.123 and by_id[held.id].terms == (7, 42)
    assert by_id[held.id].keyword == pytest.approx(fresh[held.id].keyword)  # only the score is new
    assert by_id[new.id].memory.content == "not held yet"
    assert by_id[new.id].similarity == pytest.approx(cosine(vec(1), vec(5)), abs=1e-4)
    assert by_id[new.id].keyword == pytest.approx(fresh[new.id].keyword)
    assert set(by_id[new.id].terms) == {42}

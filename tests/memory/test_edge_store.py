"""`EdgeVectorStore` on a real qdrant-edge shard in a temp directory, with real WordLlama vectors.

Tests share one store per module and keep apart by tenant (`acme` and `globex` are tenant ids unique to each
test); lifecycle tests use a `private_store` of their own.
"""

from __future__ import annotations

import contextlib
import random
from dataclasses import fields, replace
from datetime import timedelta
from pathlib import Path

import pytest

from memory.embedders import WordLlamaEmbedder
from memory.errors import BackendUnavailable, NamespaceForbidden, StoreConfigMismatch
from memory.models import Memory, MemoryKind, Source
from memory.ports import ListQuery, RecallFilter
from memory.scope import NamespaceScope
from memory.stores.edge import EdgeVectorStore
from tests.memory.conftest import START, everything, make_memory, scope

pytestmark = pytest.mark.anyio

NOW = START + timedelta(days=1)


@pytest.fixture
def writer(acme: str) -> NamespaceScope:
    """Reads and writes three namespaces of the test's `acme` tenant."""
    return scope(acme, write=["user:1", "user:2", "team:1"])


async def put(store: EdgeVectorStore, embedder: WordLlamaEmbedder, who: NamespaceScope, *memories: Memory) -> None:
    vectors = await embedder.embed_documents([m.content for m in memories])
    await store.upsert(who, list(zip(memories, vectors, strict=True)))


async def found(
    store: EdgeVectorStore,
    embedder: WordLlamaEmbedder,
    reader: NamespaceScope,
    namespaces: tuple[str, ...],
    flt: RecallFilter | None = None,
) -> set[str]:
    vector = await embedder.embed_query("what does the user like")
    hits = await store.search(reader, namespaces, vector, 50, flt or RecallFilter(now=NOW))
    return {hit.memory.content for hit in hits}


# -- round trip and get ----------------------------------------------------------------------------------------


async def test_upsert_then_get_round_trips_every_field_of_a_memory(
    store: EdgeVectorStore, embedder: WordLlamaEmbedder, writer: NamespaceScope, acme: str
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
    )
    # every field is set to a non-default value, so the comparison below checks them all
    assert all(getattr(memory, f.name) not in (None, [], {}, 0, "") for f in fields(Memory))

    await put(store, embedder, writer, memory)

    assert await store.get(writer, memory.id) == memory


async def test_get_from_another_tenant_or_a_scope_without_the_namespace_returns_none(
    store: EdgeVectorStore, embedder: WordLlamaEmbedder, writer: NamespaceScope, acme: str, globex: str
) -> None:
    memory = make_memory("The user lives in Lisbon", tenant=acme)
    await put(store, embedder, writer, memory)

    assert await store.get(scope(globex, write=["user:1"]), memory.id) is None
    assert await store.get(scope(globex, admin=True), memory.id) is None
    assert await store.get(scope(acme, read=["user:2"]), memory.id) is None
    assert await store.get(scope(acme, read=["user:1"]), memory.id) == memory
    assert await store.get(scope(acme, admin=True), memory.id) == memory


# -- search filters --------------------------------------------------------------------------------------------


async def test_search_never_returns_memories_of_another_tenant(
    store: EdgeVectorStore, embedder: WordLlamaEmbedder, writer: NamespaceScope, acme: str, globex: str
) -> None:
    other = scope(globex, write=["user:1"])
    await put(store, embedder, writer, make_memory("The user likes green tea", tenant=acme))
    await put(store, embedder, other, make_memory("The user likes black coffee", tenant=globex))

    assert await found(store, embedder, writer, ("user:1",)) == {"The user likes green tea"}
    assert await found(store, embedder, other, ("user:1",)) == {"The user likes black coffee"}
    assert await found(store, embedder, scope(acme, admin=True), ()) == {"The user likes green tea"}


async def test_search_covers_exactly_the_requested_namespaces(
    store: EdgeVectorStore, embedder: WordLlamaEmbedder, writer: NamespaceScope, acme: str
) -> None:
    await put(
        store,
        embedder,
        writer,
        make_memory("The user likes tea", tenant=acme, namespace="user:1"),
        make_memory("The user likes jazz", tenant=acme, namespace="user:2"),
        make_memory("The team likes pizza", tenant=acme, namespace="team:1"),
    )

    assert await found(store, embedder, writer, ("user:1", "user:2")) == {"The user likes tea", "The user likes jazz"}
    assert await found(store, embedder, writer, ("team:1",)) == {"The team likes pizza"}


async def test_search_refuses_namespaces_outside_the_scope_and_unrestricted_queries_from_non_admins(
    store: EdgeVectorStore, embedder: WordLlamaEmbedder, writer: NamespaceScope, acme: str
) -> None:
    reader = scope(acme, read=["user:1"])
    await put(store, embedder, writer, make_memory("The user likes tea", tenant=acme, namespace="user:2"))

    with pytest.raises(NamespaceForbidden):
        await found(store, embedder, reader, ("user:1", "user:2"))
    with pytest.raises(NamespaceForbidden):
        await found(store, embedder, reader, ())


async def test_search_filters_by_kind(
    store: EdgeVectorStore, embedder: WordLlamaEmbedder, writer: NamespaceScope, acme: str
) -> None:
    await put(
        store,
        embedder,
        writer,
        make_memory("The user said they like tea", tenant=acme),
        make_memory("The user likes tea", tenant=acme, kind=MemoryKind.SEMANTIC),
    )

    semantic = RecallFilter(now=NOW, kinds=(MemoryKind.SEMANTIC,))
    episodic = RecallFilter(now=NOW, kinds=(MemoryKind.EPISODIC,))
    both = RecallFilter(now=NOW, kinds=(MemoryKind.EPISODIC, MemoryKind.SEMANTIC))
    assert await found(store, embedder, writer, ("user:1",), semantic) == {"The user likes tea"}
    assert await found(store, embedder, writer, ("user:1",), episodic) == {"The user said they like tea"}
    assert len(await found(store, embedder, writer, ("user:1",), both)) == 2


async def test_search_filters_by_tags_matching_any_of_them(
    store: EdgeVectorStore, embedder: WordLlamaEmbedder, writer: NamespaceScope, acme: str
) -> None:
    await put(
        store,
        embedder,
        writer,
        make_memory("The user likes tea", tenant=acme, tags=["drinks", "prefs"]),
        make_memory("The user likes jazz", tenant=acme, tags=["music"]),
        make_memory("The user likes chess", tenant=acme),
    )

    drinks = RecallFilter(now=NOW, tags=("drinks",))
    either = RecallFilter(now=NOW, tags=("music", "prefs"))
    assert await found(store, embedder, writer, ("user:1",), drinks) == {"The user likes tea"}
    assert await found(store, embedder, writer, ("user:1",), either) == {"The user likes tea", "The user likes jazz"}


async def test_search_filters_by_session_id(
    store: EdgeVectorStore, embedder: WordLlamaEmbedder, writer: NamespaceScope, acme: str
) -> None:
    await put(
        store,
        embedder,
        writer,
        make_memory("The user likes tea", tenant=acme, session_id="s-1"),
        make_memory("The user likes jazz", tenant=acme, session_id="s-2"),
        make_memory("The user likes chess", tenant=acme),
    )

    flt = RecallFilter(now=NOW, session_id="s-1")
    assert await found(store, embedder, writer, ("user:1",), flt) == {"The user likes tea"}


async def test_search_filters_by_creation_time_with_inclusive_bounds(
    store: EdgeVectorStore, embedder: WordLlamaEmbedder, writer: NamespaceScope, acme: str
) -> None:
    hour = timedelta(hours=1)
    await put(
        store,
        embedder,
        writer,
        make_memory("The user likes tea", tenant=acme, at=START),
        make_memory("The user likes jazz", tenant=acme, at=START + hour),
        make_memory("The user likes chess", tenant=acme, at=START + 2 * hour),
    )

    since = RecallFilter(now=NOW, since=START + hour)
    until = RecallFilter(now=NOW, until=START + hour)
    window = RecallFilter(now=NOW, since=START + hour, until=START + hour)
    assert await found(store, embedder, writer, ("user:1",), since) == {"The user likes jazz", "The user likes chess"}
    assert await found(store, embedder, writer, ("user:1",), until) == {"The user likes tea", "The user likes jazz"}
    assert await found(store, embedder, writer, ("user:1",), window) == {"The user likes jazz"}


async def test_search_excludes_deleted_and_superseded_memories(
    store: EdgeVectorStore, embedder: WordLlamaEmbedder, writer: NamespaceScope, acme: str
) -> None:
    live = make_memory("The user likes tea", tenant=acme)
    await put(
        store,
        embedder,
        writer,
        live,
        make_memory("The user likes jazz", tenant=acme, deleted_at=START),
        make_memory("The user likes chess", tenant=acme, superseded_by=live.id),
    )

    assert await found(store, embedder, writer, ("user:1",)) == {"The user likes tea"}


async def test_search_excludes_memories_whose_expiry_is_now_or_past(
    store: EdgeVectorStore, embedder: WordLlamaEmbedder, writer: NamespaceScope, acme: str
) -> None:
    second = timedelta(seconds=1)
    await put(
        store,
        embedder,
        writer,
        make_memory("The user likes tea", tenant=acme, expires_at=NOW - second),
        make_memory("The user likes jazz", tenant=acme, expires_at=NOW),
        make_memory("The user likes chess", tenant=acme, expires_at=NOW + second),
        make_memory("The user likes hiking", tenant=acme),
    )

    assert await found(store, embedder, writer, ("user:1",)) == {"The user likes chess", "The user likes hiking"}


# -- list ------------------------------------------------------------------------------------------------------


async def test_list_pages_through_memories_in_creation_order_with_the_cursor_id(
    store: EdgeVectorStore, embedder: WordLlamaEmbedder, writer: NamespaceScope, acme: str
) -> None:
    memories = [make_memory(f"fact number {i}", tenant=acme, at=START + timedelta(seconds=i)) for i in range(7)]
    shuffled = memories[:]
    random.Random(7).shuffle(shuffled)
    await put(store, embedder, writer, *shuffled)

    pages: list[list[str]] = []
    after: str | None = None
    while True:
        page, cursor = await store.list(writer, ListQuery(("user:1",), None, False, 3, after))
        pages.append([m.id for m in page])
        if cursor is None:
            break
        assert cursor == memories[3 * len(pages)].id  # the cursor is the id the next page starts at
        after = cursor

    assert [len(p) for p in pages] == [3, 3, 1]
    assert [i for p in pages for i in p] == [m.id for m in memories]


async def test_list_hides_deleted_memories_unless_include_deleted(
    store: EdgeVectorStore, embedder: WordLlamaEmbedder, writer: NamespaceScope, acme: str
) -> None:
    live = make_memory("The user likes tea", tenant=acme, at=START)
    gone = make_memory("The user likes jazz", tenant=acme, at=START + timedelta(seconds=1), deleted_at=START)
    await put(store, embedder, writer, live, gone)

    default, _ = await store.list(writer, ListQuery(("user:1",), None, False, 10, None))
    with_deleted, _ = await store.list(writer, ListQuery(("user:1",), None, True, 10, None))
    assert [m.id for m in default] == [live.id]
    assert [m.id for m in with_deleted] == [live.id, gone.id]


async def test_list_filters_by_kind_and_namespace_and_never_shows_another_tenant(
    store: EdgeVectorStore, embedder: WordLlamaEmbedder, writer: NamespaceScope, acme: str, globex: str
) -> None:
    episodic = make_memory("The user said they like tea", tenant=acme, at=START)
    semantic = make_memory("The user likes tea", tenant=acme, at=START + timedelta(seconds=1), kind=MemoryKind.SEMANTIC)
    other_ns = make_memory("The user likes jazz", tenant=acme, namespace="user:2")
    await put(store, embedder, writer, episodic, semantic, other_ns)
    await put(store, embedder, scope(globex, write=["user:1"]), make_memory("The user likes tea", tenant=globex))

    only_semantic, _ = await store.list(writer, ListQuery(("user:1",), MemoryKind.SEMANTIC, False, 10, None))
    only_user1, _ = await store.list(writer, ListQuery(("user:1",), None, False, 10, None))
    assert [m.id for m in only_semantic] == [semantic.id]
    assert [m.id for m in only_user1] == [episodic.id, semantic.id]
    assert {m.tenant for m in await everything(store, acme)} == {acme}


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
    store: EdgeVectorStore,
    embedder: WordLlamaEmbedder,
    acme: str,
    globex: str,
    grants: dict[str, list[str]],
    claimed_tenant: str,
) -> None:
    who = scope(acme, **grants)
    allowed = make_memory("The user likes tea", tenant=acme, namespace="user:1")
    forbidden = make_memory("The user likes jazz", tenant={"acme": acme, "globex": globex}[claimed_tenant])
    forbidden = replace(forbidden, namespace="user:2")

    with pytest.raises(NamespaceForbidden):
        await put(store, embedder, who, allowed, forbidden)

    assert await everything(store, acme) == []
    assert await everything(store, globex) == []


async def test_update_never_overwrites_a_memory_of_another_tenant(
    store: EdgeVectorStore, embedder: WordLlamaEmbedder, writer: NamespaceScope, acme: str, globex: str
) -> None:
    victim = make_memory("The user likes tea", tenant=acme)
    await put(store, embedder, writer, victim)
    forged = replace(victim, tenant=globex, content="overwritten by globex")

    with contextlib.suppress(NamespaceForbidden, BackendUnavailable):
        await store.update(scope(globex, write=["user:1"]), forged)

    assert await store.get(writer, victim.id) == victim


async def test_upsert_never_replaces_a_memory_of_another_tenant(
    store: EdgeVectorStore, embedder: WordLlamaEmbedder, writer: NamespaceScope, acme: str, globex: str
) -> None:
    victim = make_memory("The user likes tea", tenant=acme)
    await put(store, embedder, writer, victim)
    forged = replace(victim, tenant=globex, content="overwritten by globex")

    with contextlib.suppress(NamespaceForbidden, BackendUnavailable):
        await put(store, embedder, scope(globex, write=["user:1"]), forged)

    assert await store.get(writer, victim.id) == victim


async def test_find_by_hash_returns_only_a_live_memory_of_that_namespace(
    store: EdgeVectorStore, embedder: WordLlamaEmbedder, writer: NamespaceScope, acme: str, globex: str
) -> None:
    live = make_memory("The user likes tea", tenant=acme)
    deleted = make_memory("The user likes jazz", tenant=acme, deleted_at=START)
    elsewhere = make_memory("The user likes chess", tenant=acme, namespace="user:2")
    await put(store, embedder, writer, live, deleted, elsewhere)

    assert await store.find_by_hash(writer, "user:1", live.content_hash) == live
    assert await store.find_by_hash(writer, "user:1", deleted.content_hash) is None
    assert await store.find_by_hash(writer, "user:1", deleted.content_hash, live_only=False) == deleted
    assert await store.find_by_hash(writer, "user:1", elsewhere.content_hash) is None
    assert await store.find_by_hash(scope(globex, write=["user:1"]), "user:1", live.content_hash) is None


async def test_record_access_increments_access_count_and_sets_last_accessed_at(
    store: EdgeVectorStore, embedder: WordLlamaEmbedder, writer: NamespaceScope, acme: str
) -> None:
    memory = make_memory("The user likes tea", tenant=acme)
    untouched = make_memory("The user likes jazz", tenant=acme)
    await put(store, embedder, writer, memory, untouched)

    await store.record_access(writer, [memory.id], START + timedelta(minutes=1))
    await store.record_access(writer, [memory.id], START + timedelta(minutes=2))

    accessed = await store.get(writer, memory.id)
    assert accessed is not None
    assert accessed.access_count == 2
    assert accessed.last_accessed_at == START + timedelta(minutes=2)
    assert replace(accessed, access_count=0, last_accessed_at=None) == memory
    assert await store.get(writer, untouched.id) == untouched


async def test_record_access_from_another_tenant_changes_nothing(
    store: EdgeVectorStore, embedder: WordLlamaEmbedder, writer: NamespaceScope, acme: str, globex: str
) -> None:
    memory = make_memory("The user likes tea", tenant=acme)
    await put(store, embedder, writer, memory)

    await store.record_access(scope(globex, write=["user:1"]), [memory.id], NOW)

    assert await store.get(writer, memory.id) == memory


async def test_maintain_after_writes_keeps_search_and_list_results_identical(
    private_store: EdgeVectorStore, embedder: WordLlamaEmbedder, writer: NamespaceScope, acme: str
) -> None:
    store = private_store
    topics = ["tea", "jazz", "chess", "hiking", "Rust", "Lisbon", "cats", "sushi", "opera", "tennis"]
    memories = [
        make_memory(f"The user likes {t}", tenant=acme, at=START + timedelta(seconds=i)) for i, t in enumerate(topics)
    ]
    await put(store, embedder, writer, *memories)
    vector = await embedder.embed_query("which drinks does the user enjoy")
    flt = RecallFilter(now=NOW)

    before_search = await store.search(writer, ("user:1",), vector, 5, flt)
    before_list = await store.list(writer, ListQuery(("user:1",), None, False, 50, None))
    await store.maintain()
    await store.maintain()  # a second run with nothing new to do is a no-op
    after_search = await store.search(writer, ("user:1",), vector, 5, flt)
    after_list = await store.list(writer, ListQuery(("user:1",), None, False, 50, None))

    assert [(h.memory, round(h.similarity, 5)) for h in after_search] == [
        (h.memory, round(h.similarity, 5)) for h in before_search
    ]
    assert after_list == before_list
    assert await store.count(writer, ("user:1",)) == len(memories)


# -- lifecycle -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model_id", "dimension"),
    [("another-model", 256), ("wordllama-l2-supercat-256", 128)],
)
async def test_opening_a_store_with_another_model_or_dimension_raises_store_config_mismatch(
    private_store: EdgeVectorStore, store_dir: Path, model_id: str, dimension: int
) -> None:
    await private_store.close()

    with pytest.raises(StoreConfigMismatch):
        EdgeVectorStore.open(store_dir, model_id=model_id, dimension=dimension)

    # the refused open released the lock: the right configuration still opens
    reopened = EdgeVectorStore.open(store_dir, model_id="wordllama-l2-supercat-256", dimension=256)
    await reopened.close()


async def test_a_directory_already_open_in_this_process_is_locked_until_closed(
    private_store: EdgeVectorStore, store_dir: Path, embedder: WordLlamaEmbedder
) -> None:
    with pytest.raises(BackendUnavailable):
        EdgeVectorStore.open(store_dir, model_id=embedder.model_id, dimension=embedder.dimension)

    await private_store.close()
    reopened = EdgeVectorStore.open(store_dir, model_id=embedder.model_id, dimension=embedder.dimension)
    await reopened.ping()
    await reopened.close()


async def test_a_closed_store_raises_backend_unavailable(
    private_store: EdgeVectorStore, writer: NamespaceScope
) -> None:
    await private_store.close()

    with pytest.raises(BackendUnavailable):
        await private_store.get(writer, make_memory("x", tenant=writer.tenant).id)
    with pytest.raises(BackendUnavailable):
        await private_store.ping()


async def test_memories_persist_across_close_and_open(
    private_store: EdgeVectorStore, store_dir: Path, embedder: WordLlamaEmbedder, writer: NamespaceScope, acme: str
) -> None:
    memory = make_memory("The user likes green tea", tenant=acme)
    await put(private_store, embedder, writer, memory)
    await private_store.close()

    reopened = EdgeVectorStore.open(store_dir, model_id=embedder.model_id, dimension=embedder.dimension)
    try:
        assert await reopened.get(writer, memory.id) == memory
        assert await found(reopened, embedder, writer, ("user:1",)) == {memory.content}
    finally:
        await reopened.close()

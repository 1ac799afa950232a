"""`EdgeVectorStore` on a real qdrant-edge shard in a temp directory, with real WordLlama vectors.

Behaviour every store shares is tested once for both implementations in `test_store_contract.py`; this module
keeps what is specific to the embedded engine (locking, persistence, maintenance) and extra isolation cases.
Tests share one store per module and keep apart by tenant (`acme` and `globex` are tenant ids unique to each
test); lifecycle tests use a `private_store` of their own.
"""

from __future__ import annotations

import contextlib
import random
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from memory.embedders import WordLlamaEmbedder
from memory.embedders.sparse import Bm25Encoder
from memory.errors import BackendUnavailable, NamespaceForbidden
from memory.models import Memory
from memory.ports import ListQuery, RecallFilter
from memory.scope import NamespaceScope
from memory.stores.common import IDF_NAMESPACE_LIMIT
from memory.stores.edge import EdgeVectorStore
from tests.memory.conftest import START, assert_get_is_scoped, assert_pages_of_three, make_memory, scope

pytestmark = pytest.mark.anyio

NOW = START + timedelta(days=1)


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


async def test_get_from_another_tenant_or_a_scope_without_the_namespace_returns_none(
    store: EdgeVectorStore, embedder: WordLlamaEmbedder, writer: NamespaceScope, acme: str, globex: str
) -> None:
    memory = make_memory("The user lives in Lisbon", tenant=acme)
    await put(store, embedder, writer, memory)

    await assert_get_is_scoped(store, memory, acme, globex)


# -- search filters --------------------------------------------------------------------------------------------


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


# -- list ------------------------------------------------------------------------------------------------------


async def test_list_pages_through_memories_in_creation_order_with_the_cursor_id(
    store: EdgeVectorStore, embedder: WordLlamaEmbedder, writer: NamespaceScope, acme: str
) -> None:
    memories = [make_memory(f"fact number {i}", tenant=acme, at=START + timedelta(seconds=i)) for i in range(7)]
    shuffled = memories[:]
    random.Random(7).shuffle(shuffled)
    await put(store, embedder, writer, *shuffled)

    await assert_pages_of_three(store, writer, memories)


# -- writes under a scope --------------------------------------------------------------------------------------


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


async def keyword_scores(
    store: EdgeVectorStore, embedder: WordLlamaEmbedder, reader: NamespaceScope, query: str
) -> dict[str, float]:
    """Each hit's BM25 score of a hybrid search over every namespace the reader may read."""
    vector = await embedder.embed_query(query)
    hits = await store.search(
        reader, reader.all_readable, vector, 50, RecallFilter(now=NOW), Bm25Encoder().query(query)
    )
    return {hit.memory.content: hit.keyword for hit in hits if hit.keyword > 0}


async def test_a_wide_keyword_search_weighs_terms_by_its_own_tenant_alone_before_and_after_another_joins(
    private_store: EdgeVectorStore, store_dir: Path, embedder: WordLlamaEmbedder, acme: str, globex: str
) -> None:
    # wider than `IDF_NAMESPACE_LIMIT`: the IDF corpus is the tenant (the shard's own statistics while it is alone)
    namespaces = [f"user:{i}" for i in range(IDF_NAMESPACE_LIMIT + 4)]
    acme_writer = scope(acme, write=namespaces)
    texts = ["The user drinks green tea", "The user drinks black coffee", "The user walks the dog", "Tea at five"]
    ours = [make_memory(t, tenant=acme, namespace=namespaces[i]) for i, t in enumerate(texts)]
    keywords = Bm25Encoder()
    vectors = await embedder.embed_documents(texts)
    await private_store.upsert(
        acme_writer, [(m, v, keywords.document(m.content)) for m, v in zip(ours, vectors, strict=True)]
    )
    alone = await keyword_scores(private_store, embedder, acme_writer, "green tea")
    assert set(alone) == {"The user drinks green tea", "Tea at five"}

    theirs = [make_memory(f"Tea number {i}", tenant=globex) for i in range(40)]
    vectors = await embedder.embed_documents([m.content for m in theirs])
    await private_store.upsert(
        scope(globex, write=["user:1"]),
        [(m, v, keywords.document(m.content)) for m, v in zip(theirs, vectors, strict=True)],
    )
    assert await keyword_scores(private_store, embedder, acme_writer, "green tea") == pytest.approx(alone, rel=1e-3)

    await private_store.close()  # a reopened store knows both tenants are there
    reopened = EdgeVectorStore.open(store_dir, model_id=embedder.model_id, dimension=embedder.dimension)
    try:
        assert await keyword_scores(reopened, embedder, acme_writer, "green tea") == pytest.approx(alone, rel=1e-3)
    finally:
        await reopened.close()


# -- lifecycle -------------------------------------------------------------------------------------------------


async def test_a_directory_already_open_in_this_process_is_locked_until_closed(
    private_store: EdgeVectorStore, store_dir: Path, embedder: WordLlamaEmbedder
) -> None:
    with pytest.raises(BackendUnavailable):
        EdgeVectorStore.open(store_dir, model_id=embedder.model_id, dimension=embedder.dimension)

    await private_store.close()
    reopened = EdgeVectorStore.open(store_dir, model_id=embedder.model_id, dimension=embedder.dimension)
    await reopened.ping()
    await reopened.close()


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

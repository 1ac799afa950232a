"""The engine side of a re-embedding (`memory.reembed`, `memory.stores.switchable`) on real embedded stores and
real models (WordLlama to the Universal Sentence Encoder): catch-up passes replay what changed during the copy,
purges included; verification names a namespace that differs; after a switch, a change computed with the old
model is made right instead of failing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from memory.embedders import UseEmbedder, WordLlamaEmbedder
from memory.embedders.sparse import Bm25Encoder
from memory.pipeline import for_embedder
from memory.ports import RecallFilter
from memory.reembed.copy import Reembedding
from memory.stores.edge import EdgeVectorStore
from memory.stores.switchable import SwitchableStore
from tests.memory.conftest import START, everything, make_memory, scope

NOW = START

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def use() -> UseEmbedder:
    return UseEmbedder()


@pytest.fixture
async def stores(
    tmp_path: Path, embedder: WordLlamaEmbedder, use: UseEmbedder
) -> AsyncIterator[tuple[SwitchableStore, EdgeVectorStore]]:
    old = EdgeVectorStore.open(tmp_path / "vectors", model_id=embedder.model_id, dimension=embedder.dimension)
    new = EdgeVectorStore.open(tmp_path / "vectors-use", model_id=use.model_id, dimension=use.dimension)
    yield SwitchableStore(old, embedder.model_id, embedder.dimension), new
    await old.close()
    await new.close()


def job(vectors: SwitchableStore, target: EdgeVectorStore, use: UseEmbedder) -> Reembedding:
    return Reembedding(
        vectors.active, target, use, for_embedder(use.model_id), lambda tenant: scope(tenant, admin=True)
    )


async def put(store: SwitchableStore | EdgeVectorStore, embedder: WordLlamaEmbedder, text: str, ns: str) -> str:
    memory = make_memory(text, tenant="acme", namespace=ns)
    [vector] = await embedder.embed_documents([text])
    await store.upsert(scope("acme", admin=True), [(memory, vector, Bm25Encoder().document(text))])
    return memory.id


async def test_catch_up_replays_a_purge_a_delete_and_the_changes_made_during_the_copy(
    stores: tuple[SwitchableStore, EdgeVectorStore], embedder: WordLlamaEmbedder, use: UseEmbedder
) -> None:
    vectors, target = stores
    admin = scope("acme", admin=True)
    for i in range(5):
        await put(vectors, embedder, f"Fact {i} about the harbour", "user:1")
    kept = await put(vectors, embedder, "The boat is called Marlin", "user:2")
    erased = await put(vectors, embedder, "The boat's spare key is under the mat", "user:2")
    vectors.start_recording()
    reembedding = job(vectors, target, use)
    await reembedding.copy_all()
    await vectors.purge(admin, "user:1")  # during the migration: a purge, a write after it, a forget
    later = await put(vectors, embedder, "A fact written after the purge", "user:1")
    forgotten = await vectors.get(admin, kept)
    assert forgotten is not None
    await vectors.update(admin, replace(forgotten, deleted_at=NOW))
    assert await vectors.delete(admin, [erased]) == 1  # erased during the migration: gone from the new index too
    await reembedding.catch_up(vectors.take_changes())

    checked = await reembedding.verify()
    copied = {m.id: m for m in await everything(target, "acme")}
    assert checked.mismatches == [] and checked.total == 2
    assert set(copied) == {later, kept} and copied[kept].deleted_at == NOW
    assert {m.embedding_model for m in copied.values()} == {use.model_id}


async def test_verification_names_a_namespace_changed_behind_the_recording(
    stores: tuple[SwitchableStore, EdgeVectorStore], embedder: WordLlamaEmbedder, use: UseEmbedder
) -> None:
    vectors, target = stores
    await put(vectors, embedder, "Copied before the change", "user:1")
    reembedding = job(vectors, target, use)
    await reembedding.copy_all()
    await put(vectors.active, embedder, "Written around the proxy", "team:1")  # as another process would

    [wrong] = (await reembedding.verify()).mismatches
    assert (wrong.tenant, wrong.namespace, wrong.old, wrong.new) == ("acme", "team:1", 1, 0)


async def test_after_a_switch_a_change_computed_with_the_old_model_is_made_right(
    stores: tuple[SwitchableStore, EdgeVectorStore], embedder: WordLlamaEmbedder, use: UseEmbedder
) -> None:
    vectors, target = stores
    admin = scope("acme", admin=True)
    reembedding = job(vectors, target, use)
    async with vectors.paused(5):
        old = await vectors.switch(target, use.model_id, use.dimension, reembedding.restamp)
    assert old is not target and vectors.active is target

    late = await put(vectors, embedder, "The ferry leaves at noon", "user:1")  # a 256-d WordLlama vector
    stored = await vectors.get(admin, late)
    query = await embedder.embed_query("ferry noon")
    flt = RecallFilter(now=NOW)
    by_keyword = await vectors.search(admin, ("user:1",), query, 5, flt, Bm25Encoder().query("ferry noon"))
    nothing = await vectors.search(admin, ("user:1",), query, 5, flt)
    by_meaning = await vectors.search(admin, ("user:1",), await use.embed_query("ferry"), 5, flt)
    assert stored is not None and stored.embedding_model == use.model_id  # re-embedded with the new model
    assert [h.memory.id for h in by_keyword] == [late] and nothing == []
    assert [h.memory.id for h in by_meaning] == [late]

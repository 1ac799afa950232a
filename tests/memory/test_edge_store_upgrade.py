"""An embedded store written before hybrid recall (dense vector only) gains the BM25 sparse vector when opened."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import qdrant_edge as qe

from memory.ports import RecallFilter, SparseVector
from memory.stores.common import DENSE, SPARSE
from memory.stores.edge import EdgeVectorStore
from memory.stores.edge_shard import META_FILE
from memory.stores.payload import KEYWORD_FIELDS, TENANT_FIELD, to_payload
from tests.memory.conftest import START, make_memory, scope

pytestmark = pytest.mark.anyio
MODEL, DIM = "old-model", 4


def create_pre_hybrid_store(path: Path, tenant: str) -> str:
    """A store as the dense-only version laid it out, holding one memory; returns its id."""
    path.mkdir(parents=True)
    config = qe.EdgeConfig(vectors={DENSE: qe.EdgeVectorParams(size=DIM, distance=qe.Distance.Cosine)})
    shard = qe.EdgeShard.create(str(path / "shard"), config)
    shard.update(qe.UpdateOperation.create_field_index(TENANT_FIELD, qe.KeywordIndexParams(is_tenant=True)))
    for field in KEYWORD_FIELDS[:-1]:  # the attributes index came with the pipeline
        shard.update(qe.UpdateOperation.create_field_index(field, qe.PayloadSchemaType.Keyword))
    memory = make_memory("The user lives in Lisbon", tenant=tenant)
    shard.update(qe.UpdateOperation.upsert_points([qe.Point(memory.id, {DENSE: [1.0, 0, 0, 0]}, to_payload(memory))]))
    shard.flush()
    shard.close()
    (path / META_FILE).write_text(json.dumps({"embedding_model": MODEL, "dimension": DIM, "vector": DENSE}))
    return memory.id


async def test_opening_a_dense_only_store_adds_the_keyword_vector_and_keeps_every_memory(
    tmp_path: Path, acme: str
) -> None:
    path = tmp_path / "store"
    old_id = create_pre_hybrid_store(path, acme)
    writer = scope(acme, write=["user:1"])

    store = EdgeVectorStore.open(path, model_id=MODEL, dimension=DIM)
    try:
        new = make_memory("The user's order is ZX-4471", tenant=acme, attributes=["user|order"])
        await store.upsert(writer, [(new, [0, 1.0, 0, 0], SparseVector((4471,), (1.0,)))])
        now = RecallFilter(now=START)

        by_meaning = await store.search(writer, ("user:1",), [1.0, 0, 0, 0], 5, now)
        by_keyword = await store.search(writer, ("user:1",), [1.0, 0, 0, 0], 5, now, SparseVector((4471,), (1.0,)))
        by_attribute = await store.search(
            writer, ("user:1",), [1.0, 0, 0, 0], 5, RecallFilter(now=START, attributes=("user|order",))
        )
    finally:
        await store.close()

    assert {h.memory.id for h in by_meaning} == {old_id, new.id}
    assert [h.memory.id for h in by_keyword] == [new.id]  # the old memory has no keyword vector
    assert [h.memory.id for h in by_attribute] == [new.id]
    assert json.loads((path / META_FILE).read_text())["sparse_vector"] == SPARSE
    reopened = EdgeVectorStore.open(path, model_id=MODEL, dimension=DIM)  # and it opens again as a current store
    await reopened.close()

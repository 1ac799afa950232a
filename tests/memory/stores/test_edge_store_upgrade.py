"""An embedded store written by an earlier version opens as a current one: one from before hybrid recall (dense
vector only) gains the BM25 sparse vector; one from before issue #33 (no search thread count in its engine config,
payloads with nulls and empty lists) gets the thread count, and its memories read back and filter as before."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import qdrant_edge as qe

from memory.ports import RecallFilter, SparseVector
from memory.stores.common import DENSE, SPARSE
from memory.stores.edge import EdgeVectorStore
from memory.stores.edge_shard import META_FILE, available_cpus, search_threads
from memory.stores.payload import KEYWORD_FIELDS, TENANT_FIELD, to_payload
from tests.memory.conftest import START, make_memory, scope
from tests.memory.stores.test_payload import FULL, earlier_layout

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


def engine_config(path: Path) -> dict[str, Any]:
    return dict(json.loads((path / "shard" / "edge_config.json").read_text()))


async def test_a_store_from_before_search_threads_and_compact_payloads_opens_with_its_memories_as_they_were(
    tmp_path: Path, acme: str
) -> None:
    path = tmp_path / "store"
    store = EdgeVectorStore.open(path, model_id=MODEL, dimension=DIM, search_threads=2)  # the current layout...
    await store.close()
    config = engine_config(path)
    del config["max_search_threads"]  # ...as the previous version left it: no thread count
    (path / "shard" / "edge_config.json").write_text(json.dumps(config))
    shard = qe.EdgeShard.load(str(path / "shard"))
    live = replace(FULL, tenant=acme, namespace="user:1", deleted_at=None, delete_reason=None)
    live = replace(live, superseded_by=None, archived_at=None, archive_reason=None, expires_at=START + timedelta(9))
    bare = make_memory("The user walks the dog", tenant=acme)
    points = [qe.Point(m.id, {DENSE: [1.0, 0, 0, 0]}, earlier_layout(m)) for m in (live, bare)]
    shard.update(qe.UpdateOperation.upsert_points(points))
    shard.flush()
    shard.close()
    reader = scope(acme, read=["user:1"])

    reopened = EdgeVectorStore.open(path, model_id=MODEL, dimension=DIM, search_threads=1)
    try:
        assert engine_config(path)["max_search_threads"] == 1
        assert engine_config(path)["sparse_vectors"] == config["sparse_vectors"]
        assert await reopened.get(reader, live.id) == live
        assert await reopened.get(reader, bare.id) == bare
        hits = await reopened.search(reader, ("user:1",), [1.0, 0, 0, 0], 5, RecallFilter(now=START))
        assert {h.memory.id for h in hits} == {live.id, bare.id}
        tagged = await reopened.search(reader, ("user:1",), [1.0, 0, 0, 0], 5, RecallFilter(now=START, tags=("home",)))
        assert [h.memory for h in tagged] == [live]
        later = await reopened.search(reader, ("user:1",), [1.0, 0, 0, 0], 5, RecallFilter(now=START + timedelta(10)))
        assert [h.memory for h in later] == [bare]  # its expiry stored as before
    finally:
        await reopened.close()
    again = EdgeVectorStore.open(path, model_id=MODEL, dimension=DIM, search_threads=3)  # each open sets its own
    await again.close()
    assert engine_config(path)["max_search_threads"] == 3


@pytest.mark.parametrize(("cpus", "threads"), [(1, 1), (2, 1), (3, 2), (16, 15)])
def test_search_threads_are_one_on_two_cpus_or_fewer_else_one_per_cpu_but_one(cpus: int, threads: int) -> None:
    assert search_threads(None, cpus) == threads
    assert search_threads(4, cpus) == 4  # a configured count wins


@pytest.mark.parametrize(("quota", "cpus"), [("150000 100000", 2), ("50000 100000", 1), ("max 100000", None)])
def test_available_cpus_are_bounded_by_a_cgroup_cpu_quota(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, quota: str, cpus: int | None
) -> None:
    quota_file = tmp_path / "cpu.max"
    quota_file.write_text(quota + "\n")
    monkeypatch.setattr("memory.stores.edge_shard.CPU_QUOTA_FILE", quota_file)
    affinity = len(os.sched_getaffinity(0))

    assert available_cpus() == min(affinity, cpus or affinity)

"""The embedded engine's shard on disk: created with the dense and keyword vectors and the payload indexes, or
loaded and brought up to date; the embedding model and vector size recorded beside it (`store.json`); and the size
of its search thread pool, given at every open (`search_threads`)."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import qdrant_edge as qe

from memory.errors import StoreConfigMismatch
from memory.stores.common import DENSE, SPARSE
from memory.stores.payload import FLOAT_FIELDS, KEYWORD_FIELDS, TENANT_FIELD

META_FILE = "store.json"
CPU_QUOTA_FILE = Path("/sys/fs/cgroup/cpu.max")  # cgroup v2: "<quota> <period>" or "max <period>"


def available_cpus() -> int:
    """The CPUs this process may use: those it may run on, fewer under a cgroup CPU quota (a container's limit)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    try:
        quota, period = CPU_QUOTA_FILE.read_text().split()[:2]
        if quota != "max":
            cpus = min(cpus, math.ceil(int(quota) / int(period)))
    except (OSError, ValueError):  # no cgroup v2 quota to read
        pass
    return max(1, cpus)


def search_threads(configured: int | None = None, cpus: int | None = None) -> int:
    """The engine's search threads: `configured`, or sized to the machine: 1 with 2 CPUs or fewer, else one per
    CPU but one. Each query's segment reads fan out over the pool; on 2 cores the wake-ups of more threads cost more
    CPU than the parallel reads save (issue #33: engine CPU per recall x0.79-1.00 with one thread)."""
    if configured is not None:
        return configured
    cpus = available_cpus() if cpus is None else cpus
    return 1 if cpus <= 2 else cpus - 1


def open_shard(path: Path, model_id: str, dimension: int, threads: int | None = None) -> Any:
    """The shard in `path` (created with its indexes and meta file when new) with `search_threads(threads)`
    search threads; refused when it was built with another embedder. A store from an earlier version gets the
    payload indexes and the keyword vector added since."""
    meta_path = path / META_FILE
    shard_dir = path / "shard"
    dense = {DENSE: qe.EdgeVectorParams(size=dimension, distance=qe.Distance.Cosine)}
    pool = search_threads(threads)
    if meta_path.exists():
        meta = json.loads(meta_path.read_text())
        if meta.get("embedding_model") != model_id or meta.get("dimension") != dimension:
            raise StoreConfigMismatch(
                f"the store at {path} was built with {meta.get('embedding_model')} "
                f"({meta.get('dimension')}-d) but the configured embedder is {model_id} ({dimension}-d); "
                "use the same model or a new data directory"
            )
        # The engine persists the config it is given and wants a vector in it: the dense one, as created (checked
        # against the segments); the keyword vector is inherited, so a store from before hybrid recall still loads.
        shard = qe.EdgeShard.load(str(shard_dir), qe.EdgeConfig(vectors=dense, max_search_threads=pool))
        _create_indexes(shard, set(shard.info().payload_schema))  # a field added since
        if meta.get("sparse_vector") != SPARSE:  # a store from before hybrid recall: add the keyword vector
            shard.update(qe.UpdateOperation.create_sparse_vector(SPARSE, modifier=qe.Modifier.Idf))
            shard.flush()
            _write_meta(meta_path, {**meta, "sparse_vector": SPARSE})
        return shard
    config = qe.EdgeConfig(
        vectors=dense,
        sparse_vectors={SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
        max_search_threads=pool,
    )
    shard = qe.EdgeShard.create(str(shard_dir), config)
    _create_indexes(shard, set())
    shard.flush()
    meta = {"embedding_model": model_id, "dimension": dimension, "vector": DENSE, "sparse_vector": SPARSE}
    _write_meta(meta_path, meta)
    return shard


def _create_indexes(shard: Any, existing: set[str]) -> None:
    if TENANT_FIELD not in existing:
        shard.update(qe.UpdateOperation.create_field_index(TENANT_FIELD, qe.KeywordIndexParams(is_tenant=True)))
    # Only the namespace filter benefits from extra HNSW links per value; building them for every other
    # field doubled the index build at 100k memories (bench/FINDINGS.md) without speeding up search.
    for field in KEYWORD_FIELDS:
        if field not in existing:
            params = qe.KeywordIndexParams(enable_hnsw=field == "namespace")
            shard.update(qe.UpdateOperation.create_field_index(field, params))
    for field in FLOAT_FIELDS:
        if field not in existing:
            shard.update(qe.UpdateOperation.create_field_index(field, qe.FloatIndexParams(enable_hnsw=False)))


def _write_meta(meta_path: Path, meta: dict[str, Any]) -> None:
    tmp = meta_path.with_suffix(".tmp")
    tmp.write_text(json.dumps(meta))
    os.replace(tmp, meta_path)

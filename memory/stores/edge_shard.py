"""The embedded engine's shard on disk: created with the dense and keyword vectors and the payload indexes, or
loaded and brought up to date; the embedding model and vector size recorded beside it (`store.json`)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import qdrant_edge as qe

from memory.errors import StoreConfigMismatch
from memory.stores.common import DENSE, SPARSE
from memory.stores.payload import FLOAT_FIELDS, KEYWORD_FIELDS, TENANT_FIELD

META_FILE = "store.json"


def open_shard(path: Path, model_id: str, dimension: int) -> Any:
    """The shard in `path` (created with its indexes and meta file when new); refused when it was built with
    another embedder. A store from an earlier version gets the payload indexes and the keyword vector added since."""
    meta_path = path / META_FILE
    shard_dir = path / "shard"
    if meta_path.exists():
        meta = json.loads(meta_path.read_text())
        if meta.get("embedding_model") != model_id or meta.get("dimension") != dimension:
            raise StoreConfigMismatch(
                f"the store at {path} was built with {meta.get('embedding_model')} "
                f"({meta.get('dimension')}-d) but the configured embedder is {model_id} ({dimension}-d); "
                "use the same model or a new data directory"
            )
        shard = qe.EdgeShard.load(str(shard_dir))
        _create_indexes(shard, set(shard.info().payload_schema))  # a field added since
        if meta.get("sparse_vector") != SPARSE:  # a store from before hybrid recall: add the keyword vector
            shard.update(qe.UpdateOperation.create_sparse_vector(SPARSE, modifier=qe.Modifier.Idf))
            shard.flush()
            _write_meta(meta_path, {**meta, "sparse_vector": SPARSE})
        return shard
    config = qe.EdgeConfig(
        vectors={DENSE: qe.EdgeVectorParams(size=dimension, distance=qe.Distance.Cosine)},
        sparse_vectors={SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
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

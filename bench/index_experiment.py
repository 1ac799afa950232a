"""`python -m bench.index_experiment [--size N]`: the experiment behind one proposed fix (not part of `make bench`).

How long the index build (`maintain()`: flush + optimize) takes with the store's payload indexes as created
today, versus the same indexes with `enable_hnsw=False` on every field but the tenant. Qdrant builds, besides
the main HNSW graph, extra graph links per value of each indexed payload field whose points exceed the full-scan
threshold (`status=active`, each `kind`, each tag, `created_at` ranges...). Both shards are created by
`EdgeVectorStore.open` (the product's own layout); variant B then recreates the non-tenant payload indexes
without HNSW links before any point is written. Same memories, same vectors, same batches.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import qdrant_edge as qe

from bench import corpus
from bench.config import loader_scope, reader_scope
from bench.procinfo import disk_bytes
from bench.run import quiet_logging
from memory.embedders import build_embedder
from memory.ports import RecallFilter
from memory.stores.edge import EdgeVectorStore
from memory.stores.payload import TENANT_FIELD


def without_payload_hnsw(store: EdgeVectorStore) -> None:
    shard: Any = store._shard
    for field, info in shard.info().payload_schema.items():
        if field == TENANT_FIELD:
            continue
        floats = "float" in str(info.data_type).lower()
        params: Any = qe.FloatIndexParams(enable_hnsw=False) if floats else qe.KeywordIndexParams(enable_hnsw=False)
        shard.update(qe.UpdateOperation.delete_field_index(field))
        shard.update(qe.UpdateOperation.create_field_index(field, params))
    shard.flush()


async def experiment(size: int, workdir: Path) -> list[str]:
    embedder = build_embedder("wordllama")
    generator = corpus.CorpusGenerator()
    texts = generator.texts(size)
    vectors = await embedder.embed_documents(texts)
    memories = list(generator.memories(texts, embedder.model_id))
    try:
        from memory.embedders.sparse import Bm25Encoder

        keywords: Any = Bm25Encoder()
        items: list[Any] = [(m, v, keywords.document(m.content)) for m, v in zip(memories, vectors, strict=True)]
        vectors_kind = "dense + keyword vectors"
    except ImportError:  # a store without keyword vectors
        items = list(zip(memories, vectors, strict=True))
        vectors_kind = "dense vectors"
    query_vectors = [await embedder.embed_query(q) for q in corpus.queries(200)]
    namespaces = tuple(corpus.namespaces())
    lines = [f"{size} memories ({vectors_kind}, 100 namespaces):", ""]
    lines += ["| variant | upsert s | index build s | store search p50 ms | disk MiB |", "|---|---:|---:|---:|---:|"]
    for variant in ("payload indexes as created today", "enable_hnsw=False except tenant"):
        path = workdir / variant.split()[0]
        store = EdgeVectorStore.open(path, model_id=embedder.model_id, dimension=embedder.dimension)
        if variant.startswith("enable"):
            without_payload_hnsw(store)
        started = time.perf_counter()
        for i in range(0, size, 1000):
            await store.upsert(loader_scope(), items[i : i + 1000])
        load_s = time.perf_counter() - started
        started = time.perf_counter()
        await store.maintain()
        index_s = time.perf_counter() - started
        scope = reader_scope(namespaces)
        times = []
        for vector in query_vectors:
            t0 = time.perf_counter()
            await store.search(scope, namespaces, vector, 16, RecallFilter(now=datetime.now(UTC)))
            times.append(time.perf_counter() - t0)
        disk = disk_bytes(path) / 2**20
        await store.close()
        p50 = statistics.median(times) * 1000
        lines.append(f"| {variant} | {load_s:.1f} | {index_s:.1f} | {p50:.2f} | {disk:.0f} |")
        shutil.rmtree(path, ignore_errors=True)
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.index_experiment")
    parser.add_argument("--size", type=int, default=100_000)
    args = parser.parse_args(argv)
    quiet_logging()
    with tempfile.TemporaryDirectory(prefix="hindsight-index-") as tmp:
        lines = anyio.run(experiment, args.size, Path(tmp))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

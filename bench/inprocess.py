"""The in-process phases of the benchmark: bulk loading the corpus, recall timed at four depths (service, store
searches replayed, engine queries replayed, query encoding) query by query, and in-process writes."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import anyio
import anyio.to_thread

from bench import corpus
from bench.config import WRITER, Ingest, Throughput, loader_scope, reader_scope, writer_scope
from bench.stats import Samples
from gateway.services.runtime import Runtime
from memory.requests import RecallRequest, WriteRequest
from memory.scope import NamespaceScope


async def bulk_load(rt: Runtime, generator: corpus.CorpusGenerator, target: int, batch: int) -> Ingest:
    """Embed with the real embedder and upsert in batches until the corpus holds `target` memories. Each item
    carries what `MemoryService.write` stores: the dense vector, and the keyword (sparse) vector when the
    service runs hybrid recall. No repeat or conflict checks: this is the bulk path, timed apart from writes."""
    ingest = Ingest()
    scope = loader_scope()
    service: Any = rt.memories
    keywords = service.keywords if getattr(service, "hybrid", False) else None
    while generator.produced < target:
        count = min(batch, target - generator.produced)
        t0 = time.perf_counter()
        texts = generator.texts(count)
        t1 = time.perf_counter()
        vectors = await rt.embedder.embed_documents(texts)
        sparse = [keywords.document(text) for text in texts] if keywords is not None else None
        t2 = time.perf_counter()
        memories = list(generator.memories(texts, rt.embedder.model_id))
        if sparse is not None:
            items: list[Any] = list(zip(memories, vectors, sparse, strict=True))
        else:
            items = list(zip(memories, vectors, strict=True))
        t3 = time.perf_counter()
        await rt.store.upsert(scope, items)
        t4 = time.perf_counter()
        ingest.memories += count
        ingest.generate_s += (t1 - t0) + (t3 - t2)
        ingest.embed_s += t2 - t1
        ingest.upsert_s += t4 - t3
    started = time.perf_counter()
    await rt.store.maintain()
    ingest.index_s = time.perf_counter() - started
    return ingest


def edge_store(rt: Runtime) -> Any:
    """The `EdgeVectorStore` under the runtime's store (wrapped for tracing, and always in the `SwitchableStore` a
    re-embedding switches: its active index)."""
    store = getattr(rt.store, "_target", rt.store)
    return getattr(store, "active", store)


Search = tuple[tuple[Any, ...], dict[str, Any]]  # the arguments of one `store.search` call
EngineRead = tuple[str, tuple[Any, ...]]  # one engine call of a search: its shard method and arguments


class _SearchRecorder:
    """Stands in for the service's store for a moment, to record the arguments of the search it sends."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def search(self, *args: Any, **kwargs: Any) -> Any:
        self.calls.append((args, kwargs))
        return await self._store.search(*args, **kwargs)


class _QueryRecorder:
    """Stands in for the engine shard for a moment, to record the reads the store sends: each query request, and
    each retrieval of points by id (a keyword-only search reads the payloads of its new hits that way)."""

    def __init__(self, shard: Any) -> None:
        self._shard = shard
        self.requests: list[EngineRead] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._shard, name)

    def query(self, request: Any) -> Any:
        self.requests.append(("query", (request,)))
        return self._shard.query(request)

    def retrieve(self, *args: Any) -> Any:
        self.requests.append(("retrieve", args))
        return self._shard.retrieve(*args)


async def recorded_queries(
    rt: Runtime, scope: NamespaceScope, queries: Sequence[str]
) -> tuple[list[list[Search]], list[list[EngineRead]]]:
    """For each query: the exact `store.search` calls `MemoryService.recall` makes (two with pseudo-relevance
    feedback; query vectors precomputed), and the exact engine requests those searches send. Replaying them
    gives (c) and the engine-only figure for the same work the service does, whatever the recall mode."""
    service: Any = rt.memories
    recorder = _SearchRecorder(service.store)
    service.store = recorder
    searches: list[list[Search]] = []
    try:
        for query in queries:
            made = len(recorder.calls)
            await rt.memories.recall(scope, RecallRequest(query=query))
            await rt.memories.drain()
            searches.append(recorder.calls[made:])
    finally:
        service.store = recorder._store
    if any(not calls for calls in searches):
        raise RuntimeError("MemoryService.recall made no store.search for a query")
    edge = edge_store(rt)
    shard = edge._shard
    engine = _QueryRecorder(shard)
    edge._shard = engine
    groups: list[list[EngineRead]] = []
    try:
        for calls in searches:
            sent = len(engine.requests)
            await store_searches(rt, calls)
            groups.append(engine.requests[sent:])
    finally:
        edge._shard = shard
    if any(not group for group in groups):
        raise RuntimeError("EdgeVectorStore.search sent no engine query for a search")
    return searches, groups


async def store_searches(rt: Runtime, calls: Sequence[Search]) -> list[Any]:
    """Replay the store searches of one recall, in order; every hit of all of them."""
    return [hit for args, kwargs in calls for hit in await rt.store.search(*args, **kwargs)]


def engine_queries(shard: Any, group: Sequence[EngineRead]) -> list[Any]:
    """Every engine read of one recall's store searches (queries, and retrievals by id), run as sent."""
    return [point for method, args in group for point in getattr(shard, method)(*args)]


async def encode_query(rt: Runtime, query: str) -> None:
    """What recall computes from the query text before the store is asked: the dense embedding, and the
    keyword (sparse) vector when the service runs hybrid recall."""
    await rt.embedder.embed_query(query)
    service: Any = rt.memories
    if getattr(service, "hybrid", False):
        service.keywords.query(query)


async def inprocess_recall(
    rt: Runtime, namespaces: Sequence[str], queries: Sequence[str], warmup: int
) -> dict[str, Samples]:
    """Per query, interleaved so noise hits every path alike: query encoding, engine query, store search (both
    replaying what the service sends, vectors precomputed) and the full `MemoryService.recall`. Access-count
    bumps run in the runtime's task group, as in the server, and are drained outside the timed window."""
    scope = reader_scope(namespaces)
    searches, requests = await recorded_queries(rt, scope, queries)
    shard = edge_store(rt)._shard  # the engine itself: the lower bound
    out = {p: Samples() for p in ("service", "store", "engine", "embed")}
    for i in range(warmup + len(queries)):
        j = i % len(queries)
        query, calls, request = queries[j], searches[j], requests[j]

        t0 = time.perf_counter()
        await encode_query(rt, query)
        t1 = time.perf_counter()
        points = engine_queries(shard, request)
        t2 = time.perf_counter()
        found = await store_searches(rt, calls)
        t3 = time.perf_counter()
        hits = await rt.memories.recall(scope, RecallRequest(query=query))
        t4 = time.perf_counter()
        await rt.memories.drain()
        if not (points and found and hits):
            raise RuntimeError(f"in-process recall of {query!r} found nothing")
        if i >= warmup:
            out["embed"].add(t1 - t0)
            out["engine"].add(t2 - t1)
            out["store"].add(t3 - t2)
            out["service"].add(t4 - t3)
    return out


async def inprocess_writes(rt: Runtime, contents: Sequence[str]) -> Samples:
    scope = writer_scope()
    samples = Samples()
    for content in contents:
        started = time.perf_counter()
        outcome = await rt.memories.write(
            scope, WriteRequest(content=content, subject=WRITER, namespace=corpus.WRITE_NAMESPACE)
        )
        samples.add(time.perf_counter() - started)
        samples.outcomes[outcome.status.value] += 1
    return samples


async def concurrent_service_writes(rt: Runtime, contents: Sequence[str], workers: int) -> Throughput:
    scope = writer_scope()
    queue = list(contents)

    async def worker() -> None:
        while queue:
            content = queue.pop()
            await rt.memories.write(
                scope, WriteRequest(content=content, subject=WRITER, namespace=corpus.WRITE_NAMESPACE)
            )

    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(workers):
            tg.start_soon(worker)
    return Throughput(
        f"`MemoryService.write`, {workers} concurrent writers (in process)",
        len(contents),
        time.perf_counter() - started,
        "one memory per call, the full write path",
    )


# -- through the server ----------------------------------------------------------------------------------------

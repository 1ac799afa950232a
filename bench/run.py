"""`python -m bench [--quick]`: recall and write latency, fan-out, concurrency, memory and disk, and profiles.

Phases, per corpus size (ascending; the corpus grows in place, 100 namespaces of one tenant):

1. in process (`open_runtime`, the same assembly the server uses): bulk-load the new memories (real embedder in
   batches + batched `EdgeVectorStore.upsert`), `store.maintain()` (flush + index build), disk use, then per
   query, interleaved: query embedding, raw engine query, `EdgeVectorStore.search` with the precomputed vector,
   `MemoryService.recall`; single writes; at the largest size also fan-out and concurrent writes;
2. `hindsight serve` in a subprocess over the same directory (the store is locked by one process): recall through
   a real MCP client over TCP, its RSS, fan-out and concurrency at the largest size, single MCP writes;
3. at the largest size, profiles of the recall and write paths (server and in process).

`--quick` runs the same code on small sizes in well under a minute (the smoke test runs it).
"""

from __future__ import annotations

import argparse
import logging
import os
import pickle
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import qdrant_edge as qe

from bench import corpus, profiling
from bench.mcp_load import (
    LoadResult,
    call,
    call_latency,
    concurrent_load,
    http_floor,
    mcp_client,
    recall_latency,
    write_latency,
)
from bench.procinfo import disk_bytes, load_average, machine_info
from bench.server import REPO, ServerProcess
from bench.stats import Samples
from gateway.runtime import Runtime, open_runtime
from memory.evaluation.report import BEGIN as EVAL_BEGIN
from memory.evaluation.report import END as EVAL_END
from memory.evaluation.report import write_section
from memory.requests import RecallRequest, WriteRequest
from memory.scope import NamespaceScope
from memory.stores.edge import scope_conditions
from ops.config import Settings
from tenancy import SCOPE_ADMIN, SCOPE_READ, SCOPE_WRITE, Principal, mint_token, scope_for

SECRET = "bench-secret-0123456789-abcdefghijklmnopqrstuvwxyz"
READER = "bench-reader"
WRITER = "bench-writer"
PATHS = ("mcp", "service", "store", "engine", "embed")


@dataclass
class Config:
    sizes: tuple[int, ...]
    queries: int
    warmup: int
    fanout: tuple[int, ...]
    concurrency: tuple[int, ...]
    load_seconds: float
    writes: int
    concurrent_writes: int
    write_workers: int
    write_clients: int
    batch: int
    profile_seconds: float
    quick: bool
    out: Path
    workdir: Path | None
    keep: bool
    render_only: bool = False


def full_config(out: Path) -> Config:
    return Config(
        sizes=(1_000, 10_000, 100_000),
        queries=300,
        warmup=30,
        fanout=(1, 10, 50),
        concurrency=(1, 8, 32),
        load_seconds=10.0,
        writes=200,
        concurrent_writes=2_000,
        write_workers=16,
        write_clients=8,
        batch=1_000,
        profile_seconds=12.0,
        quick=False,
        out=out,
        workdir=None,
        keep=False,
    )


def quick_config(out: Path) -> Config:
    return Config(
        sizes=(500, 2_000),
        queries=30,
        warmup=5,
        fanout=(1, 10, 50),
        concurrency=(1, 8, 32),
        load_seconds=1.0,
        writes=20,
        concurrent_writes=100,
        write_workers=16,
        write_clients=8,
        batch=500,
        profile_seconds=1.5,
        quick=True,
        out=out,
        workdir=None,
        keep=False,
    )


# -- results ---------------------------------------------------------------------------------------------------
@dataclass
class Ingest:
    memories: int = 0
    generate_s: float = 0.0
    embed_s: float = 0.0
    upsert_s: float = 0.0
    index_s: float = 0.0

    @property
    def load_s(self) -> float:
        return self.generate_s + self.embed_s + self.upsert_s


@dataclass
class SizeResult:
    size: int
    recall: dict[str, Samples] = field(default_factory=dict)  # path -> samples
    ingest: Ingest = field(default_factory=Ingest)
    writes_service: Samples = field(default_factory=Samples)
    writes_mcp: Samples = field(default_factory=Samples)
    disk: dict[str, int] = field(default_factory=dict)
    rss_ready: dict[str, int] = field(default_factory=dict)
    rss_loaded: dict[str, int] = field(default_factory=dict)
    server_start_s: float = 0.0


@dataclass
class Throughput:
    label: str
    count: int
    seconds: float
    note: str = ""

    @property
    def per_second(self) -> float:
        return self.count / self.seconds if self.seconds else 0.0


@dataclass
class Results:
    config: Config
    machine: dict[str, str]
    sizes: list[SizeResult] = field(default_factory=list)
    fanout: dict[int, dict[str, Samples]] = field(default_factory=dict)  # granted namespaces -> path -> samples
    concurrency: list[LoadResult] = field(default_factory=list)
    throughput: list[Throughput] = field(default_factory=list)
    baseline_rss: dict[str, int] = field(default_factory=dict)
    baseline_disk: int = 0
    profiles: list[profiling.Profile] = field(default_factory=list)
    checks: dict[str, str] = field(default_factory=dict)
    corpus_words: tuple[int, int, int] = (0, 0, 0)
    recall_mode: str = "dense"
    load_before: str = ""
    load_after: str = ""
    wall_s: float = 0.0


# -- scopes and tokens -----------------------------------------------------------------------------------------
def reader_scope(namespaces: Sequence[str]) -> NamespaceScope:
    principal = Principal(
        subject=READER, tenant=corpus.TENANT, read_namespaces=tuple(namespaces), scopes=frozenset({SCOPE_READ})
    )
    return scope_for(principal)


def writer_scope() -> NamespaceScope:
    principal = Principal(
        subject=WRITER,
        tenant=corpus.TENANT,
        write_namespaces=(corpus.WRITE_NAMESPACE,),
        scopes=frozenset({SCOPE_READ, SCOPE_WRITE}),
    )
    return scope_for(principal)


def loader_scope() -> NamespaceScope:
    return scope_for(Principal(subject=corpus.SUBJECT, tenant=corpus.TENANT, scopes=frozenset({SCOPE_ADMIN})))


def reader_token(namespaces: Sequence[str]) -> str:
    return mint_token(
        SECRET, tenant=corpus.TENANT, subject=READER, read=list(namespaces), write=[], ttl_seconds=12 * 3600
    )


def writer_token() -> str:
    return mint_token(
        SECRET, tenant=corpus.TENANT, subject=WRITER, read=[], write=[corpus.WRITE_NAMESPACE], ttl_seconds=12 * 3600
    )


def settings_for(data_dir: Path) -> Settings:
    return Settings(  # type: ignore[call-arg]
        _env_file=None,
        data_dir=data_dir,
        jwt_secret=SECRET,
        rate_limit_enabled=False,
        maintenance_interval_seconds=3600,  # the benchmark calls maintain() itself
        log_level="warning",
    )


# -- in process ------------------------------------------------------------------------------------------------
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
    """The `EdgeVectorStore` under the runtime's store (which may be wrapped for tracing)."""
    return getattr(rt.store, "_target", rt.store)


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
    """Stands in for the engine shard for a moment, to record the request objects the store sends."""

    def __init__(self, shard: Any) -> None:
        self._shard = shard
        self.requests: list[Any] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._shard, name)

    def query(self, request: Any) -> Any:
        self.requests.append(request)
        return self._shard.query(request)


Search = tuple[tuple[Any, ...], dict[str, Any]]  # the arguments of one `store.search` call


async def recorded_queries(
    rt: Runtime, scope: NamespaceScope, queries: Sequence[str]
) -> tuple[list[list[Search]], list[list[Any]]]:
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
    groups: list[list[Any]] = []
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


def engine_queries(shard: Any, group: Sequence[Any]) -> list[Any]:
    """Every engine query of one recall's store searches (a dense and a keyword query each), run as sent."""
    return [point for request in group for point in shard.query(request)]


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
async def start_server(data_dir: Path, log: Path) -> ServerProcess:
    server = ServerProcess(data_dir, SECRET, log)
    await anyio.to_thread.run_sync(server.start)
    return server


async def baseline_server(cfg: Config, results: Results, data_dir: Path, log: Path) -> None:
    """RSS of a server on an empty store, after serving a few calls (the 'before loading' figure)."""
    server = await start_server(data_dir, log)
    try:
        async with mcp_client(server.url, reader_token(corpus.namespaces())) as client:
            for query in corpus.queries(20):
                await call(client, "recall_memory", {"query": query})
        results.baseline_rss = server.memory_kib()
    finally:
        await anyio.to_thread.run_sync(server.stop)
    results.baseline_disk = disk_bytes(data_dir)


# -- phases ----------------------------------------------------------------------------------------------------
async def size_stage(
    cfg: Config,
    results: Results,
    size: int,
    data_dir: Path,
    generator: corpus.CorpusGenerator,
    log: Path,
) -> None:
    largest = size == max(cfg.sizes)
    result = SizeResult(size)
    results.sizes.append(result)
    queries = corpus.queries(cfg.queries)
    all_namespaces = corpus.namespaces()
    say(f"[{size}] loading {size - generator.produced} memories")

    async with open_runtime(settings_for(data_dir)) as rt:
        if getattr(rt.memories, "hybrid", False):
            results.recall_mode = (
                "hybrid (a dense and a BM25 keyword query, then a keyword query with pseudo-relevance feedback; "
                "scores mixed in the engine)"
            )
        result.ingest = await bulk_load(rt, generator, size, cfg.batch)
        result.disk = disk_breakdown(data_dir)
        say(f"[{size}] loaded in {result.ingest.load_s:.1f}s + index {result.ingest.index_s:.1f}s; in-process recall")
        result.recall.update(await inprocess_recall(rt, all_namespaces, queries, cfg.warmup))
        if largest:
            for granted in cfg.fanout:
                say(f"[{size}] fan-out over {granted} namespaces (in process)")
                results.fanout.setdefault(granted, {}).update(
                    await inprocess_recall(rt, all_namespaces[:granted], queries, cfg.warmup)
                )
        result.writes_service = await inprocess_writes(rt, corpus.unique_sentences(cfg.writes, size, f"svc{size}"))
        if largest:
            contents = corpus.unique_sentences(cfg.concurrent_writes, size + 1, f"csvc{size}")
            results.throughput.append(await concurrent_service_writes(rt, contents, cfg.write_workers))
        await rt.store.maintain()

    say(f"[{size}] server: MCP recall")
    server = await start_server(data_dir, log)
    try:
        result.server_start_s = server.started_in
        result.rss_ready = server.memory_kib()
        async with mcp_client(server.url, reader_token(all_namespaces)) as client:
            result.recall["mcp"] = await recall_latency(client, queries, cfg.warmup)
            result.recall["mcp_floor"] = await call_latency(client, "whoami", {}, cfg.queries, cfg.warmup)
        result.recall["http_floor"] = await http_floor(server.url.removesuffix("/mcp"), cfg.queries, cfg.warmup)
        if largest:
            for granted in cfg.fanout:
                say(f"[{size}] fan-out over {granted} namespaces (MCP)")
                async with mcp_client(server.url, reader_token(all_namespaces[:granted])) as client:
                    results.fanout[granted]["mcp"] = await recall_latency(client, queries, cfg.warmup)
            token = reader_token(all_namespaces)
            for clients in cfg.concurrency:
                say(f"[{size}] {clients} concurrent MCP clients")
                results.concurrency.append(
                    await concurrent_load(server.url, token, clients, queries, cfg.load_seconds, server.cpu_seconds)
                )
        result.rss_loaded = server.memory_kib()
        say(f"[{size}] MCP writes")
        async with mcp_client(server.url, writer_token()) as client:
            contents = corpus.unique_sentences(cfg.writes, size + 2, f"mcp{size}")
            result.writes_mcp = await write_latency(client, contents, corpus.WRITE_NAMESPACE)
        if largest:
            contents = corpus.unique_sentences(50_000 if not cfg.quick else 2_000, size + 3, f"cmcp{size}")
            load = await concurrent_load(
                server.url,
                writer_token(),
                cfg.write_clients,
                contents,
                cfg.load_seconds,
                server.cpu_seconds,
                tool="write_memory",
                arguments=lambda i, _q: {"content": contents[i % len(contents)], "namespace": corpus.WRITE_NAMESPACE},
            )
            results.throughput.append(
                Throughput(
                    f"`write_memory` over HTTP MCP, {cfg.write_clients} concurrent clients",
                    load.requests,
                    load.seconds,
                    f"p50 {load.samples.p50:.1f} ms, p99 {load.samples.p99:.1f} ms per call",
                )
            )
    finally:
        await anyio.to_thread.run_sync(server.stop)


def disk_breakdown(data_dir: Path) -> dict[str, int]:
    shard = data_dir / "vectors" / "shard"
    return {
        "total": disk_bytes(data_dir),
        "segments": disk_bytes(shard / "segments"),
        "wal": disk_bytes(shard / "wal"),
    }


async def profile_stage(cfg: Config, results: Results, data_dir: Path, log: Path, profile_dir: Path) -> None:
    """Profiles at the largest size: the server under MCP recall and write load (py-spy), and the same paths in
    process. Without py-spy, only the in-process paths are profiled, with cProfile."""
    queries = corpus.queries(cfg.queries)
    all_namespaces = corpus.namespaces()
    size = max(cfg.sizes)
    spy = profiling.py_spy_path() is not None
    deadline_s = cfg.profile_seconds

    if spy:
        say("[profile] server under MCP recall and write")
        server = await start_server(data_dir, log)
        try:
            async with mcp_client(server.url, reader_token(all_namespaces)) as client:
                await recall_latency(client, queries[:10], 0)  # warm

                async def mcp_recalls() -> int:
                    n, end = 0, time.perf_counter() + deadline_s
                    while time.perf_counter() < end:
                        await call(client, "recall_memory", {"query": queries[n % len(queries)]})
                        n += 1
                    return n

                results.profiles.append(
                    await profiling.py_spy_profile(
                        server.pid,
                        f"recall_memory over HTTP MCP, server process, {size} memories, one client",
                        mcp_recalls,
                        profile_dir / "server-recall.txt",
                        attach_s=min(1.0, deadline_s),
                    )
                )
            async with mcp_client(server.url, writer_token()) as client:
                contents = corpus.unique_sentences(20_000 if not cfg.quick else 500, size + 4, "prof-mcp")

                async def mcp_writes() -> int:
                    n, end = 0, time.perf_counter() + deadline_s
                    while time.perf_counter() < end and n < len(contents):
                        arguments = {"content": contents[n], "namespace": corpus.WRITE_NAMESPACE}
                        await call(client, "write_memory", arguments)
                        n += 1
                    return n

                results.profiles.append(
                    await profiling.py_spy_profile(
                        server.pid,
                        f"write_memory over HTTP MCP, server process, {size} memories, one client",
                        mcp_writes,
                        profile_dir / "server-write.txt",
                        attach_s=min(1.0, deadline_s),
                    )
                )
        finally:
            await anyio.to_thread.run_sync(server.stop)

    say("[profile] in process")
    async with open_runtime(settings_for(data_dir)) as rt:
        scope = reader_scope(all_namespaces)
        wscope = writer_scope()
        for query in queries[:10]:
            await rt.memories.recall(scope, RecallRequest(query=query))

        async def recalls() -> int:
            n, end = 0, time.perf_counter() + deadline_s
            while time.perf_counter() < end:
                await rt.memories.recall(scope, RecallRequest(query=queries[n % len(queries)]))
                n += 1
            await rt.memories.drain()
            return n

        contents = corpus.unique_sentences(20_000 if not cfg.quick else 500, size + 5, "prof-svc")

        async def writes() -> int:
            n, end = 0, time.perf_counter() + deadline_s
            while time.perf_counter() < end and n < len(contents):
                request = WriteRequest(content=contents[n], subject=WRITER, namespace=corpus.WRITE_NAMESPACE)
                await rt.memories.write(wscope, request)
                n += 1
            return n

        recall_title = f"MemoryService.recall in process, {size} memories"
        write_title = f"MemoryService.write in process, {size} memories"
        if spy:
            pid = os.getpid()
            results.profiles.append(
                await profiling.py_spy_profile(
                    pid, recall_title, recalls, profile_dir / "inproc-recall.txt", attach_s=min(1.0, deadline_s)
                )
            )
            results.profiles.append(
                await profiling.py_spy_profile(
                    pid, write_title, writes, profile_dir / "inproc-write.txt", attach_s=min(1.0, deadline_s)
                )
            )
        else:
            results.profiles.append(await profiling.cprofile_profile(recall_title, recalls))
            results.profiles.append(await profiling.cprofile_profile(write_title, writes))

        results.checks.update(await micro_checks(rt, queries))


async def micro_checks(rt: Runtime, queries: Sequence[str]) -> dict[str, str]:
    """Small measurements behind the proposed fixes (none of them changes product code). Medians."""
    from memory.stores.payload import from_payload

    checks: dict[str, str] = {}

    def median_of(fn: Any, repeat: int) -> float:
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return statistics.median(times)

    async def amedian_of(fn: Any, repeat: int) -> float:
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            await fn()
            times.append(time.perf_counter() - t0)
        return statistics.median(times)

    embedder: Any = rt.embedder
    model = embedder._model
    texts = corpus.CorpusGenerator(seed=99).texts(2_000)
    checks["embed 2,000 texts: wordllama model alone (numpy array)"] = (
        f"{median_of(lambda: model.embed(texts, norm=True), 5) * 1000:.0f} ms"
    )
    checks["embed 2,000 texts: `WordLlamaEmbedder._embed` (float() per element into lists)"] = (
        f"{median_of(lambda: embedder._embed(texts), 5) * 1000:.0f} ms"
    )
    checks["embed 2,000 texts: model + `ndarray.tolist()`"] = (
        f"{median_of(lambda: model.embed(texts, norm=True).tolist(), 5) * 1000:.0f} ms"
    )
    one = [queries[0]]
    checks["embed one query: `_embed` / model + `tolist()`"] = (
        f"{median_of(lambda: embedder._embed(one), 300) * 1e6:.0f} µs / "
        f"{median_of(lambda: model.embed(one, norm=True).tolist(), 300) * 1e6:.0f} µs"
    )

    checks["one `anyio.to_thread.run_sync` hop (no work)"] = (
        f"{await amedian_of(lambda: anyio.to_thread.run_sync(lambda: None), 500) * 1e6:.0f} µs"
    )

    scope = reader_scope(corpus.namespaces())
    hits = await rt.memories.recall(scope, RecallRequest(query=queries[0]))
    await rt.memories.drain()
    ids = [h.memory.id for h in hits]
    at = datetime.now(UTC)
    bump = await amedian_of(lambda: rt.store.record_access(scope, ids, at), 50)
    checks[f"`EdgeVectorStore.record_access` of {len(ids)} recalled ids (the bump after each recall)"] = (
        f"{bump * 1000:.2f} ms"
    )
    edge = edge_store(rt)
    shard = edge._shard
    flt = qe.Filter(must=[*scope_conditions(scope, scope.all_readable), qe.HasIdCondition(set(ids))])

    def bump_in_one_job() -> None:
        records, _ = shard.scroll(qe.ScrollRequest(limit=len(ids), filter=flt, with_payload=True))
        for record in records:
            payload = record.payload or {}
            patch = {"access_count": int(payload.get("access_count") or 0) + 1, "last_accessed_at": at.timestamp()}
            shard.update(qe.UpdateOperation.set_payload([record.id], patch))

    one_job = await amedian_of(lambda: anyio.to_thread.run_sync(bump_in_one_job), 50)
    checks["the same bump as one worker-thread job (proposed)"] = f"{one_job * 1000:.2f} ms"

    searches, requests = await recorded_queries(rt, scope, list(queries[:1]))
    points = engine_queries(shard, requests[0])
    checks[f"{len(points)} payloads → `Memory` (`from_payload`)"] = (
        f"{median_of(lambda: [from_payload(p.id, p.payload or {}) for p in points], 300) * 1e6:.0f} µs"
    )
    engine = median_of(lambda: engine_queries(shard, requests[0]), 100)
    store = await amedian_of(lambda: store_searches(rt, searches[0]), 100)
    checks["engine query / `EdgeVectorStore.search` of the same recall (100 namespaces)"] = (
        f"{engine * 1000:.2f} ms / {store * 1000:.2f} ms"
    )
    return checks


def say(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)


async def run(cfg: Config) -> Results:
    started = time.perf_counter()
    results = Results(cfg, machine_info(REPO))
    results.load_before = load_average()
    results.corpus_words = corpus.word_count_summary(corpus.CorpusGenerator(seed=42).texts(5_000))
    workdir = Path(tempfile.mkdtemp(prefix="hindsight-bench-", dir=cfg.workdir))
    data_dir = workdir / "data"
    log = workdir / "server.log"
    profile_dir = cfg.out.parent / "profiles" if not cfg.quick else workdir / "profiles"
    try:
        say(f"work dir {workdir}")
        await baseline_server(cfg, results, data_dir, log)
        generator = corpus.CorpusGenerator(seed=42)
        for size in sorted(cfg.sizes):
            await size_stage(cfg, results, size, data_dir, generator, log)
        await profile_stage(cfg, results, data_dir, log, profile_dir)
    finally:
        if cfg.keep:
            say(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    results.load_after = load_average()
    results.wall_s = time.perf_counter() - started
    return results


def parse_args(argv: Sequence[str] | None) -> Config:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, finishes in well under a minute")
    parser.add_argument("--out", type=Path, help="where to write the report (default bench/RESULTS.md)")
    parser.add_argument("--sizes", help="comma-separated corpus sizes, e.g. 1000,10000")
    parser.add_argument("--queries", type=int, help="measured queries per path and size")
    parser.add_argument("--load-seconds", type=float, help="length of each concurrency level")
    parser.add_argument("--profile-seconds", type=float, help="length of each profiled loop")
    parser.add_argument("--workdir", type=Path, help="parent of the temporary data directory")
    parser.add_argument("--keep", action="store_true", help="keep the data directory")
    parser.add_argument(
        "--render-only", action="store_true", help="re-render the report from the last run's saved results"
    )
    args = parser.parse_args(argv)
    default_out = REPO / "bench" / ("RESULTS-quick.md" if args.quick else "RESULTS.md")
    out = (args.out or default_out).resolve()
    cfg = quick_config(out) if args.quick else full_config(out)
    if args.sizes:
        cfg.sizes = tuple(sorted(int(s) for s in args.sizes.split(",") if s.strip()))
    if args.queries:
        cfg.queries = args.queries
        cfg.warmup = max(2, min(cfg.warmup, args.queries // 5))
    if args.load_seconds:
        cfg.load_seconds = args.load_seconds
    if args.profile_seconds:
        cfg.profile_seconds = args.profile_seconds
    cfg.workdir, cfg.keep, cfg.render_only = args.workdir, args.keep, args.render_only
    return cfg


def quiet_logging() -> None:
    """wordllama calls `logging.basicConfig(level=INFO)` on import; without this every client request of the
    benchmark would log a line (and be timed doing it)."""
    import wordllama  # noqa: F401

    logging.getLogger().setLevel(logging.WARNING)


def main(argv: Sequence[str] | None = None) -> int:
    from bench.report import render

    cfg = parse_args(argv)
    for name in [n for n in os.environ if n.startswith("HINDSIGHT_")]:
        del os.environ[name]  # the embedded default, whatever the shell exports
    saved = cfg.out.parent / "profiles" / f"{cfg.out.stem}.pickle"  # lets --render-only redo the report
    if cfg.render_only:
        results = pickle.loads(saved.read_bytes())
    else:
        quiet_logging()
        results = anyio.run(run, cfg)
        saved.parent.mkdir(parents=True, exist_ok=True)
        saved.write_bytes(pickle.dumps(results))
    cfg.out.parent.mkdir(parents=True, exist_ok=True)
    previous = cfg.out.read_text() if cfg.out.exists() else ""
    cfg.out.write_text(render(results))
    if EVAL_BEGIN in previous and EVAL_END in previous:  # keep the `hindsight eval locomo` section
        start, end = previous.index(EVAL_BEGIN), previous.index(EVAL_END) + len(EVAL_END)
        write_section(cfg.out, previous[start:end] + "\n")
    say(f"wrote {cfg.out} in {results.wall_s:.0f}s")
    return 0

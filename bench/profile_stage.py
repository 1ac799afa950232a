"""The profile phase of the benchmark (server under MCP recall and write, and in process, at the largest size) and
the micro-checks of single costs."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import qdrant_edge as qe

from bench import corpus, profilers
from bench.config import (
    WRITER,
    Config,
    Results,
    reader_scope,
    reader_token,
    say,
    settings_for,
    start_server,
    writer_scope,
    writer_token,
)
from bench.inprocess import edge_store, engine_queries, recorded_queries, store_searches
from bench.mcp_load import (
    call,
    mcp_client,
    recall_latency,
)
from gateway.services.assembly import open_runtime
from gateway.services.runtime import Runtime
from memory.requests import RecallRequest, WriteRequest
from memory.stores.edge_filters import scope_conditions


async def profile_stage(cfg: Config, results: Results, data_dir: Path, log: Path, profile_dir: Path) -> None:
    """Profiles at the largest size: the server under MCP recall and write load (py-spy), and the same paths in
    process. Without py-spy, only the in-process paths are profiled, with cProfile."""
    queries = corpus.queries(cfg.queries)
    all_namespaces = corpus.namespaces()
    size = max(cfg.sizes)
    spy = profilers.py_spy_path() is not None
    deadline_s = cfg.profile_seconds

    async def profile(pid: int, title: str, drive: Callable[[], Awaitable[int]], name: str) -> None:
        path = profile_dir / name
        results.profiles.append(await profilers.py_spy_profile(pid, title, drive, path, attach_s=min(1.0, deadline_s)))

    if spy:
        say("[profile] server under MCP recall and write")
        server = await start_server(data_dir, log, cfg.server_env)
        try:
            async with mcp_client(server.url, reader_token(all_namespaces)) as client:
                await recall_latency(client, queries[:10], 0)  # warm

                async def mcp_recall(n: int) -> None:
                    await call(client, "recall_memory", {"query": queries[n % len(queries)]})

                title = f"recall_memory over HTTP MCP, server process, {size} memories, one client"
                await profile(server.pid, title, for_seconds(deadline_s, mcp_recall), "server-recall.txt")
            async with mcp_client(server.url, writer_token()) as client:
                contents = corpus.unique_sentences(20_000 if not cfg.quick else 500, size + 4, "prof-mcp")

                async def mcp_write(n: int) -> None:
                    await call(client, "write_memory", {"content": contents[n], "namespace": corpus.WRITE_NAMESPACE})

                title = f"write_memory over HTTP MCP, server process, {size} memories, one client"
                mcp_writes = for_seconds(deadline_s, mcp_write, len(contents))
                await profile(server.pid, title, mcp_writes, "server-write.txt")
        finally:
            await anyio.to_thread.run_sync(server.stop)

    say("[profile] in process")
    async with open_runtime(settings_for(data_dir)) as rt:
        scope = reader_scope(all_namespaces)
        wscope = writer_scope()
        for query in queries[:10]:
            await rt.memories.recall(scope, RecallRequest(query=query))

        async def recall(n: int) -> None:
            await rt.memories.recall(scope, RecallRequest(query=queries[n % len(queries)]))

        async def recalls() -> int:
            n = await for_seconds(deadline_s, recall)()
            await rt.memories.drain()
            return n

        contents = corpus.unique_sentences(20_000 if not cfg.quick else 500, size + 5, "prof-svc")

        async def write(n: int) -> None:
            request = WriteRequest(content=contents[n], subject=WRITER, namespace=corpus.WRITE_NAMESPACE)
            await rt.memories.write(wscope, request)

        writes = for_seconds(deadline_s, write, len(contents))
        recall_title = f"MemoryService.recall in process, {size} memories"
        write_title = f"MemoryService.write in process, {size} memories"
        if spy:
            await profile(os.getpid(), recall_title, recalls, "inproc-recall.txt")
            await profile(os.getpid(), write_title, writes, "inproc-write.txt")
        else:
            results.profiles.append(await profilers.cprofile_profile(recall_title, recalls))
            results.profiles.append(await profilers.cprofile_profile(write_title, writes))

        results.checks.update(await micro_checks(rt, queries))


def for_seconds(
    seconds: float, one: Callable[[int], Awaitable[None]], limit: int | None = None
) -> Callable[[], Awaitable[int]]:
    """What a profile drives: `one(0)`, `one(1)`, ... one after the other until `seconds` have passed (or `limit`
    calls were made); it returns how many calls it made."""

    async def drive() -> int:
        n, end = 0, time.perf_counter() + seconds
        while time.perf_counter() < end and (limit is None or n < limit):
            await one(n)
            n += 1
        return n

    return drive


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

    embedder: Any = getattr(rt.embedder, "_target", rt.embedder)  # under a tracing wrapper, if any
    embedder = getattr(embedder, "active", embedder)  # the model the re-embedding proxy delegates to
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
    points = [p for p in engine_queries(shard, requests[0]) if p.payload]  # the keyword-only query reads none
    checks[f"{len(points)} payloads → `Memory` (`from_payload`)"] = (
        f"{median_of(lambda: [from_payload(p.id, p.payload) for p in points], 300) * 1e6:.0f} µs"
    )
    engine = median_of(lambda: engine_queries(shard, requests[0]), 100)
    store = await amedian_of(lambda: store_searches(rt, searches[0]), 100)
    checks["engine query / `EdgeVectorStore.search` of the same recall (100 namespaces)"] = (
        f"{engine * 1000:.2f} ms / {store * 1000:.2f} ms"
    )
    return checks

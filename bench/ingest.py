"""`python -m bench.ingest [--quick] [--out PATH]`: ingestion over MCP in memories/s (issue #19, item 4): one
`write_memory` call per statement, `write_memories` batches from one client, and `write_memories` batches from 8
concurrent clients, side by side, against a fresh `hindsight serve` (embedded engine, WordLlama) in a subprocess.

10,000 statements per way (600 with `--quick`), each way into namespaces of its own: half the benchmark's synthetic
English statements (`bench.corpus`, each distinct), half Chinese from MemoryBank's messages and replies (read at
run time from the shared datasets, never copied here; each made distinct). Every item carries a `request_id` (what
an importer would send), so idempotency bookkeeping is included. The whole write pipeline runs (chit-chat is
skipped, repeats and conflicts are checked); rate limits are off. The 8 clients each import their own namespace.
Reported per way: memories/s over the wall time, the median and p99 call latency, server CPU per memory, the
outcomes, and the machine load (1 / 5 / 15 min) at the start and end of each way; the client runs on the same
machine and takes its share of the CPU. Written to RESULTS.md as its own section (`make bench` runs it).
"""

from __future__ import annotations

import random
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from mcp import Client

from bench import corpus
from bench.config import SECRET, start_server
from bench.embedder_cost import chinese_texts
from bench.mcp_load import call, mcp_client
from bench.procinfo import load_average
from bench.sections import closing, stage_main
from bench.stats import Samples, ms
from tenancy import mint_token

BEGIN = "<!-- bench:ingest:begin -->"
END = "<!-- bench:ingest:end -->"
QUICK_HELP = "600 statements instead of 10,000"
HEADING = "## Ingestion over MCP: memories/s, one write per call and batched"
BATCH = 256  # items per write_memories call (HINDSIGHT_MAX_BATCH_ITEMS, the default)
CLIENTS = 8
TARGET = 1_000  # memories/s, batched over MCP (issue #19)
SUBJECT = "bench-importer"


@dataclass
class Way:
    """One way of ingesting: what was sent, how long it took, what the server spent."""

    label: str
    memories: int
    seconds: float
    calls: Samples
    server_cpu: float
    load_start: str
    load_end: str
    outcomes: Counter[str] = field(default_factory=Counter)

    @property
    def per_second(self) -> float:
        return self.memories / self.seconds


def statements(count: int) -> list[str]:
    """`count` distinct statements, alternately English (synthetic) and Chinese (MemoryBank)."""
    english = corpus.unique_sentences(count - count // 2, seed=19, tag="ingest")
    chinese, _ = chinese_texts(count // 2)
    random.Random(19).shuffle(chinese)
    mixed = [text for pair in zip(english, chinese, strict=False) for text in pair]
    return mixed + english[len(chinese) :]


def token(namespaces: Sequence[str]) -> str:
    return mint_token(
        SECRET, tenant=corpus.TENANT, subject=SUBJECT, read=[], write=list(namespaces), ttl_seconds=12 * 3600
    )


def item(text: str, namespace: str, index: int) -> dict[str, Any]:
    return {"content": text, "namespace": namespace, "request_id": f"{namespace}-{index}"}


async def one_by_one(client: Client, texts: Sequence[str], namespace: str, way: Way) -> None:
    for index, text in enumerate(texts):
        began = time.perf_counter()
        body = await call(client, "write_memory", item(text, namespace, index))
        way.calls.add(time.perf_counter() - began)
        way.outcomes[str(body["status"])] += 1


async def batched(client: Client, texts: Sequence[str], namespace: str, way: Way) -> None:
    for start in range(0, len(texts), BATCH):
        items = [item(text, namespace, start + i) for i, text in enumerate(texts[start : start + BATCH])]
        began = time.perf_counter()
        body = await call(client, "write_memories", {"items": items})
        way.calls.add(time.perf_counter() - began)
        for result in body["results"]:
            way.outcomes[str(result.get("status") or result["error"]["code"])] += 1


async def ingest(server: Any, label: str, texts: Sequence[str], prefix: str, clients: int, batch: bool) -> Way:
    namespaces = [f"{prefix}:{c}" for c in range(clients)]
    shares = [list(texts[c::clients]) for c in range(clients)]
    way = Way(label, len(texts), 0.0, Samples(), 0.0, load_average(), "")
    write = batched if batch else one_by_one
    async with AsyncExitStack() as stack:
        sessions = [await stack.enter_async_context(mcp_client(server.url, token(namespaces))) for _ in namespaces]
        for session in sessions:
            await call(session, "whoami", {})  # every session is up before the clock starts
        cpu_before, began = server.cpu_seconds(), time.perf_counter()
        async with anyio.create_task_group() as group:
            for session, namespace, share in zip(sessions, namespaces, shares, strict=True):
                group.start_soon(write, session, share, namespace, way)
        way.seconds = time.perf_counter() - began
        way.server_cpu = server.cpu_seconds() - cpu_before
    way.load_end = load_average()
    return way


async def measure(quick: bool = False, workdir: Path | None = None) -> dict[str, Any]:
    size = 600 if quick else 10_000
    texts = statements(size)
    ways: list[Way] = []
    with tempfile.TemporaryDirectory(prefix="hindsight-ingest-", dir=workdir) as tmp:
        data_dir = Path(tmp) / "data"
        server = await start_server(data_dir, Path(tmp) / "server.log")
        try:
            ways.append(await ingest(server, "`write_memory`, one per call, 1 client", texts, "single", 1, False))
            label = f"`write_memories`, {BATCH} per call, 1 client"
            ways.append(await ingest(server, label, texts, "batch", 1, True))
            label = f"`write_memories`, {BATCH} per call, {CLIENTS} concurrent clients"
            ways.append(await ingest(server, label, texts, "clients", CLIENTS, True))
        finally:
            await anyio.to_thread.run_sync(server.stop)
    return {"size": size, "ways": ways}


def render(results: dict[str, Any]) -> str:
    ways: list[Way] = results["ways"]
    best = max(way.per_second for way in ways[1:])
    lines = [
        BEGIN,
        HEADING,
        "",
        f"`python -m bench.ingest`: {results['size']:,} distinct statements per way (half synthetic English, half "
        "MemoryBank Chinese), each item with a `request_id`, through the whole write pipeline, into a fresh "
        f"`hindsight serve` (embedded engine, WordLlama; rate limits off) from `mcp.Client` sessions over TCP on the "
        "same machine (the clients take their share of its 2 cores). 'call p50 / p99' is the latency of one call "
        f"(one memory, or one batch of {BATCH}); 'server CPU' the server process's CPU per memory. Target (issue #19): "
        f"batched ingestion over MCP ≥ {TARGET:,} memories/s; best batched here: {best:,.0f}/s.",
        "",
        "| way | memories/s | call p50 / p99 ms | server CPU ms / memory | outcomes | load at start → end |",
        "| --- | ---: | ---: | ---: | --- | --- |",
    ]
    for way in ways:
        outcomes = ", ".join(f"{count:,} {name}" for name, count in way.outcomes.most_common())
        lines.append(
            f"| {way.label} | {way.per_second:,.0f} | {ms(way.calls.p50)} / {ms(way.calls.p99)} | "
            f"{way.server_cpu / way.memories * 1000:.2f} | {outcomes} | {way.load_start} → {way.load_end} |"
        )
    return closing(lines, END)


if __name__ == "__main__":
    sys.exit(stage_main("ingest", __doc__, measure, render, BEGIN, END, quick_help=QUICK_HELP))

"""`python -m bench.embedder_cost [--quick] [--out PATH]`: what each shipped embedder costs a write and a recall, in
English and Chinese, side by side in one run (issue #14.2: is the multilingual `use` fast enough to be the default?).

Per embedder (WordLlama, the default; use, Universal Sentence Encoder multilingual): a corpus of 10,000 memories
(half the benchmark's synthetic English statements, half Chinese: MemoryBank's messages and replies, each made
distinct) bulk-loaded through the embedder into the embedded engine over 100 namespaces (embedding throughput
timed) through the runtime the server opens, then 200 writes through `MemoryService.write` (the whole pipeline) and
100 English and 100 Chinese recalls over every namespace, in process; then the same recalls over HTTP MCP against
`hindsight serve` on that data directory (the issue's target is Chinese recall over HTTP MCP p50 <= 20 ms at 10k).
Medians and p99s, the ratio to WordLlama, and the machine load; written to RESULTS.md as its own section (`make bench`
runs it).
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio.to_thread

from bench import corpus
from bench.config import loader_scope, reader_token, settings_for, start_server
from bench.decision_set import DATASETS
from bench.mcp_load import mcp_client, recall_latency
from bench.procinfo import load_average
from bench.sections import closing, stage_main
from bench.stats import Samples, ms, ratio
from gateway.services.assembly import open_runtime
from memory.clock import ManualClock
from memory.requests import RecallRequest, WriteRequest

BEGIN = "<!-- bench:embedder-cost:begin -->"
END = "<!-- bench:embedder-cost:end -->"
QUICK_HELP = "500 memories, 20 writes and 20 recalls per language instead of 10,000, 100 and 100"
HEADING = "## Embedders: what a write and a recall cost, English and Chinese"
BATCH = 64
QUERIES = 100
WARMUP = 10
EMBEDDERS = ("wordllama", "use")


def chinese_texts(count: int) -> tuple[list[str], list[str]]:
    """`count` distinct Chinese memories from MemoryBank's messages and replies, and its probing questions."""
    data = json.loads((DATASETS / "memorybank/memory_bank_cn.json").read_text(encoding="utf-8"))
    said = [
        text.strip()
        for user in data.values()
        for day in user["history"].values()
        for turn in day
        for text in (turn.get("query", ""), turn.get("response", ""))
        if text.strip()
    ]
    texts = [f"{said[i % len(said)]}（记录{i}）" for i in range(count)]
    lines = (DATASETS / "memorybank/probing_questions_cn.jsonl").read_text(encoding="utf-8").splitlines()
    questions = [q for line in lines if line.strip() for qs in json.loads(line).values() for q in qs]
    return texts, questions


async def measure_one(
    name: str, size: int, workdir: Path, writes_per_language: int = 100, queries_per_language: int = QUERIES
) -> dict[str, Any]:
    """Load the corpus through the runtime the server opens, time writes and recalls in process, then the same
    recalls over HTTP MCP against `hindsight serve` on that data directory."""
    rng = random.Random(5)
    english = [corpus.sentence(rng) for _ in range(size // 2)]
    chinese, zh_queries = chinese_texts(size - len(english))
    queries = {"en": corpus.queries(queries_per_language), "zh": zh_queries[:queries_per_language]}
    data_dir = workdir / name
    settings = settings_for(data_dir).replaced(embedder=name)
    scope = loader_scope()
    generator = corpus.CorpusGenerator()
    texts = [t for pair in zip(english, chinese, strict=False) for t in pair]
    embed_s = 0.0
    async with open_runtime(settings, clock=ManualClock(datetime(2026, 6, 1, tzinfo=UTC))) as rt:
        service, embedder = rt.memories, rt.embedder
        for start in range(0, len(texts), BATCH):
            batch = texts[start : start + BATCH]
            began = time.perf_counter()
            vectors = await embedder.embed_documents(batch)
            embed_s += time.perf_counter() - began
            sparse = [service.keywords.document(text) for text in batch]
            memories = list(generator.memories(batch, embedder.model_id))
            await rt.store.upsert(scope, list(zip(memories, vectors, sparse, strict=True)))
        await rt.store.maintain()
        writes = Samples()
        for i in range(writes_per_language):
            for text in (f"{english[i]} (update {i})", f"{chinese[i]}（更新{i}）"):
                began = time.perf_counter()
                request = WriteRequest(content=text, subject="bench", namespace=corpus.WRITE_NAMESPACE, force=True)
                await service.write(scope, request)
                writes.add(time.perf_counter() - began)
        recalls = {"en": Samples(), "zh": Samples()}
        for lang, asked in queries.items():
            for query in asked:
                began = time.perf_counter()
                await service.recall(scope, RecallRequest(query=query))
                recalls[lang].add(time.perf_counter() - began)
        await service.drain()
    over_mcp = {}
    server = await start_server(data_dir, workdir / f"{name}.log", {"HINDSIGHT_EMBEDDER": name})
    try:
        async with mcp_client(server.url, reader_token(corpus.namespaces())) as client:
            for lang, asked in queries.items():
                over_mcp[lang] = await recall_latency(client, asked, WARMUP)
    finally:
        await anyio.to_thread.run_sync(server.stop)
    return {"embed_per_s": len(texts) / embed_s, "writes": writes, "recalls": recalls, "mcp": over_mcp}


async def measure(quick: bool = False, workdir: Path | None = None) -> dict[str, Any]:
    size = 500 if quick else 10_000
    results: dict[str, Any] = {"size": size, "load_before": load_average()}
    with tempfile.TemporaryDirectory(prefix="hindsight-embedder-cost-", dir=workdir) as tmp:
        for name in EMBEDDERS:
            results[name] = await measure_one(name, size, Path(tmp), *((20, 20) if quick else (100, QUERIES)))
    results["load"] = load_average()
    return results


def render(results: dict[str, Any]) -> str:
    base = results["wordllama"]
    lines = [
        BEGIN,
        HEADING,
        "",
        f"`python -m bench.embedder_cost`: {results['size']:,} memories (half English, half Chinese) over 100 "
        "namespaces in the embedded engine, loaded through the runtime the server opens; "
        f"{len(base['writes'])} writes through `MemoryService.write`; {len(base['recalls']['en'])} English and "
        f"{len(base['recalls']['zh'])} Chinese recalls over every namespace, in process, "
        "then the same recalls over HTTP MCP (`mcp.Client` to `hindsight serve` in a subprocess, one session, after "
        f"{WARMUP} warm-up calls); one embedder after the other. Machine load {results['load_before']} at the start, "
        f"{results['load']} at the end. Target (issue #14): Chinese recall over HTTP MCP p50 ≤ 20 ms at 10k.",
        "",
        "| embedder | embeds texts/s | write p50 ms | in process en p50 / p99 ms | in process zh p50 / p99 ms | "
        "HTTP MCP en p50 / p99 ms | HTTP MCP zh p50 / p99 ms | MCP p50 × WordLlama (en / zh) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name in EMBEDDERS:
        r = results[name]
        en, zh = r["recalls"]["en"], r["recalls"]["zh"]
        mcp_en, mcp_zh = r["mcp"]["en"], r["mcp"]["zh"]
        ratio_en = ratio(mcp_en.p50, base["mcp"]["en"].p50)
        ratio_zh = ratio(mcp_zh.p50, base["mcp"]["zh"].p50)
        lines.append(
            f"| {name} | {r['embed_per_s']:,.0f} | {ms(r['writes'].p50)} | {ms(en.p50)} / {ms(en.p99)} | "
            f"{ms(zh.p50)} / {ms(zh.p99)} | {ms(mcp_en.p50)} / {ms(mcp_en.p99)} | "
            f"{ms(mcp_zh.p50)} / {ms(mcp_zh.p99)} | {ratio_en:.2f} / {ratio_zh:.2f} |"
        )
    return closing(lines, END)


if __name__ == "__main__":
    sys.exit(stage_main("embedder_cost", __doc__, measure, render, BEGIN, END, quick_help=QUICK_HELP))

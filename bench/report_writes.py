"""The RESULTS.md "Writes" section: single-write latency over HTTP MCP and in process, and ingestion throughput
(the bulk load by stage, and the API rows)."""

from __future__ import annotations

import math

from bench.config import Ingest, Results, SizeResult
from bench.report_tables import latency_cells, table
from bench.stats import size_label


def writes(results: Results) -> list[str]:
    rows = []
    for size in results.sizes:
        for label, samples in (
            ("HTTP MCP `write_memory`", size.writes_mcp),
            ("in process `MemoryService.write`", size.writes_service),
        ):
            outcomes = ", ".join(f"{n} {status}" for status, n in samples.outcomes.most_common()) or "–"
            rows.append([size_label(size.size), label, *latency_cells(samples), outcomes])
    lines = ["## Writes", "", "### Single-write latency", ""]
    lines += [
        "One writer, writes in sequence, each a new statement: everything `write_memory` does (validation, repeat "
        "check, the write pipeline when present, embedding, upsert; through MCP also idempotency bookkeeping and the "
        "audit event). Milliseconds; 'outcomes' counts the statuses returned.",
        "",
    ]
    lines += table(["memories", "path", "p50", "p95", "p99", "mean", "n", "outcomes"], rows, "llrrrrrl")
    rows = []
    total = SizeResult(0)
    for size in results.sizes:
        ing = size.ingest
        total.ingest.memories += ing.memories
        total.ingest.embed_s += ing.embed_s
        total.ingest.upsert_s += ing.upsert_s
        total.ingest.generate_s += ing.generate_s
        total.ingest.index_s += ing.index_s
        rows.append(_ingest_row(f"bulk load to {size_label(size.size)}", ing.memories, ing))
    rows.append(_ingest_row("bulk load, all stages", total.ingest.memories, total.ingest))
    for t in results.throughput:
        rows.append([t.label, f"{t.count:,}", f"{t.seconds:.1f}", f"{t.per_second:,.0f}", "–", "–", "–", t.note])
    lines += ["### Ingestion throughput", ""]
    lines += [
        "Bulk load = the corpus build: `embed_documents` on batches + one `EdgeVectorStore.upsert` per batch "
        "(the 'batched' figure). 'memories/s' excludes the index build, which `maintain()` does afterwards and "
        "is shown apart (and folded in, last column). The API rows write one memory per call.",
        "",
    ]
    lines += table(
        ["method", "memories", "seconds", "memories/s", "embed s", "upsert s", "index build s", "note"],
        rows,
        "lrrrrrrl",
    )
    return lines


def _ingest_row(label: str, count: int, ing: Ingest) -> list[str]:
    rate = count / ing.load_s if ing.load_s else math.nan
    with_index = count / (ing.load_s + ing.index_s) if ing.load_s else math.nan
    return [
        label,
        f"{count:,}",
        f"{ing.load_s:.1f}",
        f"{rate:,.0f}",
        f"{ing.embed_s:.1f}",
        f"{ing.upsert_s:.1f}",
        f"{ing.index_s:.1f}",
        f"{with_index:,.0f}/s including the index build",
    ]

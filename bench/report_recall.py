"""The RESULTS.md sections on recall through the paths measured: latency by corpus size with its ratios and
the HTTP MCP figures beside the previous run (with the recall quality they go with), fan-out over granted
namespaces, and recall throughput with concurrent HTTP MCP clients."""

from __future__ import annotations

from bench.config import Results
from bench.report_tables import latency_cells, table
from bench.stats import ms, ratio, size_label, times

PATH_LABELS = {
    "mcp": "(a) HTTP MCP: `mcp.Client` → uvicorn subprocess",
    "service": "(b) in process: `MemoryService.recall`",
    "store": "(c) raw store: `EdgeVectorStore.search`, vectors precomputed",
    "engine": "engine only: `shard.query` (+ `retrieve`), same requests",
    "embed": "query encoding: `embed_query` (+ keyword vector if hybrid)",
    "mcp_floor": "`whoami` over the same MCP session (round trip, the SDK client's CPU included)",
    "http_floor": "`GET /livez`, httpx2 keep-alive, no MCP (round trip, the client's CPU included)",
}
RECALL_ROWS = ("mcp", "service", "store", "engine", "embed", "mcp_floor", "http_floor")


def recall(results: Results) -> list[str]:
    rows: list[list[str]] = []
    for size in results.sizes:
        for path in RECALL_ROWS:
            rows.append([size_label(size.size), PATH_LABELS[path], *latency_cells(size.recall.get(path))])
    lines = ["## Recall latency by corpus size", "", "Milliseconds per recall.", ""]
    lines += table(["memories", "path", "p50", "p95", "p99", "mean", "n"], rows, "llrrrrr")
    ratio_rows = []
    for size in results.sizes:
        r = size.recall
        a, b, c, e, engine = r.get("mcp"), r.get("service"), r.get("store"), r.get("embed"), r.get("engine")
        if not (a and b and c and e and engine):
            continue
        ratio_rows.append(
            [
                size_label(size.size),
                times(ratio(a.p50, engine.p50)),
                times(ratio(a.p99, engine.p99)),
                times(ratio(a.p50, c.p50)),
                times(ratio(a.p99, c.p99)),
                times(ratio(b.p50, c.p50)),
                times(ratio(b.p99, c.p99)),
                times(ratio(b.p50, c.p50 + e.p50)),
                ms(a.p50 - b.p50),
            ]
        )
    lines += ["### Ratios (same run)", ""]
    lines += table(
        [
            "memories",
            "MCP / engine p50",
            "MCP / engine p99",
            "a/c p50",
            "a/c p99",
            "b/c p50",
            "b/c p99",
            "b / (c + embedding) p50",
            "a − b p50 (ms)",
        ],
        ratio_rows,
    )
    return lines + beside_previous(results)


def quality_note(results: Results) -> str:
    """The two recall-quality figures this build's latency goes with (the last `hindsight eval` runs)."""
    q = results.quality
    if q is None or q.locomo_recall10 is None or q.memorybank_recall5 is None:
        return "Recall quality: no `hindsight eval` figures in RESULTS.md yet."
    return (
        f"Recall quality of the build (last `hindsight eval` runs kept below): LoCoMo dev recall@10 "
        f"{q.locomo_recall10:.3f} ({q.locomo_note}), MemoryBank Chinese recall@5 {q.memorybank_recall5:.3f} / "
        f"MRR {q.memorybank_mrr or 0:.3f} ({q.memorybank_note})."
    )


def beside_previous(results: Results) -> list[str]:
    """Recall over HTTP MCP by size beside the run this report replaces, with the quality it goes with."""
    before = results.previous
    rows = []
    for size in results.sizes:
        a, engine = size.recall.get("mcp"), size.recall.get("engine")
        if not a:
            continue
        label = size_label(size.size)
        old = before.mcp.get(label) if before else None
        rows.append(
            [
                label,
                ms(a.p50),
                ms(a.p99),
                ms(old[0]) if old else "–",
                ms(old[1]) if old else "–",
                times(ratio(a.p50, engine.p50)) if engine else "–",
            ]
        )
    where = f" ({before.commit}, {before.date}, load at start {before.load})" if before and before.commit else ""
    return [
        "### HTTP MCP recall beside the previous run",
        "",
        f"Milliseconds; 'previous' = the figures of the RESULTS.md this run replaced{where}. {quality_note(results)}",
        "",
        *table(["memories", "p50", "p99", "previous p50", "previous p99", "MCP / engine p50"], rows),
    ]


def fanout(results: Results) -> list[str]:
    largest = max(results.config.sizes)
    per_namespace = largest // 100
    rows = []
    levels = dict(results.fanout)
    top = next((s for s in results.sizes if s.size == largest), None)
    if top is not None:
        levels[100] = top.recall
    for granted in sorted(levels):
        paths = levels[granted]
        cells = [str(granted), f"{granted * per_namespace:,}"]
        for path in ("mcp", "service", "store", "engine"):
            s = paths.get(path)
            cells += [ms(s.p50), ms(s.p99)] if s else ["–", "–"]
        rows.append(cells)
    return [
        "## Recall fan-out over granted namespaces",
        "",
        f"{size_label(largest)} memories; the token grants the first N of the 100 namespaces and recall omits "
        "`namespaces`, so it searches all granted ones (one engine query with a `MatchAny` filter). "
        "Milliseconds, p50 / p99.",
        "",
        *table(
            [
                "granted",
                "memories in scope",
                "MCP p50",
                "MCP p99",
                "service p50",
                "service p99",
                "store p50",
                "store p99",
                "engine p50",
                "engine p99",
            ],
            rows,
        ),
    ]


def concurrency(results: Results) -> list[str]:
    rows = []
    before = results.previous.concurrency if results.previous else {}
    for load in results.concurrency:
        s = load.samples
        old = before.get(load.clients)
        rows.append(
            [
                str(load.clients),
                f"{load.requests:,}",
                f"{load.throughput:,.0f}",
                f"{old[0]:,.0f}" if old else "–",
                ms(s.p50),
                ms(s.p95),
                ms(s.p99),
                f"{load.server_cpu / load.seconds:.2f}",
                f"{load.server_cpu / load.requests * 1000:.1f}",
                f"{old[1]:.1f}" if old else "–",
                f"{load.client_cpu / load.seconds:.2f}",
                f"{load.client_cpu / load.requests * 1000:.1f}",
            ]
        )
    largest = size_label(max(results.config.sizes))
    return [
        "## Concurrency (HTTP MCP clients)",
        "",
        f"{largest} memories, all 100 namespaces granted; N `mcp.Client` sessions (own HTTP connection each) in "
        f"the bench process call `recall_memory` back to back for {results.config.load_seconds:.0f} s. The load "
        "generator shares the 2 cores with the server: its CPU use is shown beside the server's (cores = CPU "
        "seconds / wall seconds). 'previous' = the run this report replaced (see the ratios section).",
        "",
        *table(
            [
                "clients",
                "requests",
                "recalls/s",
                "previous recalls/s",
                "p50 ms",
                "p95 ms",
                "p99 ms",
                "server CPU (cores)",
                "server CPU ms/recall",
                "previous server CPU ms/recall",
                "client CPU (cores)",
                "client CPU ms/recall",
            ],
            rows,
        ),
    ]

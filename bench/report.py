"""RESULTS.md: the benchmark's tables, rendered from one run's `Results`: the headings a run must produce, the
machine and method sections, the order of the sections (each rendered by its `bench.report_*` module) and the
findings appended last."""

from __future__ import annotations

from pathlib import Path

from bench import report_server
from bench.config import Results
from bench.report_footprint import memory_disk
from bench.report_profile import profile_section
from bench.report_recall import concurrency, fanout, recall
from bench.report_tables import table
from bench.report_targets import targets
from bench.report_writes import writes
from bench.stats import size_label

FINDINGS = Path(__file__).with_name("FINDINGS.md")

# Every heading a run must produce (the smoke test checks each one).
HEADINGS = (
    "# hindsight benchmark results",
    "## Machine",
    "## Method",
    "## Recall latency by corpus size",
    "### Ratios (same run)",
    "## Recall fan-out over granted namespaces",
    "## Writes",
    "### Single-write latency",
    "### Ingestion throughput",
    "## Concurrency (HTTP MCP clients)",
    "## Server CPU per recall (raw client)",
    "### Floors from the raw client",
    "## Engine CPU by cause",
    "## Several worker processes (estimate)",
    "## Memory and disk",
    "## Targets",
    "## Profile",
    "### Micro-checks",
    "## Hostile text: CPU per request",  # written by `bench.hostile` after the report (bench/run.py)
    "## Write decisions: a labelled set, measured",  # written by `bench.decisions` after that (bench/run.py)
    "## Hostile tenant: delay to another tenant",  # written by `bench.isolation` last (bench/run.py)
)


def machine(results: Results) -> list[str]:
    cfg = results.config
    rows = [[k, v] for k, v in results.machine.items()]
    rows.append(["load average (1/5/15 min) at start", results.load_before])
    rows.append(["load average at end", results.load_after])
    rows.append(["mode", "quick (`make bench-quick`)" if cfg.quick else "full (`make bench`)"])
    rows.append(["wall time of the run", f"{results.wall_s:.0f} s"])
    return ["## Machine", "", *table(["", ""], rows, "ll")]


def method(results: Results) -> list[str]:
    cfg = results.config
    median, low, high = results.corpus_words
    return [
        "## Method",
        "",
        f"- Corpus: synthetic, fixed seed (`bench/corpus.py`): one tenant, memories spread round-robin over 100 "
        f"namespaces (`user:000`..`user:099`), 70 % episodic / 30 % semantic, importance 0.1-0.9, created over "
        f"180 days. Statements of {low}-{high} words (5th-95th percentile), median {median}.",
        f"- Sizes {', '.join(size_label(s) for s in cfg.sizes)}; the corpus grows in place. It is loaded with the "
        f"real embedder (`wordllama`, 256-d) in batches of {cfg.batch} and batched `EdgeVectorStore.upsert` (each "
        "memory with the vectors `MemoryService.write` would store), then `store.maintain()` (flush + optimize: "
        "builds the HNSW and payload indexes) before any query.",
        f"- Recall mode of this build: {results.recall_mode}. {cfg.queries} distinct questions per path and size "
        f"after {cfg.warmup} warm-up calls, default `top_k` (8; the store is asked for 16 candidates), token "
        "granted all 100 namespaces (so every query searches the whole corpus), `time.perf_counter` around each "
        "call, nearest-rank percentiles.",
        "- (a) is a real `mcp.Client` over streamable HTTP on TCP (one session, calls in sequence) to "
        "`python -m gateway.cli serve` in a subprocess (embedded default, rate limits off, log level warning); "
        "it includes the client's own work. (b) is `MemoryService.recall` from `open_runtime` (the server's "
        "assembly), access-count bumps in its task group as in the server, drained outside the timed window. "
        "(c) replays the exact `EdgeVectorStore.search` calls (b) makes for the same query (two with "
        "pseudo-relevance feedback), its query vectors computed beforehand; 'engine only' replays the exact "
        "reads those searches send to the shard (queries, and the retrieval of the feedback search's new hits). "
        "(b), (c), "
        "engine and query encoding are timed interleaved, query by query, so noise hits them alike. (a) runs in "
        "the same run right after, once the in-process runtime has released the store. The `whoami` and `/livez` rows "
        "are round trips timed by the client, so they include the client's own CPU (the SDK's most of all): they are "
        "not the server's floors; those (server CPU per call from `/proc`, raw client) are in 'Floors from the raw "
        "client'.",
        "- Writes go to a namespace outside the recall grants (`bench:writes`), so recall sizes stay exact.",
        "- The machine is shared and noisy (see the load average): read the medians and the ratios; single p99 "
        "values move between runs.",
        "",
    ]


def render(results: Results) -> str:
    lines = ["# hindsight benchmark results", ""]
    lines += [
        "Generated by `make bench` (`python -m bench`); `make bench-quick` runs the same code on small sizes. "
        "Analysis and proposed fixes: the last section.",
        "",
    ]
    parts = (
        machine,
        method,
        recall,
        fanout,
        writes,
        concurrency,
        report_server.server_cpu_section,
        report_server.causes_section,
        report_server.workers_section,
        memory_disk,
        targets,
        profile_section,
    )
    for part in parts:
        lines += part(results)
    if FINDINGS.exists():
        lines += ["", FINDINGS.read_text().strip(), ""]
    return "\n".join(lines).rstrip() + "\n"

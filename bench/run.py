"""`python -m bench [--quick]`: recall and write latency, fan-out, concurrency, memory and disk, and profiles.

Phases, per corpus size (ascending; the corpus grows in place, 100 namespaces of one tenant):

1. in process (`open_runtime`, the same assembly the server uses): bulk-load the new memories (real embedder in
   batches + batched `EdgeVectorStore.upsert`), `store.maintain()` (flush + index build), disk use, then per
   query, interleaved: query embedding, raw engine query, `EdgeVectorStore.search` with the precomputed vector,
   `MemoryService.recall`; single writes; at the largest size also fan-out and concurrent writes;
2. at the smallest and the largest size, the server's CPU per recall measured on the server (`bench.server_cpu`):
   `hindsight serve` driven by raw JSON-RPC clients from a child process, sequential and 8 at once, the floors,
   the server's own latency histograms and, at the largest size, perf's engine CPU by cause; all namespaces in
   scope, and at the largest size one namespace of it too; again with `--compare-env` settings, back to back;
3. `hindsight serve` in a subprocess over the same directory (the store is locked by one process): recall through
   a real MCP client over TCP, its RSS, fan-out and concurrency at the largest size, single MCP writes;
4. at the largest size, profiles of the recall and write paths (server and in process).

`--env NAME=VALUE` sets a `HINDSIGHT_*` setting of every server the run starts (e.g. `HINDSIGHT_JEMALLOC=false`,
`HINDSIGHT_SEARCH_THREADS=1`); `--compare-env NAME=VALUE` measures phase 2 a second time with it, on the same store.

`--quick` runs the same code on small sizes in well under a minute (the smoke test runs it).
"""

from __future__ import annotations

import argparse
import logging
import os
import pickle
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

import anyio
import anyio.to_thread

from bench import (
    answer_size,
    as_of,
    budget,
    consolidation_quality,
    consolidation_words,
    corpus,
    crosslingual,
    decisions,
    embedder_cost,
    expired_plans,
    extraction_quality,
    fairness,
    hostile,
    ingest,
    injection,
    isolation,
    recall_depth,
    rule_audit,
    server_cpu,
    zh_assistant,
)
from bench.config import (
    Config,
    Results,
    SizeResult,
    Throughput,
    quick_config,
    reader_token,
    say,
    settings_for,
    start_server,
    writer_token,
)
from bench.inprocess import bulk_load, concurrent_service_writes, inprocess_recall, inprocess_writes
from bench.mcp_load import (
    call,
    call_latency,
    concurrent_load,
    http_floor,
    mcp_client,
    recall_latency,
    write_latency,
)
from bench.previous import read_previous, read_quality
from bench.procinfo import allocator, disk_bytes, load_average, machine_info, thread_names
from bench.profile_stage import profile_stage
from bench.sections import replace_section
from bench.server import REPO
from gateway.evaluation import memorybank_run as eval_memorybank
from gateway.evaluation.report import BEGIN as EVAL_BEGIN
from gateway.evaluation.report import END as EVAL_END
from gateway.evaluation.report import write_between
from gateway.services.assembly import open_runtime


async def baseline_server(cfg: Config, results: Results, data_dir: Path, log: Path) -> None:
    """RSS of a server on an empty store, after serving a few calls (the 'before loading' figure)."""
    server = await start_server(data_dir, log, cfg.server_env)
    try:
        async with mcp_client(server.url, reader_token(corpus.namespaces())) as client:
            for query in corpus.queries(20):
                await call(client, "recall_memory", {"query": query})
        results.baseline_rss = server.memory_kib()
        results.machine["server allocator (`/proc/<pid>/maps`)"] = allocator(server.pid)
        results.machine["engine search threads in the server"] = str(thread_names(server.pid).get("edge-search", 0))
        results.machine["server settings (`--env`)"] = server_cpu.env_label(cfg.server_env)
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
    profile_dir: Path,
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
                "hybrid (a dense query, then a BM25 keyword query expanded with pseudo-relevance feedback from "
                "the dense candidates; the keyword query reads payloads and vectors only for hits not already "
                "held; both scores mixed in the service)"
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

    if largest or size == min(cfg.sizes):
        await raw_stage(cfg, results, size, data_dir, log, profile_dir)
    say(f"[{size}] server: MCP recall")
    server = await start_server(data_dir, log, cfg.server_env)
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


async def raw_stage(cfg: Config, results: Results, size: int, data_dir: Path, log: Path, profile_dir: Path) -> None:
    """Server CPU per recall from raw clients (`bench.server_cpu`), with the run's server settings and then, back
    to back on the same store, with `--compare-env` added."""
    largest = size == max(cfg.sizes)
    namespaces = corpus.namespaces()
    one = reader_token(namespaces[:1]) if largest else None
    scopes = server_cpu.scopes_for(size, reader_token(namespaces), one, corpus.NAMESPACE_COUNT, profile=largest)
    envs = [cfg.server_env] + ([cfg.server_env | cfg.compare_env] if cfg.compare_env else [])
    for env in envs:
        say(f"[{size}] server CPU per recall, raw clients ({server_cpu.env_label(env)})")
        server = await start_server(data_dir, log, env)
        try:
            results.raw += await server_cpu.measure(
                server,
                scopes,
                corpus.queries(cfg.queries),
                cfg.queries,
                cfg.warmup,
                cfg.load_seconds,
                cfg.profile_seconds,
                profile_dir,
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
            await size_stage(cfg, results, size, data_dir, generator, log, profile_dir)
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
        "--no-stages", action="store_true", help="skip the sections measured after the report (they keep theirs)"
    )
    parser.add_argument(
        "--render-only", action="store_true", help="re-render the report from the last run's saved results"
    )
    parser.add_argument(
        "--env", action="append", default=[], metavar="NAME=VALUE", help="a setting of every server (repeatable)"
    )
    parser.add_argument(
        "--compare-env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="measure the server CPU per recall again with this setting too, on the same store (repeatable: "
        "all together make the second server)",
    )
    args = parser.parse_args(argv)
    default_out = REPO / "bench" / ("RESULTS-quick.md" if args.quick else "RESULTS.md")
    out = (args.out or default_out).resolve()
    cfg = quick_config(out) if args.quick else Config(out)
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
    cfg.stages = not args.no_stages
    cfg.server_env, cfg.compare_env = env_pairs(parser, args.env), env_pairs(parser, args.compare_env)
    return cfg


def env_pairs(parser: argparse.ArgumentParser, items: Sequence[str]) -> dict[str, str]:
    pairs = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.startswith("HINDSIGHT_"):
            parser.error(f"expected HINDSIGHT_NAME=VALUE, got {item!r}")
        pairs[name] = value
    return pairs


def quiet_logging() -> None:
    """wordllama calls `logging.basicConfig(level=INFO)` on import; without this every client request of the
    benchmark would log a line (and be timed doing it)."""
    import wordllama  # noqa: F401

    logging.getLogger().setLevel(logging.WARNING)


# Sections of RESULTS.md that `hindsight eval locomo` and `hindsight eval memorybank` write: kept as they are
KEPT = ((EVAL_BEGIN, EVAL_END), (eval_memorybank.BEGIN, eval_memorybank.END))

# Stages with a RESULTS.md section of their own, run after the report: (what is said, the module)
STAGES: tuple[tuple[str, ModuleType], ...] = (
    ("hostile text: CPU per text rule and per in-process write and recall", hostile),
    ("write decisions: the labelled set and whole corpora through the write path", decisions),
    ("hostile tenant: another tenant's latency over HTTP MCP during an attack", isolation),
    ("cost-aware fairness: another tenant's recall latency under expensive in-limit calls", fairness),
    ("passed plans: LoCoMo recall with passed plans hidden and kept", expired_plans),
    ("recall answers: characters per hit, lean and full, and token budgets", answer_size),
    ("token budgets: evidence delivered within 250 and 500 tokens, new, previous and BM25 lines", budget),
    ("cross-lingual recall: a memory in one language, a question in the other", crosslingual),
    ("embedders: what a write and a recall cost with each, English and Chinese", embedder_cost),
    ("ingestion over MCP: write_memory one by one, write_memories batched, 1 and 8 clients", ingest),
    ("extracted facts beside raw turns: recall of the evidence, English and Chinese", extraction_quality),
    ("consolidation: semantic memories, hobby coverage and LoCoMo recall beside them", consolidation_quality),
    ("recall candidates: LoCoMo and MemoryBank quality and CPU per recall at each depth", recall_depth),
    ("recall as of a date: labelled update questions, English and Chinese", as_of),
    ("consolidation across different words: labelled sets, dev and blind, every embedder", consolidation_words),
    ("Chinese personal-assistant questions: the engine beside BM25, dev and blind", zh_assistant),
    ("memories that read as instructions: marked attacks and ordinary memories, dev and blind", injection),
    ("rule audit: each recall and write rule switched off, on tuned, held-out and blind sets", rule_audit),
)


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
    cfg.out.parent.mkdir(parents=True, exist_ok=True)
    previous = cfg.out.read_text() if cfg.out.exists() else ""
    if not cfg.render_only:  # a re-render keeps the previous run it was first rendered beside
        results.previous = read_previous(previous)
        saved.parent.mkdir(parents=True, exist_ok=True)
        saved.write_bytes(pickle.dumps(results))
    results.quality = read_quality(previous)
    cfg.out.write_text(render(results))
    for begin, end_marker in KEPT:  # the `hindsight eval` sections, measured by their own commands
        if begin in previous and end_marker in previous:
            start, end = previous.index(begin), previous.index(end_marker) + len(end_marker)
            write_between(cfg.out, previous[start:end] + "\n", begin, end_marker)
    for label, stage in STAGES:  # sections measured after the report; re-rendering keeps the last ones
        if not cfg.render_only and cfg.stages:
            say(label)
            section = stage.render(anyio.run(stage.measure, cfg.quick, cfg.workdir))
            replace_section(cfg.out, section, stage.BEGIN, stage.END)
        elif stage.BEGIN in previous and stage.END in previous:
            start, end = previous.index(stage.BEGIN), previous.index(stage.END) + len(stage.END)
            replace_section(cfg.out, previous[start:end] + "\n", stage.BEGIN, stage.END)
    say(f"wrote {cfg.out} in {results.wall_s:.0f}s")
    return 0

"""`python -m bench.recall_depth [--quick] [--out PATH]`: how deep a recall reads its candidate lists
(`HINDSIGHT_RECALL_CANDIDATES`): recall quality against CPU per recall, every depth measured in one run.

Quality: LoCoMo dev (plain "Speaker: text" turns) and MemoryBank Chinese (the exchanges, `occurred_at` only), each
written into a fresh runtime per depth through the real `MemoryService` on a manual clock and every question asked
a day after its conversation (`gateway.evaluation.runner.evaluate`, `top_k` 10).
Cost: one synthetic corpus (`bench.corpus`: 100,000 memories in 100 namespaces, loaded in bulk as the latency
benchmark loads it), every query recalled over all 100 namespaces at each depth in turn (the order rotating per
query, so noise hits every depth alike): the process CPU time (all threads, the engine's included) and the wall
time of each `MemoryService.recall`; medians, and the ratio to the first depth.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import corpus
from bench.config import reader_scope, settings_for
from bench.decision_set import DATASETS
from bench.inprocess import bulk_load
from bench.procinfo import load_average
from bench.sections import stage_main
from gateway.evaluation import locomo, memorybank
from gateway.evaluation.formats import BY_NAME
from gateway.evaluation.locomo import Conversation
from gateway.evaluation.runner import evaluate
from gateway.services.assembly import open_runtime
from memory.clock import ManualClock
from memory.requests import RecallRequest
from ops.config import Settings
from tenancy import SCOPE_ADMIN, SCOPE_READ, SCOPE_WRITE, Principal, scope_for

BEGIN = "<!-- bench:recall-depth:begin -->"
END = "<!-- bench:recall-depth:end -->"
QUICK_HELP = "three LoCoMo sessions, one MemoryBank user, 1,000 synthetic memories"
HEADING = "## Recall candidates: quality against CPU per recall"
DEPTHS = (50, 75, 100, 150)
SIZE, QUERIES, WARMUP = 100_000, 200, 10
QUICK_SIZE, QUICK_QUERIES, QUICK_USERS, QUICK_SESSIONS = 1_000, 20, 1, 3


@dataclass(frozen=True, slots=True)
class Quality:
    depth: int
    locomo: dict[str, float]
    memorybank: dict[str, float]


@dataclass
class Figures:
    quick: bool
    load_before: str
    quality: list[Quality] = field(default_factory=list)
    size: int = 0
    cpu_ms: dict[int, list[float]] = field(default_factory=dict)
    wall_ms: dict[int, list[float]] = field(default_factory=dict)
    load_after: str = ""
    seconds: float = 0.0


def _settings(data_dir: Path, depth: int) -> Settings:
    return settings_for(data_dir).replaced(memory_maintenance_interval_seconds=0, recall_candidates=depth)


async def _quality(depth: int, sets: dict[str, tuple[list[Conversation], str]], workdir: Path | None) -> Quality:
    principal = Principal(subject="depth", tenant="eval", scopes=frozenset({SCOPE_READ, SCOPE_WRITE, SCOPE_ADMIN}))
    means: dict[str, dict[str, float]] = {}
    for name, (conversations, fmt) in sets.items():
        clock = ManualClock(datetime(2023, 1, 1, tzinfo=UTC))
        with tempfile.TemporaryDirectory(prefix="hindsight-depth-", dir=workdir) as tmp:
            async with open_runtime(_settings(Path(tmp) / "data", depth), clock) as rt:
                report = await evaluate(rt.memories, scope_for(principal), clock, conversations, fmt=BY_NAME[fmt])
        means[name] = report.systems["hindsight"].overall.means()
    return Quality(depth, means["locomo"], means["memorybank"])


async def _cost(figures: Figures, size: int, queries: int, workdir: Path | None) -> None:
    with tempfile.TemporaryDirectory(prefix="hindsight-depth-cost-", dir=workdir) as tmp:
        async with open_runtime(_settings(Path(tmp) / "data", DEPTHS[0])) as rt:
            await bulk_load(rt, corpus.CorpusGenerator(), size, 512)
            service: Any = rt.memories
            scope = reader_scope(corpus.namespaces())
            asked = corpus.queries(queries + WARMUP)
            figures.size = size
            figures.cpu_ms = {d: [] for d in DEPTHS}
            figures.wall_ms = {d: [] for d in DEPTHS}
            for i, query in enumerate(asked):
                for depth in DEPTHS[i % len(DEPTHS) :] + DEPTHS[: i % len(DEPTHS)]:
                    service.limits = replace(service.limits, recall_candidates=depth)
                    cpu, wall = time.process_time(), time.perf_counter()
                    await service.recall(scope, RecallRequest(query=query, top_k=10))
                    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
                    await service.drain()
                    if i >= WARMUP:
                        figures.cpu_ms[depth].append(cpu * 1000)
                        figures.wall_ms[depth].append(wall * 1000)


async def measure(quick: bool = False, workdir: Path | None = None) -> Figures:
    started = time.perf_counter()
    figures = Figures(quick, load_average())
    english = locomo.load(DATASETS / "locomo" / "locomo10-dev.json")
    chinese = memorybank.load(DATASETS / "memorybank")
    sets = {
        "locomo": ([locomo.first_sessions(english[0], QUICK_SESSIONS)] if quick else english, "plain"),
        "memorybank": (chinese[:QUICK_USERS] if quick else chinese, "occurred_at"),
    }
    for depth in DEPTHS:
        figures.quality.append(await _quality(depth, sets, workdir))
    await _cost(figures, QUICK_SIZE if quick else SIZE, QUICK_QUERIES if quick else QUERIES, workdir)
    figures.load_after = load_average()
    figures.seconds = time.perf_counter() - started
    return figures


def _median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def render(figures: Figures) -> str:
    first = DEPTHS[0]
    base_cpu, base_wall = _median(figures.cpu_ms[first]), _median(figures.wall_ms[first])
    lines = [
        BEGIN,
        HEADING,
        "",
        f"`python -m bench.recall_depth{' --quick' if figures.quick else ''}` ({figures.seconds:.0f} s; load average "
        f"before {figures.load_before}, after {figures.load_after}). A recall reads its dense and its keyword "
        "candidate lists this deep (each at least 2 x `top_k`), scores the union (conversation context, cues, "
        "recency, importance, access) and keeps `top_k`. Quality: LoCoMo dev and MemoryBank Chinese through the "
        "real `MemoryService`, a fresh store per depth. Cost: "
        f"{figures.size:,} synthetic memories in 100 namespaces, {len(figures.cpu_ms[first])} queries over all of "
        "them at every depth in turn, process CPU (all threads) and wall time per `MemoryService.recall`.",
        "",
        "| depth | LoCoMo recall@10 | LoCoMo recall@5 | LoCoMo MRR | MemoryBank recall@10 | MemoryBank recall@5 | "
        "MemoryBank MRR | CPU ms per recall (median) | × depth 50 | wall ms (median) | × depth 50 |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for q in figures.quality:
        cpu, wall = _median(figures.cpu_ms[q.depth]), _median(figures.wall_ms[q.depth])
        lines.append(
            f"| {q.depth} | {q.locomo['recall@10']:.3f} | {q.locomo['recall@5']:.3f} | {q.locomo['mrr']:.3f} | "
            f"{q.memorybank['recall@10']:.3f} | {q.memorybank['recall@5']:.3f} | {q.memorybank['mrr']:.3f} | "
            f"{cpu:.2f} | {cpu / base_cpu:.2f} | {wall:.2f} | {wall / base_wall:.2f} |"
        )
    lines += ["", END, ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(stage_main("recall_depth", __doc__, measure, render, BEGIN, END, quick_help=QUICK_HELP))

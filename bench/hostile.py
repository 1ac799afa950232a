"""`python -m bench.hostile [--quick] [--out PATH]`: the CPU cost of hostile text, per input family at the
8,000-character limit (`bench.hostile_inputs`), written to RESULTS.md as its own section (`make bench` runs it
too).

Measured: each text rule of the write pipeline and of recall alone (thread CPU time, `time.thread_time`), the
conflict decision over 16 hostile candidates (without and with its 50 ms budget), the budgeted analyses
(`memory.pipeline.analysis`), and end to end in process: `MemoryService.write` and `.recall` on the real embedded
engine (`EdgeVectorStore`) and the default embedder (WordLlama), each hostile content written and recalled in a
namespace of its own, CPU as process CPU time (`time.process_time`: every thread, the engine's and the worker
threads' included) and wall time per call. Figures are the median and the maximum over the runs.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio

from bench.corpus import fresh_memory
from bench.hostile_inputs import FAMILIES
from bench.procinfo import load_average
from bench.scopes import agent_scope
from bench.sections import closing, replace_section
from memory.clock import SystemClock
from memory.embedders import WordLlamaEmbedder
from memory.embedders.sparse import Bm25Encoder
from memory.models import Memory, Source
from memory.pipeline import claims, conflict, density, expiry, importance
from memory.pipeline.analysis import analyse_query, analyse_write
from memory.pipeline.settings import PipelineSettings
from memory.recall.cues import query_cues, states_time
from memory.requests import RecallRequest, WriteRequest
from memory.service import MemoryService
from memory.stores.edge import EdgeVectorStore
from memory.text.budget import CpuBudget
from memory.text.words import split_speaker, tokenize

BEGIN = "<!-- bench:hostile:begin -->"
END = "<!-- bench:hostile:end -->"
HEADING = "## Hostile text: CPU per request"
TENANT = "hostile"
# a date or weekday costs the most when the day it names is still to come: the rules read each text as said on
# 1 December ("Dec 5", "on Fri" to come) and on 4 May ("5月5日", "May 5" to come)
REFERENCE = datetime(2026, 12, 1, 20, 0, tzinfo=UTC)
MAY = datetime(2026, 5, 4, 10, 30, tzinfo=UTC)
_ENCODER = Bm25Encoder()


def _candidates(text: str) -> list[tuple[Memory, float]]:
    """16 stored memories of the same hostile text (distinct endings), all close to it."""
    return [
        (
            fresh_memory(
                TENANT,
                "user:hostile",
                f"{text[:-2]}{i:02d}",
                REFERENCE,
                source=Source(subject="bench"),
                embedding_model="bench",
            ),
            0.95,
        )
        for i in range(16)
    ]


def _decide(text: str, budget_ms: float | None) -> Callable[[], object]:
    candidates, later = _candidates(text), REFERENCE + timedelta(days=1)
    settings = PipelineSettings()

    def run() -> object:
        budget = CpuBudget(budget_ms / 1000) if budget_ms is not None else None
        return conflict.decide(text, later, candidates, settings, budget=budget)

    return run


# name -> (text -> the call to time); the conflict entries build their candidates once per family
FUNCTIONS: dict[str, Callable[[str], Callable[[], object]]] = {
    "expiry, said 1 Dec": lambda t: lambda: expiry.find_expiry(t, REFERENCE),
    "expiry, said 4 May": lambda t: lambda: expiry.find_expiry(t, MAY),
    "density": lambda t: lambda: density.assess(t),
    "importance": lambda t: lambda: importance.rate(t),
    "claims": lambda t: lambda: claims.extract(t),
    "tokenize": lambda t: lambda: tokenize(t),
    "keyword document": lambda t: lambda: _ENCODER.document(t),
    "query cues": lambda t: lambda: query_cues(t),
    "states time": lambda t: lambda: states_time.__wrapped__(t),
    "speaker": lambda t: lambda: split_speaker(t),
    "conflict, 16 candidates": lambda t: _decide(t, None),
    "conflict, 50 ms budget": lambda t: _decide(t, 50.0),
    "analyse_write (budget 50 ms), said 1 Dec": lambda t: lambda: analyse_write(t, REFERENCE),
    "analyse_write (budget 50 ms), said 4 May": lambda t: lambda: analyse_write(t, MAY),
    "analyse_query (budget 50 ms)": lambda t: lambda: analyse_query(t, _ENCODER),
}


@dataclass
class Cost:
    """CPU (and wall) milliseconds of the calls of one function on one family."""

    cpu: list[float] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.cpu)

    @property
    def max(self) -> float:
        return max(self.cpu)


@dataclass
class HostileResults:
    runs: int
    functions: dict[str, dict[str, Cost]] = field(default_factory=dict)  # function -> family -> cost
    service: dict[str, dict[str, Cost]] = field(default_factory=dict)  # "write" / "recall" -> family -> cost
    load_before: str = ""
    load_after: str = ""
    seconds: float = 0.0


def measure_functions(results: HostileResults, families: dict[str, str]) -> None:
    for name, make in FUNCTIONS.items():
        per_family = results.functions.setdefault(name, {})
        for family, text in families.items():
            call, cost = make(text), Cost()
            for _ in range(results.runs):
                started = time.thread_time()
                call()
                cost.cpu.append((time.thread_time() - started) * 1000)
            per_family[family] = cost


async def measure_service(results: HostileResults, families: dict[str, str], workdir: Path) -> None:
    """Each family written `runs` times (distinct endings, so no write is an exact repeat) into a namespace of
    its own, then recalled with the hostile text as the query (its first 2,000 characters: the query limit)."""
    namespaces = {family: f"user:hostile-{i}" for i, family in enumerate(families)}
    scope = agent_scope(TENANT, "hostile-agent", list(namespaces.values()))
    writes, recalls = results.service.setdefault("write", {}), results.service.setdefault("recall", {})
    embedder = WordLlamaEmbedder()
    store = EdgeVectorStore.open(workdir / "vectors", model_id=embedder.model_id, dimension=embedder.dimension)
    try:
        service = MemoryService(store, embedder, SystemClock())
        await service.write(scope, WriteRequest(content="warm up the embedder", subject="hostile-agent"))
        for family, text in families.items():
            namespace, write, recall = namespaces[family], Cost(), Cost()
            for run in range(results.runs):
                content = f"{text[:-3]}{run:03d}"
                request = WriteRequest(content=content, subject="hostile-agent", namespace=namespace)
                cpu, wall = time.process_time(), time.perf_counter()
                await service.write(scope, request)
                write.cpu.append((time.process_time() - cpu) * 1000)
                write.wall.append((time.perf_counter() - wall) * 1000)
            for _ in range(results.runs):
                cpu, wall = time.process_time(), time.perf_counter()
                query = text[: service.limits.max_query_chars]  # a longer query is refused
                await service.recall(scope, RecallRequest(query=query, namespaces=[namespace]))
                recall.cpu.append((time.process_time() - cpu) * 1000)
                recall.wall.append((time.perf_counter() - wall) * 1000)
            writes[family], recalls[family] = write, recall
    finally:
        await store.close()


async def measure(quick: bool = False, workdir: Path | None = None) -> HostileResults:
    results = HostileResults(runs=1 if quick else 5, load_before=load_average())
    started = time.perf_counter()
    measure_functions(results, FAMILIES)
    with tempfile.TemporaryDirectory(prefix="hindsight-hostile-", dir=workdir) as tmp:
        await measure_service(results, FAMILIES, Path(tmp))
    results.seconds = time.perf_counter() - started
    results.load_after = load_average()
    return results


# -- report ----------------------------------------------------------------------------------------------------
def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _worst(per_family: dict[str, Cost]) -> tuple[str, Cost]:
    return max(per_family.items(), key=lambda item: item[1].max)


def render(results: HostileResults) -> str:
    families = list(next(iter(results.functions.values())))
    lines = [
        BEGIN,
        HEADING,
        "",
        f"`python -m bench.hostile` (also run by `make bench`): {len(families)} hostile inputs of 8,000 characters "
        "(`bench/hostile_inputs.py`: each rule's trigger repeated, one long word, runs of digits, numerals, "
        "punctuation or spaces, mixed scripts, emoji, zero-width characters, a character NFKC expands 18-fold), "
        f"{results.runs} runs each. Text rules: thread CPU ms per call; in process (`MemoryService` on the "
        "embedded engine and WordLlama, one namespace per input): process CPU ms per call (all threads). "
        f"Load average (1/5/15 min) {results.load_before} before, {results.load_after} after; "
        f"{results.seconds:.0f} s in all.",
        "",
        "Worst input per function:",
        "",
        _row(["function", "worst input", "median ms", "max ms"]),
        _row(["---", "---", "---:", "---:"]),
    ]
    for name, per_family in [*results.functions.items(), *results.service.items()]:
        family, cost = _worst(per_family)
        label = f"`MemoryService.{name}` (in process, CPU)" if name in results.service else name
        lines.append(_row([label, family, f"{cost.median:.1f}", f"{cost.max:.1f}"]))
    lines += [
        "",
        "Per input, in process: median / max CPU ms per call (wall ms median), and the budgeted analyses "
        "(max CPU ms; analyse_write: the costlier of the two days the text is said on):",
        "",
        _row(["input", "write CPU", "write wall", "recall CPU", "recall wall", "analyse_write", "analyse_query"]),
        _row(["---", "---:", "---:", "---:", "---:", "---:", "---:"]),
    ]
    write: dict[str, Cost] = results.service.get("write", {})
    recall: dict[str, Cost] = results.service.get("recall", {})
    said = [results.functions[f"analyse_write (budget 50 ms), said {day}"] for day in ("1 Dec", "4 May")]
    query = results.functions["analyse_query (budget 50 ms)"]
    for family in families:
        cells = [family]
        for side in (write, recall):
            sample = side.get(family)
            cells += (
                [f"{sample.median:.1f} / {sample.max:.1f}", f"{statistics.median(sample.wall):.1f}"]
                if sample
                else ["–", "–"]
            )
        cells += [f"{max(costs[family].max for costs in said):.1f}", f"{query[family].max:.1f}"]
        lines.append(_row(cells))
    return closing(lines, END)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.hostile", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one run per input instead of five")
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("RESULTS.md"))
    args = parser.parse_args(argv)
    results = anyio.run(measure, args.quick)
    replace_section(args.out, render(results), BEGIN, END)
    print(f"wrote {args.out} in {results.seconds:.0f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

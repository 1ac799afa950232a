"""`python -m bench.isolation [--quick] [--out PATH]`: how much a hostile tenant delays another tenant, over real
HTTP MCP against a `hindsight serve` subprocess (embedded default, rate limits off so the attack is not
throttled: the worst case).

A victim tenant calls `whoami`, `recall_memory` and `write_memory` in a loop, first alone, then while hostile
clients of another tenant write and recall every hostile text of `bench.hostile_inputs` (8,000 characters each,
several clients at once). Reported side by side in one run: the victim's p50 / p99 / max per call alone and under
attack (and the difference), the attacker's wall time per call, and the server's CPU per hostile call (the
server process's CPU time over the attack divided by the hostile calls it served). Written to RESULTS.md as its
own section (`make bench` runs it too).
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from bench.hostile_inputs import FAMILIES
from bench.mcp_load import call, mcp_client
from bench.procinfo import cpu_seconds, load_average
from bench.sections import replace_section
from bench.server import ServerProcess
from bench.stats import Samples, ms
from tenancy import mint_token

SECRET = "bench-isolation-secret-0123456789abcdef"
BEGIN = "<!-- bench:isolation:begin -->"
END = "<!-- bench:isolation:end -->"
QUERY_LIMIT = 2_000  # the longest recall query the gateway takes (HINDSIGHT_MAX_QUERY_CHARS)
VICTIM_FACTS = [
    "The user's deploy target is AWS eu-west-1",
    "The user prefers short answers without preamble",
    "用户住在上海，喜欢喝茶",
]


@dataclass
class Figures:
    quick: bool
    alone: dict[str, Samples] = field(default_factory=dict)
    attacked: dict[int, dict[str, Samples]] = field(default_factory=dict)  # by the number of hostile clients
    hostile: dict[str, Samples] = field(default_factory=lambda: {"write_memory": Samples(), "recall_memory": Samples()})
    server_cpu_s: float = 0.0
    hostile_calls: int = 0
    load: str = ""


def _token(tenant: str) -> str:
    ns = f"user:{tenant}"
    return mint_token(SECRET, tenant=tenant, subject=f"{tenant}-agent", read=[ns], write=[ns], ttl_seconds=3600)


async def _victim(url: str, rounds: int, into: dict[str, Samples]) -> None:
    async with mcp_client(url, _token("victim")) as client:
        for fact in VICTIM_FACTS:
            await call(client, "write_memory", {"content": fact})
        for i in range(rounds):
            for tool, arguments in (
                ("whoami", {}),
                ("recall_memory", {"query": "where does the user deploy?"}),
                ("write_memory", {"content": f"The victim's note number {i} of this run"}),
            ):
                started = time.perf_counter()
                await call(client, tool, arguments)
                into.setdefault(tool, Samples()).add(time.perf_counter() - started)


async def _attacker(url: str, texts: Sequence[str], figures: Figures, stop: anyio.Event) -> None:
    async with mcp_client(url, _token("hostile")) as client:
        while not stop.is_set():
            for text in texts:
                if stop.is_set():
                    return
                for tool, arguments in (
                    ("write_memory", {"content": text, "force": True}),
                    ("recall_memory", {"query": text[:QUERY_LIMIT]}),
                ):
                    started = time.perf_counter()
                    await call(client, tool, arguments)
                    figures.hostile[tool].add(time.perf_counter() - started)
                    figures.hostile_calls += 1


async def measure(quick: bool, workdir: Path | None = None) -> Figures:
    rounds, crowds = (5, (1,)) if quick else (60, (1, 4))
    figures = Figures(quick=quick, load=load_average())
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        root = Path(tmp)
        server = ServerProcess(root / "data", SECRET, root / "server.log")
        server.start()
        try:
            await _victim(server.url, 3, {})  # warm-up: models loaded, connections made
            await _victim(server.url, rounds, figures.alone)
            texts = list(FAMILIES.values())
            cpu_before = cpu_seconds(server.pid)
            for attackers in crowds:
                stop = anyio.Event()
                async with anyio.create_task_group() as group:
                    for i in range(attackers):
                        group.start_soon(_attacker, server.url, texts[i::attackers], figures, stop)
                    await _victim(server.url, rounds, figures.attacked.setdefault(attackers, {}))
                    stop.set()
            figures.server_cpu_s = cpu_seconds(server.pid) - cpu_before
        finally:
            server.stop()
    return figures


def _max(samples: Samples) -> float:
    return max(samples.values) * 1000 if samples.values else math.nan


def render(figures: Figures) -> str:
    lines = [
        BEGIN,
        "## Hostile tenant: delay to another tenant",
        "",
        f"`python -m bench.isolation{' --quick' if figures.quick else ''}`: a victim tenant's calls over HTTP MCP "
        f"against `hindsight serve` (embedded default, rate limits off), alone and while N clients of another "
        f"tenant write (`force`) and recall the {len(FAMILIES)} hostile 8,000-character texts of "
        f"`bench/hostile_inputs.py` back to back (a recall with a text's first 2,000 characters: the query limit). "
        f"Load average at the start: {figures.load}.",
        "",
        "| victim call | hostile clients | p50 | p99 | max | p50 delay | p99 delay |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for tool, alone in figures.alone.items():
        lines.append(f"| `{tool}` | 0 | {ms(alone.p50)} | {ms(alone.p99)} | {ms(_max(alone))} | | |")
        for crowd, calls in figures.attacked.items():
            hit = calls.get(tool, Samples())
            lines.append(
                f"| `{tool}` | {crowd} | {ms(hit.p50)} | {ms(hit.p99)} | {ms(_max(hit))} | "
                f"{ms(hit.p50 - alone.p50)} | {ms(hit.p99 - alone.p99)} |"
            )
    per_call = figures.server_cpu_s / figures.hostile_calls * 1000 if figures.hostile_calls else float("nan")
    lines += [
        "",
        "| hostile call | calls | p50 ms | p99 ms | max ms |",
        "|---|---:|---:|---:|---:|",
    ]
    for tool, samples in figures.hostile.items():
        lines.append(f"| `{tool}` | {len(samples)} | {ms(samples.p50)} | {ms(samples.p99)} | {ms(_max(samples))} |")
    lines += [
        "",
        f"Server CPU during the attack: {figures.server_cpu_s:.1f} s for {figures.hostile_calls} hostile calls and "
        f"the victim's calls: at most {per_call:.1f} ms of CPU per hostile call (the victim's share included). "
        "Milliseconds of wall time; 2 cores shared with the load generator.",
        END,
        "",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.isolation", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer rounds and attackers (a smoke run)")
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("RESULTS.md"))
    args = parser.parse_args(argv)
    section = render(anyio.run(measure, args.quick))
    print(section)
    replace_section(args.out, section, BEGIN, END)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

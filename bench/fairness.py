"""`python -m bench.fairness [--quick] [--out PATH]`: cost-aware fairness (issue #32, item 1). How much one
tenant's valid, in-limit but expensive calls delay another tenant, over real HTTP MCP against `hindsight serve`
(embedded default, rate limits on with their defaults: the CPU budgets and concurrency caps under test).

A victim tenant recalls every 0.2 s, first alone (its idle figures), then under each attack of another tenant,
in the same run against the same server:

- `1 connection`: one token calling the expensive recall back to back;
- `4 connections, 1 token`: four connections of that token doing so;
- `12 tokens, 1 tenant`: twelve tokens (subjects) of the attacking tenant, one connection each;
- `big batches + recalls`: four tokens sending `write_memories` of 120 items of 7,800 characters back to back
  (as long as the write-token buckets allow), one more connection the expensive recall;
- `bad-token flood`: eight connections from another address (127.0.1.1) posting with a new 8 KB bearer token each
  time, never waiting (every answer a 401, or the 429 of the refusal buckets);
- `1.1 MB body flood`: eight connections of a valid token of the attacking tenant (from 127.0.1.2) posting 1.1 MB
  `write_memory` bodies, never waiting (413, or 429);
- `5,000 idle connections`: 5,000 connections from 50 addresses (127.0.2.1-50) that send nothing
  (`bench.connections`: they meet the per-address and total caps and the header deadline).

The expensive recall is the issue's: a 7,900-character query, `top_k` 100, `format: "context"`,
`token_budget` 100,000, `include_archived`, `include_superseded`, `explain`, `detail: "full"`; each value cut to
the largest the gateway publishes in `tools/list` (its `inputSchema` bounds), so the attack is the most
expensive valid call, never a refused one. The attackers run in a child process (their HTTP clients' CPU is not
the victim's process's), sending raw JSON-RPC posts; each counts its answers: served, refused with 429 (CPU
budget or call limit: `rate_limited`), tool errors `busy` (the concurrency wait ran out), other failures.
Printed and written to RESULTS.md as its own section.
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import httpx2

from bench import connections
from bench.fairness_attack import FLOODS, HOARD, HOARDED, attack_process, outcome_of, plan_of
from bench.fairness_corpus import SECRET, VICTIM, attack_arguments, published_bounds, seed, tenant_token
from bench.procinfo import CLOCK_TICKS, cpu_seconds, load_average
from bench.raw_mcp import HEADERS, tool_call
from bench.sections import replace_section
from bench.server import ServerProcess
from bench.stats import Samples, ms

BEGIN = "<!-- bench:fairness:begin -->"
END = "<!-- bench:fairness:end -->"
HEADING = "## Hostile tenant: cost-aware fairness"
VICTIM_PERIOD = 0.2  # seconds between the victim's recalls
VICTIM_QUERY = "where does the user deploy?"
COST_ATTACKS = ("1 connection", "4 connections, 1 token", "12 tokens, 1 tenant", "big batches + recalls")
ATTACKS = (*COST_ATTACKS, *FLOODS, HOARD)


# -- the victim ------------------------------------------------------------------------------------------------
async def victim(url: str, seconds: float) -> Samples:
    """A recall every `VICTIM_PERIOD` seconds (from its start: a slow answer is not followed by a pause)."""
    samples = Samples()
    body = tool_call("recall_memory", {"query": VICTIM_QUERY})
    token = tenant_token(VICTIM, "victim-agent")
    async with httpx2.AsyncClient(headers={**HEADERS, "authorization": f"Bearer {token}"}, timeout=60) as http:
        for _ in range(3):  # warm-up: the connection made
            await http.post(url, content=body)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            started = time.perf_counter()
            answer = await http.post(url, content=body)
            elapsed = time.perf_counter() - started
            if answer.status_code != 200 or b'"isError":true' in answer.content:
                samples.outcomes[f"failed {answer.status_code}"] += 1
            else:
                samples.add(elapsed)
            await anyio.sleep(max(0.0, VICTIM_PERIOD - elapsed))
    return samples


@dataclass
class AttackFigures:
    victim: Samples
    counts: dict[str, dict[str, int]]
    served: dict[str, list[float]]
    server_cpu_s: float
    seconds: float
    charged_s: float = 0.0  # CPU the gateway measured and charged to the budgets over the attack (`/metrics`)
    machine: tuple[float, float] = (0.0, 0.0)  # the machine's busy and stolen CPU seconds over the attack
    attack_seconds: float = 0.0  # how long the attacker sent


def _since(before: tuple[float, float]) -> tuple[float, float]:
    busy, stolen = machine_cpu()
    return busy - before[0], stolen - before[1]


def machine_cpu() -> tuple[float, float]:
    """The machine's busy and stolen CPU seconds so far (/proc/stat: every process, ours and any other)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields[:8]
    return (user + nice + system + irq + softirq) / CLOCK_TICKS, steal / CLOCK_TICKS


async def charged_cpu(url: str) -> float:
    """The CPU seconds the gateway has charged to tool calls so far (`hindsight_tool_cpu_seconds_total`)."""
    async with httpx2.AsyncClient(timeout=30) as http:
        text = (await http.get(url.removesuffix("/mcp") + "/metrics")).text
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("hindsight_tool_cpu_seconds_total")
    )


@dataclass
class Figures:
    quick: bool
    arguments: dict[str, Any] = field(default_factory=dict)
    idle: Samples = field(default_factory=Samples)
    attacks: dict[str, AttackFigures] = field(default_factory=dict)
    load: str = ""
    limits: str = ""
    idle_machine: tuple[float, float] = (0.0, 0.0)  # the machine's busy and stolen CPU seconds while idle


async def measure(
    quick: bool = False,
    workdir: Path | None = None,
    env: dict[str, str] | None = None,
    attacks: Sequence[str] = ATTACKS,
    seconds: float | None = None,
) -> Figures:
    seconds = seconds or (4.0 if quick else 30.0)
    figures = Figures(quick=quick, load=load_average())
    server_env = {"HINDSIGHT_RATE_LIMIT_ENABLED": "true", **(env or {})}
    figures.limits = ", ".join(f"{k}={v}" for k, v in (env or {}).items())
    if HOARD in attacks:  # the server (and the attacker) needs a descriptor per connection it holds
        connections.raise_open_files(HOARDED + 1024)
    with tempfile.TemporaryDirectory(prefix="hindsight-fairness-", dir=workdir) as tmp:
        root = Path(tmp)
        server = ServerProcess(root / "data", SECRET, root / "server.log", env=server_env)
        server.start()
        try:
            await seed(server.url, 40 if quick else 80, 160 if quick else 400)
            bounds = await published_bounds(server.url)
            figures.arguments = attack_arguments(bounds, random.Random(3))
            machine_before = machine_cpu()
            figures.idle = await victim(server.url, seconds)
            figures.idle_machine = _since(machine_before)
            context = multiprocessing.get_context("spawn")
            for attack in attacks:
                results = context.Queue()
                plan = plan_of(attack, server.url, figures.arguments, seconds + 2.0)
                child = context.Process(target=attack_process, args=(plan, results), daemon=True)
                cpu_before, charged_before = cpu_seconds(server.pid), await charged_cpu(server.url)
                machine_before = machine_cpu()
                child.start()
                await anyio.sleep(1.5)  # the attack under way
                started = time.monotonic()
                sampled = await victim(server.url, seconds)
                outcome = await anyio.to_thread.run_sync(partial(outcome_of, child, results, plan.seconds))
                child.join()
                figures.attacks[attack] = AttackFigures(
                    sampled,
                    outcome["counts"],
                    outcome["served"],
                    cpu_seconds(server.pid) - cpu_before,
                    time.monotonic() - started,
                    await charged_cpu(server.url) - charged_before,
                    _since(machine_before),
                    plan.seconds,
                )
                await anyio.sleep(2.0 if quick else 10.0)  # the attacker's debts and queues drain between attacks
        finally:
            server.stop()
    return figures


def render(figures: Figures) -> str:
    idle = figures.idle
    args = figures.arguments
    shape = (
        f"query {len(args.get('query', ''))} characters, top_k {args.get('top_k')}, token_budget "
        f"{args.get('token_budget')}, format context, include_archived, include_superseded, explain, detail full"
    )
    lines = [
        BEGIN,
        HEADING,
        "",
        f"`python -m bench.fairness{' --quick' if figures.quick else ''}`: a victim tenant recalls every "
        f"{VICTIM_PERIOD:g} s over HTTP MCP against `hindsight serve` (embedded default, rate limits on at their "
        "defaults), alone and during each attack of another tenant, in one run. The expensive recall, at the "
        f"largest values the gateway publishes: {shape}. Load average at the start: {figures.load}."
        + (f" Settings: {figures.limits}." if figures.limits else ""),
        "",
        "| attack | victim recalls | p50 | p95 | p99 | max | p99 / idle p99 | attacker served | attacker 429 | "
        "attacker `rate_limited` | other |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| none (idle) | {len(idle)} | {ms(idle.p50)} | {ms(idle.p95)} | {ms(idle.p99)} | {ms(_max(idle))} | 1.0× "
        "| | | | |",
    ]
    for attack, result in figures.attacks.items():
        counts: Counter[str] = Counter()
        for per_kind in result.counts.values():
            counts.update(per_kind)
        other = ", ".join(f"{n} {k}" for k, n in counts.most_common() if k not in ("ok", "429", "error:rate_limited"))
        ratio = result.victim.p99 / idle.p99 if idle.p99 > 0 else float("nan")
        lines.append(
            f"| {attack} | {len(result.victim)} | {ms(result.victim.p50)} | {ms(result.victim.p95)} | "
            f"{ms(result.victim.p99)} | {ms(_max(result.victim))} | "
            f"{ratio:.1f}× | {counts['ok']} | {counts['429']} | {counts['error:rate_limited']} | {other or 0} |"
        )
    lines += [
        "",
        "Per attack, what the attacker was served (its wall ms per recall), the server process's CPU over the attack "
        "(all threads, the victim's calls included) and what of it the gateway measured and charged to the CPU "
        "budgets (`hindsight_tool_cpu_seconds_total`, every tenant's), and the whole machine's busy CPU over the "
        "attack (the server, the victim, the attackers and anything else running; stolen by the hypervisor apart):",
        "",
        "| attack | attacker requests / s | recalls served (p50 ms) | batches served | server CPU s / wall s | "
        "charged CPU s | machine busy s (stolen) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for attack, result in figures.attacks.items():
        recalls = Samples(result.served.get("recall", []))
        sent = sum(sum(per_kind.values()) for per_kind in result.counts.values())
        rate = sent / result.attack_seconds if result.attack_seconds > 0 else float("nan")
        lines.append(
            f"| {attack} | {rate:,.0f} | {len(recalls)} ({ms(recalls.p50)}) | {len(result.served.get('batch', []))} | "
            f"{result.server_cpu_s:.1f} / {result.seconds:.1f} | {result.charged_s:.1f} | "
            f"{result.machine[0]:.1f} ({result.machine[1]:.1f}) |"
        )
    busy, stolen = figures.idle_machine
    lines += [
        "",
        f"Machine busy while the victim ran alone: {busy:.1f} s ({stolen:.1f} s stolen). Milliseconds of wall time; "
        "2 cores shared by the server, the victim and the attackers.",
        END,
        "",
    ]
    return "\n".join(lines)


def _max(samples: Samples) -> float:
    return max(samples.values) * 1000 if samples.values else float("nan")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fairness", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter attacks and a smaller corpus")
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("RESULTS.md"))
    parser.add_argument("--no-write", action="store_true", help="print only; leave RESULTS.md as it is")
    parser.add_argument("--env", action="append", default=[], help="NAME=VALUE for the server (repeatable)")
    parser.add_argument("--attack", action="append", choices=ATTACKS, help="only these attacks (repeatable)")
    parser.add_argument("--seconds", type=float, help="how long the victim is measured in each phase")
    args = parser.parse_args(argv)
    env = dict(item.split("=", 1) for item in args.env)
    figures = anyio.run(measure, args.quick, None, env, args.attack or ATTACKS, args.seconds)
    section = render(figures)
    print(section)
    if not args.no_write:
        replace_section(args.out, section, BEGIN, END)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Server CPU per recall, measured on the server (issue #33): the `hindsight serve` subprocess driven by the raw
client of `bench.raw_mcp` from a child process, per scope of a token (e.g. every namespace of the store, or one
namespace of it: 1% of the memories in scope):

- one client, sequential: the server's CPU per recall (all its threads, `/proc`), its context switches per recall,
  its own recall latency (the `/metrics` histograms) beside the round trip; the floors `whoami` and `GET /livez`;
- N raw clients (own connection each) for a while: recalls/s, server cores, server CPU per recall, server-side
  and round-trip latency, the client's CPU apart;
- where profiling is asked for: one client recalling in a loop under perf (`bench.engine_causes`), the samples
  charged to causes and scaled to `/proc` CPU ms per recall.

This module owns the phase (`measure`), its figures (`RawFigures`) and the estimate of several worker processes
(`worker_estimate`); `bench.report_server` renders them."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import anyio.to_thread

from bench import engine_causes
from bench.procinfo import allocator, load_average, thread_names
from bench.raw_mcp import Drive, Plan, Window, run_in_child
from bench.server import ServerProcess

CLIENTS = 8  # the concurrent raw clients
WARMUP = 20  # recalls before the first window at least: the first ones after a start cost more
FLOOR_CALLS = 1_000  # at least: `/proc` counts CPU in 10 ms ticks, and a floor call costs about 1 ms


@dataclass(frozen=True)
class Scope:
    """What one token grants: `in_scope` of the store's `store` memories; `profile`: also the cause profile."""

    label: str
    in_scope: int
    store: int
    token: str
    profile: bool = False


@dataclass
class RawFigures:
    """One scope against one server (one server environment)."""

    label: str
    in_scope: int
    store: int
    env: str  # "defaults" or the NAME=VALUE overrides of this server
    allocator: str
    search_threads: int  # the engine's `edge-search` threads seen in the server
    load: str
    clients: int
    windows: dict[str, Window] = field(default_factory=dict)  # recall, whoami, livez, concurrent, profile
    causes: engine_causes.CauseProfile | None = None

    def window(self, name: str) -> Window | None:
        return self.windows.get(name)


def env_label(env: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(env.items())) or "defaults"


def scopes_for(
    size: int, token_for_all: str, token_for_one: str | None, namespaces: int, profile: bool = True
) -> list[Scope]:
    """Every namespace of a `size` store, and (when `token_for_one` is given) one namespace of it."""
    per_namespace = size // namespaces
    label = f"{_count(size)} in scope (all {namespaces} namespaces of the {_count(size)} store)"
    scopes = [Scope(label, size, size, token_for_all, profile)]
    if token_for_one is not None:
        label = f"{_count(per_namespace)} in scope (1 of {namespaces} namespaces of the {_count(size)} store)"
        scopes.append(Scope(label, per_namespace, size, token_for_one, profile))
    return scopes


def _count(n: int) -> str:
    return f"{n // 1000}k" if n >= 1000 and n % 1000 == 0 else f"{n:,}"


async def measure(
    server: ServerProcess,
    scopes: list[Scope],
    queries: list[str],
    count: int,
    warmup: int,
    seconds: float,
    profile_seconds: float,
    profile_dir: Path,
    profile: bool = True,
) -> list[RawFigures]:
    """The raw-client phase for each scope against a running server; floors measured with the first scope."""
    kind, recorder_note = engine_causes.choose_recorder() if profile else ("", "not asked for")
    figures = []
    for n, scope in enumerate(scopes):
        tag = f"{scope.store}-{scope.in_scope}-{server.port}"
        plan = Plan(
            server.url,
            server.pid,
            scope.token,
            tuple(queries),
            count=count,
            warmup=max(warmup, WARMUP),
            floors=max(count, FLOOR_CALLS) if n == 0 else 0,
            clients=CLIENTS,
            seconds=seconds,
            profile_seconds=profile_seconds if scope.profile and kind else 0.0,
            recorder=kind,
            profile_out=str(profile_dir / f"causes-{tag}.{'data' if kind == 'perf' else 'txt'}"),
        )
        load = load_average()
        drive: Drive = await anyio.to_thread.run_sync(run_in_child, plan)
        result = RawFigures(
            scope.label,
            scope.in_scope,
            scope.store,
            env_label(server.env),
            allocator(server.pid),
            thread_names(server.pid).get("edge-search", 0),
            load,
            CLIENTS,
            drive.windows,
        )
        if scope.profile:
            result.causes = await anyio.to_thread.run_sync(_causes, scope, drive, kind, recorder_note, plan)
        figures.append(result)
    return figures


def _causes(scope: Scope, drive: Drive, kind: str, note: str, plan: Plan) -> engine_causes.CauseProfile:
    profile = engine_causes.CauseProfile(scope.label, recorder=note)
    window = drive.windows.get("profile")
    if not kind or window is None or not window.calls:
        profile.note = f"not profiled: {note}"
        return profile
    profile.recalls, profile.seconds = window.calls, window.seconds
    profile.cpu_ms = {g: s * 1000 / window.calls for g, s in engine_causes.group_cpu(window.threads).items()}
    if drive.note:
        profile.note = drive.note
        return profile
    output = Path(plan.profile_out)
    try:
        return engine_causes.analyse(profile, output, kind)
    finally:
        output.unlink(missing_ok=True)  # perf data runs to tens of MB; the table is what is kept


# -- several worker processes (issue #33, deliverable 5) -------------------------------------------------------
@dataclass(frozen=True)
class Split:
    """A loaded server's CPU per recall split by who spends it."""

    python_ms: float  # the GIL-bound part: the interpreter, its libraries, conversions to Python objects
    engine_ms: float  # the engine's native work (it holds the GIL in process; a Qdrant server's would not)
    source: str  # how the split was read

    @property
    def total_ms(self) -> float:
        return self.python_ms + self.engine_ms


def split_of(window: Window, causes: engine_causes.CauseProfile | None = None) -> Split | None:
    """`window`'s server CPU per recall split by the share of perf samples inside the engine (`causes`: the
    engine may run in the calling Python thread), else by thread (`/proc`: the engine's own threads)."""
    if not window.calls:
        return None
    total = window.server_ms
    profiled = sum(causes.cpu_ms.values()) if causes is not None and causes.samples else 0.0
    if causes is not None and profiled > 0:
        engine = causes.native_ms() / profiled
        return Split((1 - engine) * total, engine * total, "perf samples inside the engine, any thread")
    if not window.threads:
        return None
    groups = engine_causes.group_cpu(window.threads)
    native = (groups["engine search threads"] + groups["other threads"]) / (sum(groups.values()) or 1.0)
    return Split((1 - native) * total, native * total, "`/proc` CPU of the engine's own threads")


def one_process(split: Split) -> float:
    """Recalls/s one embedded process can serve: the embedded engine holds the GIL for the whole of a call (two
    threads querying one shard use 1.0 core), so the whole recall, engine included, is bound to one core."""
    if split.total_ms <= 0:
        return math.nan
    return 1000 / split.total_ms


def worker_estimate(split: Split, cores: int, workers: int, remote_factor: float = 1.0) -> float:
    """Recalls/s of `workers` gateway processes against one Qdrant server sharing `cores` cores, estimated:

        min(workers × 1000 / python_ms, cores × 1000 / (python_ms + remote_factor × engine_ms))

    Each worker's Python part is GIL-bound to one core; the engine's work moves to the Qdrant server, costing
    `remote_factor` times what the embedded engine spends (1.0: the same; the gRPC encoding on both sides and the
    network hop are not measured here, so this is an upper bound)."""
    if split.python_ms <= 0:
        return math.nan
    cpu_bound = cores * 1000 / (split.python_ms + remote_factor * split.engine_ms)
    return min(workers * 1000 / split.python_ms, cpu_bound)

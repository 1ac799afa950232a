"""Sampling profiles with py-spy (all threads, so work the store runs in worker threads is seen too), with
cProfile as the fallback when py-spy is not installed (main thread only).

py-spy is not a dependency: `.venv/bin/pip install py-spy` to get the full profile section.
"""

from __future__ import annotations

import cProfile
import io
import os
import pstats
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from bench.procinfo import CLOCK_TICKS

REPO = Path(__file__).resolve().parent.parent
FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)$")
PROJECT_DIRS = ("gateway/", "memory/", "tenancy/", "ops/")

# Where a sample goes: a leaf frame that only waits (epoll, a condition variable) is idle; otherwise the first
# rule matching a frame, walking the stack from its leaf to its root and skipping plumbing frames (event loop,
# threads, contextlib), takes the sample; a stack of plumbing only is thread/event-loop hand-off.
# A rule is (bucket, file substring, function substring or None, source-line substring or None).
IDLE_LEAVES = (("selectors.py", "select"), ("threading.py", "Condition.wait"), ("threading.py", "Event.wait"))
PLUMBING = (
    "asyncio/",
    "anyio/",
    "threading.py",
    "concurrent/",
    "selectors.py",
    "contextlib.py",
    "queue.py",
    "runpy.py",
    "<frozen runpy>",
    "bench/",  # the benchmark's own driving loops
    "gateway/cli/main.py",  # roots of the server process: the event loop runs under them
    "uvicorn/main.py",
    "uvicorn/server.py",
)
HANDOFF = "event loop + thread hand-off (anyio.to_thread, wake-ups)"

# The stages of one recall (issue #19), each the sum of the buckets (and thread groups) named here; a bucket
# not named falls in "other".
STAGES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("HTTP + MCP parsing (uvicorn, h11, starlette, MCP SDK, pydantic, JSON)", (
        "HTTP server (uvicorn, h11, starlette)", "MCP SDK (JSON-RPC, sessions, transport)",
        "pydantic (MCP validation/serialisation)", "JSON encode/decode",
    )),
    ("auth (JWT verification)", ("JWT verification",)),
    ("rate-limit gate", ("rate-limit gate",)),
    ("gateway: tool boundary, middleware, metrics, logging", (
        "gateway: tools, middleware", "Prometheus metrics", "OpenTelemetry spans", "logging", "idempotency + audit",
    )),
    ("embedding + keyword vector of the query", ("embedding (wordllama)", "sparse (BM25) encoding")),
    ("engine: search threads (native, all queries)", ("native: edge-search",)),
    ("engine: dense query (calling thread)", ("engine: vector query (Rust)",)),
    ("engine: keyword query (calling thread)", ("engine: keyword query (Rust)",)),
    ("engine: payload reads by id (calling thread)", ("engine: payload reads by id (Rust)",)),
    ("payload → Memory, result conversion (store)", (
        "payload → Memory (from_payload)", "store: filters, result conversion",
    )),
    ("scoring: relevance, cues, rescoring, selection", ("rescoring + selection",)),
    ("engine service: validation, scopes, links", ("engine service: validation, ids",)),
    ("serialisation of the answer (gateway)", ("result → JSON (gateway)",)),
    ("access counts (background write)", ("engine: update / upsert (Rust)", "engine: scroll / lookup (Rust)")),
    ("event loop + thread hand-off", (HANDOFF,)),
)  # fmt: skip


def stage_table(profile: Profile) -> list[tuple[str, float]]:
    """CPU ms per call by stage: native thread groups from `/proc`, Python buckets from the samples."""
    cost = {name: main + workers for name, _share, main, workers in profile.buckets}
    cost |= {group: value for group, value in profile.thread_cpu if group.startswith("native:")}
    rows = []
    for stage, parts in STAGES:
        rows.append((stage, sum(cost.pop(part, 0.0) for part in parts)))
    rows.append(("other (interpreter, GC, stdlib, unattributed)", sum(cost.values())))
    return rows


RULES: tuple[tuple[str, str, str | None, str | None], ...] = (
    # the searches are in memory/stores/edge_search.py, the writes and lookups in edge.py: "edge" matches both
    ("engine: keyword query (Rust)", "memory/stores/edge", "keyword_query", "_shard.query"),
    ("engine: payload reads by id (Rust)", "memory/stores/edge", None, "_shard.retrieve"),
    ("engine: vector query (Rust)", "memory/stores/edge", None, "_shard.query"),
    ("engine: scroll / lookup (Rust)", "memory/stores/edge.py", None, "_shard.scroll"),
    ("engine: update / upsert (Rust)", "memory/stores/edge.py", None, "_shard.update"),
    ("engine: flush / optimize (Rust)", "memory/stores/edge.py", None, "_shard.flush"),
    ("engine: flush / optimize (Rust)", "memory/stores/edge.py", None, "_shard.optimize"),
    ("payload → Memory (from_payload)", "memory/stores/payload.py", "from_payload", None),
    ("Memory → payload + Point build", "memory/stores/payload.py", "to_payload", None),
    ("Memory → payload + Point build", "memory/stores/edge.py", "upsert", None),
    ("store: filters, result conversion", "memory/stores/", None, None),
    ("embedding (wordllama)", "wordllama", None, None),
    ("embedding (wordllama)", "memory/embedders/wordllama", None, None),
    ("rescoring + selection", "memory/recall/scoring.py", None, None),
    ("rescoring + selection", "memory/recall/ranking.py", None, None),
    ("rescoring + selection", "memory/recall/steps.py", None, None),
    ("rescoring + selection", "memory/recall/cues.py", None, None),
    ("rescoring + selection", "memory/recall/feedback.py", None, None),
    ("rescoring + selection", "memory/service.py", "_select", None),
    ("access-count bump (scheduling)", "memory/service.py", "_bump_access", None),
    ("access-count bump (scheduling)", "memory/service.py", "_schedule_access", None),
    ("write pipeline (memory/pipeline: extraction, supersession)", "memory/pipeline/", None, None),
    ("sparse (BM25) encoding", "memory/embedders/sparse", None, None),
    ("engine service: validation, ids", "memory/", None, None),
    ("OpenTelemetry spans", "opentelemetry", None, None),
    ("Prometheus metrics", "prometheus_client", None, None),
    ("rate-limit gate", "gateway/web/rate_limit_gate.py", None, None),
    ("rate-limit gate", "tenancy/rate_limit", None, None),
    ("JWT verification", "jwt/", None, None),
    ("JWT verification", "tenancy/", None, None),
    ("JWT verification", "cryptography", None, None),
    ("idempotency + audit", "gateway/tools/idempotent.py", None, None),
    ("idempotency + audit", "gateway/tools/audit.py", None, None),
    ("logging", "logging/", None, None),
    ("result → JSON (gateway)", "gateway/answers/serialize.py", None, None),
    ("result → JSON (gateway)", "gateway/errors.py", None, None),
    ("gateway: tools, middleware", "gateway/", None, None),
    ("gateway: tools, middleware", "ops/", None, None),
    ("pydantic (MCP validation/serialisation)", "pydantic", None, None),
    ("MCP SDK (JSON-RPC, sessions, transport)", "mcp/", None, None),
    ("MCP SDK (JSON-RPC, sessions, transport)", "mcp_types/", None, None),
    ("JSON encode/decode", "json/", None, None),
    ("HTTP server (uvicorn, h11, starlette)", "uvicorn/", None, None),
    ("HTTP server (uvicorn, h11, starlette)", "h11/", None, None),
    ("HTTP server (uvicorn, h11, starlette)", "httptools/", None, None),
    ("HTTP server (uvicorn, h11, starlette)", "uvloop/", None, None),
    ("HTTP server (uvicorn, h11, starlette)", "starlette/", None, None),
    ("HTTP client (httpx2): bench process", "httpx2/", None, None),
    ("HTTP client (httpx2): bench process", "httpcore", None, None),
)


# Engine CPU by cause (`bench.engine_causes`): one sample of the server process with its native stack (perf with
# DWARF unwinding, or py-spy --native), frames from the leaf to the root, goes to the first rule that matches. A
# rule is (cause, test, regular expression); the tests: `kernel-leaf` (the leaf is in the kernel and some frame's
# symbol matches), `leaf` (the leaf's symbol), `leaf-dso` (the leaf's shared object), `stack` (any frame's symbol:
# the sample is spent on behalf of that function), `stack-dso` (any frame's shared object). So the allocator and
# the scheduler are charged by the leaf whoever called them; the engine's work by what it was doing; Python's
# own allocator (pymalloc) counts as the interpreter.
ENGINE_DSO = "qdrant_edge"
WAKE_UPS = "thread-pool wake-ups, futex, scheduler"
PYO3_CAUSE = "pyo3: engine ↔ Python objects"
CAUSE_RULES: tuple[tuple[str, str, str], ...] = (
    (WAKE_UPS, "kernel-leaf", r"sched_yield|futex|schedule|try_to_wake_up|finish_task_switch|wake_up"),
    ("kernel: TCP, epoll, page faults, other syscalls", "kernel-leaf", r"."),
    (WAKE_UPS, "leaf", r"rayon_core::(registry|sleep|latch|job)|crossbeam_(deque|epoch)|sched_yield|pthread_cond|"
     r"futex|LockLatch|Condvar|::park|take_gil|drop_gil"),
    ("malloc / free (jemalloc or glibc)", "leaf-dso", r"libjemalloc|libtcmalloc"),
    ("malloc / free (jemalloc or glibc)", "leaf", r"^(__libc_|__GI___libc_)?(malloc|free|calloc|realloc|cfree)$|"
     r"_int_(malloc|free|realloc)|malloc_consolidate|tcache|unlink_chunk|__rdl_|__rust_(alloc|dealloc|realloc)|"
     r"^(sdallocx|mallocx|rallocx|je_)"),
    ("BM25: IDF counted over the filter", "stack", r"idf_statistics|corpus_idf"),
    ("payload JSON parse (serde_json, gridstore reads)", "stack",
     r"serde_json|read_payloads|gridstore|Compression>::decompress"),
    (PYO3_CAUSE, "stack", r"into_py|IntoPyObject|value_map_into_py|into_new_object|"
     r"into_bound_py_any|FromPyObject|extract_bound|frompyobject|PyList>::new"),
    ("filter checks (conditions, payload index)", "stack", r"condition_checker|ConditionChecker|check_condition|"
     r"iter_filtered_points|estimate_cardinality|filter_deferred_and_deleted|field_index|MapIndex|FilterContext|"
     r"filter_live_keys|query_points_filter"),
    ("stored vectors read (bincode, sparse)", "stack", r"read_vectors|vectors_by_offsets|bincode|StoredSparseVector"),
    ("vector math (dense + sparse scoring, HNSW)", "stack", r"hnsw|graph_layers|[Ss]corer|simd|dot_similarity|"
     r"cosine|DotProduct|metric|score_points|inverted_index|posting|bitpack|search_with_graph|plain_search"),
    ("engine: other (planning, ids, sorting, results)", "stack-dso", ENGINE_DSO),
    ("Python interpreter (libpython)", "leaf-dso", r"libpython|^python"),
    ("Python extension modules (numpy, pydantic-core, uvloop, tokenizers, ...)", "leaf-dso",
     r"site-packages|lib-dynload|\.cpython-|\.abi3\.so"),
)  # fmt: skip
OTHER_CAUSE = "other (libc, unresolved frames)"


@dataclass
class Profile:
    title: str
    tool: str
    samples: int = 0
    idle_samples: int = 0
    seconds: float = 0.0
    operations: int = 0
    rate: int = 0
    buckets: list[tuple[str, float, float, float]] = field(default_factory=list)  # share %, ms/call main, workers
    thread_cpu: list[tuple[str, float]] = field(default_factory=list)  # thread group, CPU ms per call
    top_self: list[tuple[str, float]] = field(default_factory=list)
    top_project: list[tuple[str, float]] = field(default_factory=list)
    note: str = ""
    raw_path: Path | None = None


def thread_cpu(pid: int) -> dict[str, float]:
    """CPU seconds so far per thread group of `pid`: the main thread, Python worker threads, and native threads
    by name (e.g. the engine's `edge-search-N` pool, which py-spy cannot see). Live threads only."""
    groups: dict[str, float] = {}
    for group, cpu in task_cpu(pid).values():
        groups[group] = groups.get(group, 0.0) + cpu
    return groups


def task_cpu(pid: int) -> dict[str, tuple[str, float]]:
    """Per live thread of `pid` (by thread id): its group (see `thread_cpu`) and its CPU seconds so far."""
    tasks: dict[str, tuple[str, float]] = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return tasks
    for tid in tids:
        try:
            stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
        except (FileNotFoundError, ProcessLookupError):
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat.rsplit(")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
        if tid == str(pid):
            group = "main thread (event loop)"
        elif name.startswith("python") or name == Path(sys.executable).name:
            group = "Python worker threads (anyio.to_thread)"
        else:
            group = f"native: {name.rstrip('0123456789').rstrip('-_') or name}"
        tasks[tid] = (group, cpu)
    return tasks


def group_deltas(before: dict[str, tuple[str, float]], after: dict[str, tuple[str, float]]) -> dict[str, float]:
    """CPU seconds per thread group between two `task_cpu` readings, from the threads alive at both (a thread that
    ended in between takes its CPU with it: never a negative figure)."""
    groups: dict[str, float] = {}
    for tid, (group, cpu) in after.items():
        earlier = before.get(tid)
        groups[group] = groups.get(group, 0.0) + (max(0.0, cpu - earlier[1]) if earlier else cpu)
    return groups


def py_spy_path() -> str | None:
    local = Path(sys.executable).parent / "py-spy"
    if local.exists():
        return str(local)
    return shutil.which("py-spy")


_source_cache: dict[str, list[str]] = {}


def _source_line(file: str, line: int) -> str:
    if file not in _source_cache:
        path = REPO / file
        try:
            _source_cache[file] = path.read_text().splitlines() if path.is_file() else []
        except OSError:
            _source_cache[file] = []
    lines = _source_cache[file]
    return lines[line - 1] if 0 < line <= len(lines) else ""


def _normalise_file(file: str) -> str:
    """A frame's file relative to the repo or to site-packages, whichever it lies in."""
    for marker in ("site-packages/", "lib/python3"):
        if marker in file:
            file = file.split(marker, 1)[1]
            if marker == "lib/python3":
                file = file.split("/", 1)[1] if "/" in file else file
    repo = str(REPO) + "/"
    return file[len(repo) :] if file.startswith(repo) else file


def _parse_frame(frame: str) -> tuple[str, str, int]:
    match = FRAME.match(frame.strip())
    if not match:
        return frame.strip(), "", 0
    return match["func"], _normalise_file(match["file"]), int(match["line"] or 0)


def _is_idle(frames: list[tuple[str, str, int]]) -> bool:
    func, file, _ = frames[-1]
    return any(file.endswith(f) and func.endswith(name) for f, name in IDLE_LEAVES)


def _bucket(frames: list[tuple[str, str, int]]) -> str:
    leaf_is_plumbing = frames[-1][1].startswith(PLUMBING)
    for func, file, line in reversed(frames):
        if file.startswith(PLUMBING):
            continue
        if leaf_is_plumbing and file.startswith(PROJECT_DIRS):
            return HANDOFF  # e.g. handing a store call to a worker thread, or waking the loop afterwards
        for bucket, file_part, func_part, source_part in RULES:
            if file_part not in file:
                continue
            if func_part is not None and func_part not in func:
                continue
            if source_part is not None and source_part not in _source_line(file, line):
                continue
            return bucket
    if all(file.startswith(PLUMBING) for _, file, _ in frames):
        return HANDOFF
    return "other (interpreter, GC, stdlib)"


def analyse_collapsed(text: str, profile: Profile, top: int = 12) -> Profile:
    """Fill `profile` from py-spy's raw (collapsed-stack) output."""
    buckets: Counter[str] = Counter()
    in_main: Counter[str] = Counter()
    self_time: Counter[str] = Counter()
    project: Counter[str] = Counter()
    total = 0
    for row in text.splitlines():
        stack, _, count_text = row.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [_parse_frame(f) for f in stack.split(";")]
        frames = [f for f in frames if not f[0].startswith("process ") and not f[0].startswith("thread ")]
        if not frames:
            continue
        if _is_idle(frames):
            profile.idle_samples += count
            continue
        total += count
        bucket = _bucket(frames)
        buckets[bucket] += count
        if not frames[0][0].startswith("Thread._bootstrap"):  # worker threads start there, the main one does not
            in_main[bucket] += count
        func, file, _ = frames[-1]
        self_time[f"{func} ({file})"] += count
        seen = {f"{f} ({p})" for f, p, _ in frames if p.startswith(PROJECT_DIRS)}
        for key in seen:
            project[key] += count
    profile.samples = total
    if total:
        per_call = 1000 / (profile.rate * profile.operations) if profile.rate and profile.operations else 0.0
        profile.buckets = [
            (name, 100 * n / total, in_main[name] * per_call, (n - in_main[name]) * per_call)
            for name, n in buckets.most_common()
        ]
        profile.top_self = [(name, 100 * n / total) for name, n in self_time.most_common(top)]
        profile.top_project = [(name, 100 * n / total) for name, n in project.most_common(top)]
    return profile


async def py_spy_profile(
    pid: int,
    title: str,
    drive: Callable[[], Awaitable[int]],
    raw_path: Path,
    rate: int = 250,
    attach_s: float = 1.0,
) -> Profile:
    """Sample every thread of `pid` (without pausing it) while `drive()` runs; `drive` returns its call count."""
    exe = py_spy_path()
    assert exe is not None
    raw_path.parent.mkdir(parents=True, exist_ok=True)
    command = [exe, "record", "--pid", str(pid), "--rate", str(rate), "--format", "raw", "--nonblocking"]
    process = subprocess.Popen(  # noqa: ASYNC220 - starting a sampler is instant; it runs beside the event loop
        [*command, "--output", str(raw_path)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    await anyio.sleep(attach_s)  # let py-spy attach before the measured work starts
    if process.poll() is not None:
        err = process.stderr.read().decode() if process.stderr else ""
        return Profile(title, "py-spy", note=f"py-spy could not attach: {err.strip()[:200]}")
    cpu_before = task_cpu(pid)
    started = time.perf_counter()
    operations = await drive()
    seconds = time.perf_counter() - started
    cpu_after = group_deltas(cpu_before, task_cpu(pid))
    process.send_signal(signal.SIGINT)
    await anyio.to_thread.run_sync(lambda: process.wait(timeout=60))
    text = await anyio.to_thread.run_sync(lambda: raw_path.read_text() if raw_path.exists() else "")
    profile = Profile(title, f"py-spy {rate} Hz, all threads", seconds=seconds, operations=operations, rate=rate)
    profile.raw_path = raw_path
    if operations:
        profile.thread_cpu = sorted(
            ((g, spent * 1000 / operations) for g, spent in cpu_after.items()),
            key=lambda item: -item[1],
        )
    return analyse_collapsed(text, profile)


async def cprofile_profile(title: str, drive: Callable[[], Awaitable[int]], top: int = 12) -> Profile:
    """Deterministic profile of this process's main thread (the event loop) while `drive()` runs."""
    profiler = cProfile.Profile()
    started = time.perf_counter()
    profiler.enable()
    operations = await drive()
    profiler.disable()
    seconds = time.perf_counter() - started
    stats = pstats.Stats(profiler, stream=io.StringIO())
    entries = stats.stats  # type: ignore[attr-defined]
    total = sum(v[2] for v in entries.values()) or 1.0
    rows = sorted(entries.items(), key=lambda kv: kv[1][2], reverse=True)[:top]
    cumulative = sorted(
        ((k, v) for k, v in entries.items() if _normalise_file(k[0]).startswith(PROJECT_DIRS)),
        key=lambda kv: kv[1][3],
        reverse=True,
    )[:top]
    profile = Profile(title, "cProfile, main thread only", seconds=seconds, operations=operations)
    profile.samples = sum(v[1] for v in entries.values())
    profile.top_self = [(f"{k[2]} ({_normalise_file(k[0])})", 100 * v[2] / total) for k, v in rows]
    profile.top_project = [(f"{k[2]} ({_normalise_file(k[0])})", 100 * v[3] / seconds) for k, v in cumulative]
    profile.note = "py-spy is not installed, so worker-thread time (the store engine) is not visible here"
    return profile

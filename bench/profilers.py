"""Sampling profiles with py-spy (all threads, so work the store runs in worker threads is seen too), with
cProfile as the fallback when py-spy is not installed (main thread only).

py-spy is not a dependency: `.venv/bin/pip install py-spy` to get the full profile section.

py-spy's collapsed stacks are parsed and each sample charged here, by the rules of `bench.profiling`; the profiles
are `bench.profiling.Profile`s.
"""

from __future__ import annotations

import cProfile
import io
import pstats
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from bench.profiling import HANDOFF, IDLE_LEAVES, PLUMBING, PROJECT_DIRS, RULES, Profile
from bench.thread_cpu import group_deltas, task_cpu

REPO = Path(__file__).resolve().parent.parent
FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)$")


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

"""Engine CPU by cause: the server process sampled with `perf record` (the software `cpu-clock` event, DWARF
stacks, every thread: the engine's native search threads as well as the Python ones) while one client recalls in a
loop. Each sample is charged to a cause by the rules of `bench.profiling.CAUSE_RULES`; the shares of each thread
group are turned into CPU ms per recall with that group's `/proc` CPU over the same window, so the totals are
exact and only the split is sampled. `py-spy record --native` is the fallback when perf cannot record (it sees
the Python threads only); without either, the table says why.

This module owns the recorder (choosing it, starting and stopping it), reading its output back as stacks, the
classification, and `CauseProfile`, what the report renders."""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import tempfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from bench.profilers import FRAME, py_spy_path
from bench.profiling import CAUSE_RULES, ENGINE_DSO, OTHER_CAUSE, PYO3_CAUSE

PERF_RATE = 249  # Hz per CPU; DWARF stacks of 8 KiB: the engine's frames are near the leaf
STACK_BYTES = 8192
PY_SPY_RATE = 250
GROUPS = ("engine search threads", "Python threads", "other threads")
Frame = tuple[str, str]  # symbol, shared object (or source file)


def perf_path() -> str | None:
    return shutil.which("perf") or ("/usr/bin/perf" if Path("/usr/bin/perf").exists() else None)


@cache
def choose_recorder() -> tuple[str, str]:
    """("perf" | "py-spy" | "", what the report says about it): perf when it can record a process here (root or
    `perf_event_paranoid` low enough), else py-spy when installed, else nothing and why."""
    problems = []
    perf = perf_path()
    if perf is None:
        problems.append("no perf binary")
    else:
        with tempfile.TemporaryDirectory() as tmp:
            probe = subprocess.run(
                [perf, "record", "-e", "cpu-clock", "-F", "99", "-o", f"{tmp}/probe.data", "--", "true"],
                capture_output=True,
                text=True,
                check=False,
            )
        hardware = subprocess.run(
            [perf, "stat", "-x", ",", "-e", "instructions", "true"], capture_output=True, text=True, check=False
        )
        counters = "hardware counters unavailable (a VM without a PMU)" if "not supported" in hardware.stderr else ""
        counters = counters or ("hardware counters available" if hardware.returncode == 0 else "")
        if probe.returncode == 0:
            return "perf", f"perf record, software event cpu-clock at {PERF_RATE} Hz, DWARF stacks; {counters}"
        paranoid = Path("/proc/sys/kernel/perf_event_paranoid")
        level = paranoid.read_text().strip() if paranoid.exists() else "?"
        problems.append(f"perf cannot record (perf_event_paranoid {level}): {probe.stderr.strip()[:160]}")
    if py_spy_path() is not None:
        return "py-spy", f"py-spy record --native at {PY_SPY_RATE} Hz (Python threads only: {'; '.join(problems)})"
    return "", "; ".join(problems) + "; py-spy is not installed either"


@dataclass
class Recorder:
    kind: str
    output: Path
    process: subprocess.Popen[bytes] | None = None


def start(kind: str, pid: int, output: Path) -> Recorder:
    """Start sampling every thread of `pid` into `output`; `stop` ends it."""
    output.parent.mkdir(parents=True, exist_ok=True)
    if kind == "perf":
        perf = perf_path()
        assert perf is not None
        command = [perf, "record", "-e", "cpu-clock", "-F", str(PERF_RATE), "--call-graph", f"dwarf,{STACK_BYTES}"]
        command += ["-p", str(pid), "-o", str(output)]
    else:
        exe = py_spy_path()
        assert exe is not None
        command = [exe, "record", "--pid", str(pid), "--rate", str(PY_SPY_RATE), "--native", "--format", "raw"]
        command += ["--output", str(output)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return Recorder(kind, output, process)


def stop(recorder: Recorder) -> str:
    """Stop the recorder; "" when it wrote its samples, else what went wrong."""
    process = recorder.process
    if process is None:
        return "not started"
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
    try:
        _, err = process.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        process.kill()
        _, err = process.communicate()
    if not recorder.output.exists() or recorder.output.stat().st_size == 0:
        return f"{recorder.kind} wrote nothing: {err.decode(errors='replace').strip()[:200]}"
    return ""


# -- reading the samples back ----------------------------------------------------------------------------------
_HEADER = re.compile(r"^(?P<comm>\S.*?)\s+(?P<tid>\d+)\s+(?P<period>\d+)\s*$")


def perf_samples(data: Path) -> Iterator[tuple[str, list[Frame], int]]:
    """(thread name, frames from the leaf, weight) per sample of a `perf record` file (`perf script`, inlined
    frames not expanded: resolving them takes minutes)."""
    perf = perf_path()
    assert perf is not None
    command = [perf, "script", "--no-inline", "-F", "comm,tid,period,ip,sym,dso", "-i", str(data)]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) as script:
        assert script.stdout is not None
        comm, frames, weight = "", list[Frame](), 0
        for line in script.stdout:
            if not line.strip():
                if comm:
                    yield comm, frames, weight
                comm, frames = "", []
                continue
            if not line[0].isspace():
                match = _HEADER.match(line.rstrip("\n"))
                comm, frames, weight = (match["comm"], [], int(match["period"])) if match else ("?", [], 1)
                continue
            body = line.strip().split(None, 1)
            text = body[1] if len(body) > 1 else ""
            symbol, _, dso = text.rpartition(" (")
            frames.append((symbol or text, dso.rstrip(")")))
        if comm:
            yield comm, frames, weight


def py_spy_samples(raw: Path) -> Iterator[tuple[str, list[Frame], int]]:
    """The same from py-spy's collapsed stacks (root first; Python frames' files stand in for a shared object)."""
    for row in raw.read_text().splitlines():
        stack, _, count = row.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames: list[Frame] = []
        for text in stack.split(";"):
            if text.startswith(("process ", "thread ")):
                continue
            match = FRAME.match(text.strip())
            file = match["file"] if match else ""
            dso = "libpython (Python code)" if file.endswith(".py") else file
            frames.append((match["func"] if match else text, dso))
        yield "python", frames[::-1], int(count)


# -- classification --------------------------------------------------------------------------------------------
_COMPILED = [(cause, test, re.compile(pattern)) for cause, test, pattern in CAUSE_RULES]


def _in_kernel(frame: Frame) -> bool:
    return frame[1].startswith("[kernel")


def cause_of(frames: list[Frame]) -> str:
    """The first rule of `CAUSE_RULES` that the stack matches (frames from the leaf)."""
    if not frames:
        return OTHER_CAUSE
    leaf_symbol, leaf_dso = frames[0]
    for cause, test, pattern in _COMPILED:
        if test == "kernel-leaf":
            if _in_kernel(frames[0]) and any(pattern.search(symbol) for symbol, _ in frames):
                return cause
        elif test == "leaf":
            if pattern.search(leaf_symbol):
                return cause
        elif test == "leaf-dso":
            if pattern.search(leaf_dso):
                return cause
        elif test == "stack":
            if any(pattern.search(symbol) for symbol, _ in frames):
                return cause
        elif test == "stack-dso" and any(pattern.search(dso) for _, dso in frames):
            return cause
    return OTHER_CAUSE


def group_of(comm: str) -> str:
    if comm.startswith("edge-search"):
        return GROUPS[0]
    return GROUPS[1] if comm.startswith("python") else GROUPS[2]


def group_cpu(thread_cpu: dict[str, float]) -> dict[str, float]:
    """Thread groups (`bench.thread_cpu.task_cpu`) folded into `GROUPS`."""
    folded = dict.fromkeys(GROUPS, 0.0)
    for name, seconds in thread_cpu.items():
        if name == "native: edge-search":
            folded[GROUPS[0]] += seconds
        elif name.startswith(("main thread", "Python worker")):
            folded[GROUPS[1]] += seconds
        else:
            folded[GROUPS[2]] += seconds
    return folded


def _short(symbol: str, width: int = 90) -> str:
    """A Rust symbol without its generic arguments, cut to `width`."""
    depth, out = 0, []
    for char in symbol:
        if char == "<":
            depth += 1
            if depth == 1:
                out.append("<…>")
        elif char == ">":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(char)
    text = "".join(out).replace("<…>::", "").strip() or symbol
    return text if len(text) <= width else text[: width - 1] + "…"


@dataclass
class CauseProfile:
    """One profiled loop: sampled shares by cause and thread group, scaled to `/proc` CPU ms per recall."""

    label: str
    recorder: str = ""
    recalls: int = 0
    seconds: float = 0.0
    cpu_ms: dict[str, float] = field(default_factory=dict)  # thread group -> /proc CPU ms per recall
    samples: dict[str, Counter[str]] = field(default_factory=dict)  # thread group -> cause -> weight
    top_leaves: list[tuple[str, float]] = field(default_factory=list)  # (leaf symbol, share of all samples %)
    native: Counter[str] = field(default_factory=Counter)  # thread group -> weight inside the engine, pyo3 aside
    note: str = ""

    def native_ms(self) -> float:
        """CPU ms per recall spent inside the engine's native code (any thread), its conversions to Python
        objects aside: the part that would move to a Qdrant server (in process it holds the GIL too)."""
        total = 0.0
        for group in GROUPS:
            weights = sum(self.samples.get(group, Counter()).values())
            if weights:
                total += self.native[group] / weights * self.cpu_ms.get(group, 0.0)
        return total

    def ms(self, cause: str, group: str) -> float:
        counts = self.samples.get(group, Counter())
        total = sum(counts.values())
        return counts[cause] / total * self.cpu_ms.get(group, 0.0) if total else 0.0

    def total_ms(self, cause: str) -> float:
        return sum(self.ms(cause, group) for group in GROUPS)

    def share(self, cause: str, group: str) -> float:
        counts = self.samples.get(group, Counter())
        total = sum(counts.values())
        return 100 * counts[cause] / total if total else 0.0

    def causes(self) -> list[str]:
        seen: Counter[str] = Counter()
        for group in GROUPS:
            for cause in self.samples.get(group, Counter()):
                seen[cause] += round(self.ms(cause, group) * 1000)
        return [cause for cause, _ in seen.most_common()]


def analyse(profile: CauseProfile, output: Path, kind: str) -> CauseProfile:
    """Fill `profile` (its `cpu_ms` and `recalls` already set) from the recorder's output."""
    samples = perf_samples(output) if kind == "perf" else py_spy_samples(output)
    leaves: Counter[str] = Counter()
    for comm, frames, weight in samples:
        group, cause = group_of(comm), cause_of(frames)
        profile.samples.setdefault(group, Counter())[cause] += weight
        if group == GROUPS[0] or (cause != PYO3_CAUSE and any(ENGINE_DSO in dso for _, dso in frames)):
            profile.native[group] += weight
        if frames:
            leaves[_short(frames[0][0])] += weight
    total = sum(leaves.values())
    profile.top_leaves = [(name, 100 * n / total) for name, n in leaves.most_common(12)] if total else []
    if not total:
        profile.note = profile.note or f"{kind} recorded no samples"
    return profile

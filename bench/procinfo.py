"""What the benchmark reads about processes and the machine: RSS, CPU time, context switches, threads and the
allocator from /proc, disk use, versions."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def memory_kib(pid: int) -> dict[str, int]:
    """VmRSS, RssAnon and RssFile of a process, in KiB (from /proc/<pid>/status)."""
    values: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
            values[key] = int(rest.split()[0])
    return values


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (all its threads) so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def context_switches(pid: int) -> int:
    """Voluntary + involuntary context switches of every thread of a process so far (live threads only)."""
    total = 0
    for status in _task_files(pid, "status"):
        for line in status.splitlines():
            if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                total += int(line.split()[1])
    return total


def thread_names(pid: int) -> dict[str, int]:
    """How many threads of a process carry each name, digits stripped (e.g. `edge-search`: 8)."""
    names: dict[str, int] = {}
    for comm in _task_files(pid, "comm"):
        name = comm.strip().rstrip("0123456789").rstrip("-_") or comm.strip()
        names[name] = names.get(name, 0) + 1
    return names


def _task_files(pid: int, name: str) -> list[str]:
    texts: list[str] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return texts
    for tid in tids:
        try:
            texts.append(Path(f"/proc/{pid}/task/{tid}/{name}").read_text())
        except (FileNotFoundError, ProcessLookupError):
            continue
    return texts


def allocator(pid: int) -> str:
    """ "jemalloc" when the process has libjemalloc mapped (`/proc/<pid>/maps`: preloaded or linked), else "system"."""
    try:
        maps = Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return "unknown"
    return "jemalloc" if "libjemalloc" in maps else "system (glibc malloc)"


def disk_bytes(path: Path) -> int:
    """Allocated bytes under `path`, as `du` counts them (st_blocks)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except FileNotFoundError:
                continue
    return total


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def git_commit(repo: Path) -> str:
    """The short commit of `repo`, flagged when tracked files differ from it. `BENCH_COMMIT` names the commit
    when the benchmark runs on an exported tree (`git archive`), which has no `.git`."""
    if os.environ.get("BENCH_COMMIT"):
        return os.environ["BENCH_COMMIT"]
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=repo, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=repo, capture_output=True, text=True
        ).stdout.strip()
        return f"{out} (working tree has uncommitted changes)" if dirty else out
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def package_version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} / {five:.2f} / {fifteen:.2f}"


def machine_info(repo: Path) -> dict[str, str]:
    mem_total = "unknown"
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal"):
            mem_total = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": git_commit(repo),
        "cpus (nproc)": str(os.cpu_count()),
        "cpu model": cpu_model(),
        "memory": mem_total,
        "kernel": platform.release(),
        "python": sys.version.split()[0],
        "packages": ", ".join(
            f"{p} {package_version(p)}" for p in ("mcp", "qdrant-edge-py", "wordllama", "uvicorn", "numpy")
        ),
    }

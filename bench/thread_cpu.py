"""CPU per thread group of a process, read from `/proc/<pid>/task/*/stat`: the main thread (event loop), the
Python worker threads, and native threads by name (e.g. the engine's `edge-search-N` pool, which py-spy cannot
see); and the CPU each group spent between two readings."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from bench.procinfo import CLOCK_TICKS


def task_cpu(pid: int) -> dict[str, tuple[str, float]]:
    """Per live thread of `pid` (by thread id): its group (the main thread, Python worker threads, or a native
    thread by name, e.g. the engine's `edge-search-N` pool, which py-spy cannot see) and its CPU seconds so far."""
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

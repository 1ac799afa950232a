"""`hindsight serve` runs with jemalloc preloaded where the machine has it, and with the system allocator when the
setting says so (ops/allocator.py); the environment it re-executes with keeps what was preloaded before."""

from __future__ import annotations

import sys
from pathlib import Path

from ops.allocator import (
    REEXEC_MARK,
    allocator_in_use,
    find_jemalloc,
    jemalloc_preloaded,
    preload_environment,
)
from tests.ops.deploy_support import ready_gateway
from tests.required import missing

JEMALLOC_MISSING = (
    "libjemalloc.so.2 is missing: install it (Debian/Ubuntu: apt-get install -y libjemalloc2); .ci/run does"
)


def require_jemalloc() -> Path:
    found = find_jemalloc()
    if found is None:
        missing("check the allocator", JEMALLOC_MISSING)
    return found


def test_the_first_library_found_is_the_one_preloaded(tmp_path: Path) -> None:
    absent, present, later = tmp_path / "a.so", tmp_path / "b.so", tmp_path / "c.so"
    present.write_bytes(b"")
    later.write_bytes(b"")
    assert find_jemalloc((absent, present, later)) == present
    assert find_jemalloc((absent,)) is None


def test_a_preload_already_naming_jemalloc_is_recognised_and_others_are_kept() -> None:
    assert jemalloc_preloaded({"LD_PRELOAD": "/opt/lib/libjemalloc.so.2"})
    assert jemalloc_preloaded({"LD_PRELOAD": "/lib/libfoo.so:/usr/lib/libjemalloc.so.2"})
    assert not jemalloc_preloaded({"LD_PRELOAD": "/lib/libfoo.so"})
    assert not jemalloc_preloaded({})
    env = preload_environment({"LD_PRELOAD": "/lib/libfoo.so", "KEEP": "1"}, Path("/usr/lib/libjemalloc.so.2"))
    assert env["LD_PRELOAD"] == "/usr/lib/libjemalloc.so.2 /lib/libfoo.so"
    assert env["KEEP"] == "1" and env[REEXEC_MARK] == "1"


def serve_and_read_allocator(tmp_path: Path, *settings: str) -> str:
    """Starts `serve` (with `settings` as NAME=VALUE) and returns the allocator its first log line names."""
    command = ["env", *settings, sys.executable, "-m", "gateway.cli", "serve"]
    with ready_gateway(command, cwd=tmp_path) as (_, output):
        lines = [line for line in output.splitlines() if "memory allocator:" in line]
    assert len(lines) == 1, output  # logged once: the re-executed process, not before the re-exec
    return lines[0].split("memory allocator:")[1].split('"')[0].strip()


def test_serve_runs_with_jemalloc_mapped_by_default(tmp_path: Path) -> None:
    require_jemalloc()
    assert serve_and_read_allocator(tmp_path) == "jemalloc"


def test_serve_keeps_the_system_allocator_when_the_setting_is_off(tmp_path: Path) -> None:
    require_jemalloc()
    assert serve_and_read_allocator(tmp_path, "HINDSIGHT_JEMALLOC=false") == "system"


def test_this_test_process_reports_its_own_allocator() -> None:
    assert allocator_in_use() in {"jemalloc", "system"}
    assert allocator_in_use(pid=2**22 + 7) == "unknown"

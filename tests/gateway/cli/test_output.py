"""What the long commands write besides their result, run as subprocesses in direct mode: a `tqdm` progress bar
only when stderr is a terminal (nothing into a pipe or a file), and logs as one JSON object per line."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from tests.gateway.cli_runs import clean_env, hindsight

RECORDS = 3


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return clean_env(HINDSIGHT_DATA_DIR=str(tmp_path / "data"))


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps({"content": f"Imported fact number {i}"}) + "\n" for i in range(RECORDS)))
    return path


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "gateway.cli", *args]


def import_args(source: Path) -> list[str]:
    return ["import", "--tenant", "acme", "--namespace", "user:1", str(source)]


def run_with_stderr_on_a_terminal(args: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str]:
    """Run with stderr on a pseudo-terminal; returns the exit code and what the terminal received."""
    primary, secondary = pty.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))  # a terminal has a size
    process = subprocess.Popen(args, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=secondary)
    os.close(secondary)
    received = bytearray()
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([primary], [], [], 1.0)
            if not ready:
                if process.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(primary, 65536)
            except OSError:  # EIO: the child closed the terminal (it exited)
                break
            if not chunk:
                break
            received += chunk
        else:
            raise AssertionError("the command did not finish")
        return process.wait(timeout=30), received.decode("utf-8", "replace")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(primary)


def test_import_writes_no_progress_frames_when_stderr_is_a_pipe(
    tmp_path: Path, env: dict[str, str], source: Path
) -> None:
    result = hindsight(*import_args(source), env=env, cwd=tmp_path)

    assert result.returncode == 0, result.stderr[-3000:]
    assert "\r" not in result.stderr
    assert "%|" not in result.stderr and "memory/s" not in result.stderr
    plain = [line for line in result.stderr.splitlines() if not line.startswith("{")]
    assert plain == [f"imported {RECORDS}, skipped 0 (already present) into user:1; 0 sessions with 0 new events"]


def test_import_draws_a_tqdm_bar_when_stderr_is_a_terminal(tmp_path: Path, env: dict[str, str], source: Path) -> None:
    code, terminal = run_with_stderr_on_a_terminal(command(*import_args(source)), env, tmp_path)

    assert code == 0, terminal[-3000:]
    assert "import user:1" in terminal
    assert "100%|" in terminal and f"{RECORDS}/{RECORDS}" in terminal


def test_maintain_logs_one_json_object_per_line(tmp_path: Path, env: dict[str, str], source: Path) -> None:
    imported = hindsight(*import_args(source), env=env, cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr[-3000:]

    result = hindsight("maintain", "--tenant", "acme", env=env, cwd=tmp_path)

    assert result.returncode == 0, result.stderr[-3000:]
    lines = [json.loads(line) for line in result.stderr.splitlines()]
    assert lines, "maintain logged nothing"
    assert all({"time", "level", "logger", "message"} <= line.keys() for line in lines)
    assert any(line["logger"] == "hindsight.cli" and "maintenance pass" in line["message"] for line in lines)
    assert json.loads(result.stdout)["acme"]["namespaces"] == 1


def test_direct_import_logs_json_and_no_http_request_lines(tmp_path: Path, env: dict[str, str], source: Path) -> None:
    result = hindsight(*import_args(source), env=env, cwd=tmp_path)

    assert result.returncode == 0, result.stderr[-3000:]
    logged = [json.loads(line) for line in result.stderr.splitlines() if line.startswith("{")]
    assert any(line.get("type") == "audit" and line["tool"] == "import_memories" for line in logged)
    assert "HTTP Request" not in result.stderr

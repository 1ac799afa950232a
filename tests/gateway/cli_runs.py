"""Running the `hindsight` CLI in a subprocess as an operator runs it, for the tests that drive it end to end: an
environment without this machine's `HINDSIGHT_*` variables, one call that runs a command and captures what it
prints, and `hindsight serve` kept running on a free port for the length of a block."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import httpx2

REPO = Path(__file__).resolve().parents[2]


def clean_env(**settings: str) -> dict[str, str]:
    """This process's environment without its `HINDSIGHT_*` variables, plus `settings`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
    return env | settings


def hindsight(
    *args: str, env: dict[str, str], cwd: Path = REPO, timeout: float = 120, check: bool = False
) -> subprocess.CompletedProcess[str]:
    """`hindsight *args` run to its end (within `timeout` seconds), its output captured as text; with `check`, a
    non-zero exit raises `CalledProcessError`."""
    return subprocess.run(
        [sys.executable, "-m", "gateway.cli", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=check,
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until_live(url: str, process: subprocess.Popen[str], deadline_s: float = 60.0) -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"server exited early with {process.returncode}")
        try:
            if httpx2.get(url, timeout=1.0).status_code == 200:
                return
        except httpx2.HTTPError:
            pass
        time.sleep(0.05)  # readiness polling of a child process, not a timing assumption
    raise AssertionError("server did not become live")


@contextmanager
def serving(*args: str, env: dict[str, str], cwd: Path, log: IO[str]) -> Iterator[str]:
    """`hindsight serve *args` in a subprocess on the port `env` names (`HINDSIGHT_PORT`), what it prints written
    to `log`, live from the start of the block to its end; yields the URL of its MCP endpoint."""
    port = env["HINDSIGHT_PORT"]
    process = subprocess.Popen(
        [sys.executable, "-m", "gateway.cli", "serve", *args],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=cwd,
    )
    try:
        wait_until_live(f"http://127.0.0.1:{port}/livez", process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=30)

"""`hindsight serve` in a subprocess on a free port, over the benchmark's data directory."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

import httpx2

from bench.procinfo import cpu_seconds, memory_kib

REPO = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def server_env(data_dir: Path, port: int, secret: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
    env |= {
        "HINDSIGHT_DATA_DIR": str(data_dir),
        "HINDSIGHT_PORT": str(port),
        "HINDSIGHT_JWT_SECRET": secret,
        "HINDSIGHT_RATE_LIMIT_ENABLED": "false",
        "HINDSIGHT_LOG_LEVEL": "warning",  # no access log line per request
        "PYTHONPATH": str(REPO),
    }
    return env | dict(extra or {})


class ServerProcess:
    """`python -m gateway.cli serve` with the embedded default (in-process working memory, edge store)."""

    def __init__(self, data_dir: Path, secret: str, log_path: Path, env: Mapping[str, str] | None = None) -> None:
        self.data_dir = data_dir
        self.env = dict(env or {})
        self.port = free_port()
        self.secret = secret
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None
        self.started_in = 0.0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def start(self, deadline_s: float = 120.0) -> None:
        started = time.perf_counter()
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "gateway.cli", "serve"],
                env=server_env(self.data_dir, self.port, self.secret, self.env),
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.data_dir.parent,  # no stray .env file is read
            )
        deadline = time.monotonic() + deadline_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited with {self.process.returncode}; see {self.log_path}")
            try:
                if httpx2.get(f"http://127.0.0.1:{self.port}/readyz", timeout=2.0).status_code == 200:
                    self.started_in = time.perf_counter() - started
                    self._first_maintenance(deadline)
                    return
            except httpx2.HTTPError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"server not ready after {deadline_s}s; see {self.log_path}")

    def _first_maintenance(self, deadline: float) -> None:
        """Wait for the store's first maintenance pass, which the runtime starts at once (the embedded store builds
        its keyword statistics in it: 2-3 s of CPU at 100k memories): measured windows see the steady state, not
        the build. Read from `hindsight_background_rounds_total{task="store_maintenance"}` on `/metrics`."""
        pattern = re.compile(
            r'^hindsight_background_rounds_total\{[^}]*task="store_maintenance"[^}]*\} ([0-9.e+]+)$', re.M
        )
        while time.monotonic() < deadline:
            found = pattern.search(httpx2.get(f"http://127.0.0.1:{self.port}/metrics", timeout=2.0).text)
            if found and float(found[1]) >= 1:
                return
            time.sleep(0.05)
        raise RuntimeError(f"the server's first store maintenance did not end in time; see {self.log_path}")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)

    def memory_kib(self) -> dict[str, int]:
        return memory_kib(self.pid)

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.pid)

    def __enter__(self) -> ServerProcess:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

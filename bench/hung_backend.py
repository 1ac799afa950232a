"""`python -m bench.hung_backend [--timeout S] [--cooldown S] [--threshold N]`: each call's time while Redis hangs.

Measured from outside, as a client sees it: a real `hindsight serve` process (rate limits on, failing open: the
defaults) over a real `redis-server`, both on free loopback ports; MCP calls are plain JSON-RPC POSTs to `/mcp`.
The Redis process is stopped with SIGSTOP, so its socket stays open and accepts connections but nothing answers
(a hung server, not a refused connection), and later resumed with SIGCONT. Phases:

- `up`: every call once with Redis answering (the baseline);
- `frozen 1`, `frozen 2`: every call once, then again, while Redis is stopped (the circuit breaker, closed at
  first, opens during the first pass at the default threshold; `--threshold 1000` shows the deadlines alone);
- `resumed`: after SIGCONT, how long until `/readyz` answers 200 (polled), then every call once more.

Calls: `whoami`, `tools/list` and `recall_memory` (which need Redis only for rate limits, failing open),
`write_memory` (its namespace lock is a Redis lease), `get_working_memory` and `record_event` (which need Redis:
`backend_unavailable` while it is frozen), `/readyz`.
Each row shows the wall time and the outcome (`ok`, the tool's error code, or the HTTP status). Redis gets
SIGCONT whatever happens. `measure()` returns the rows for other stages (bench.hostile).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2

from bench.server import ServerProcess, free_port
from tenancy import mint_token

SECRET = "hung-backend-bench-secret-0123456789-abcdef"
NAMESPACE = "user:bench"
CALLS: dict[str, tuple[str, dict[str, Any]]] = {  # label: (JSON-RPC method, params)
    "whoami": ("tools/call", {"name": "whoami", "arguments": {}}),
    "tools/list": ("tools/list", {}),
    "recall_memory": ("tools/call", {"name": "recall_memory", "arguments": {"query": "what does the user like"}}),
    "write_memory": ("tools/call", {"name": "write_memory", "arguments": {"content": "The user likes green tea"}}),
    # (a new fact each time: `_call` puts the call's number in it, so no write is a repeat answered unlocked)
    "get_working_memory": ("tools/call", {"name": "get_working_memory", "arguments": {"session_id": "s1"}}),
    "record_event": (
        "tools/call",
        {"name": "record_event", "arguments": {"session_id": "s1", "type": "user_message", "content": "hello"}},
    ),
}
READY_WAIT_SECONDS = 60.0  # how long `resumed` waits for /readyz 200


@dataclass(frozen=True)
class Row:
    phase: str
    call: str
    seconds: float
    outcome: str


@contextmanager
def redis_server(workdir: Path) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """A `redis-server` on a free loopback port (no persistence), and its URL; killed (after SIGCONT) on exit."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("redis-server is not installed")
    port = free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    arguments = ["--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(workdir)]
    process = subprocess.Popen(
        [binary, *arguments, "--protected-mode", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(64).startswith(b"+PONG"):
                        break
            except OSError:
                if time.monotonic() > deadline:
                    raise
            time.sleep(0.02)  # a child process starting
        yield process, f"redis://127.0.0.1:{port}/0"
    finally:
        os.kill(process.pid, signal.SIGCONT)
        process.kill()
        process.wait(timeout=10)


def _outcome(response: httpx2.Response) -> str:
    if response.status_code != 200:
        return f"HTTP {response.status_code}"
    body = response.json()
    if "error" in body:
        return f"error {body['error'].get('data', {}).get('code') or body['error'].get('code')}"
    result = body.get("result", {})
    if result.get("isError"):
        try:
            return str(json.loads(result["content"][0]["text"])["error"]["code"])
        except (KeyError, IndexError, ValueError):
            return "tool error"
    return "ok"


def _call(http: httpx2.Client, label: str, token: str, number: int) -> tuple[float, str]:
    if label == "/readyz":
        started = time.perf_counter()
        response = http.get("/readyz")
        seconds = time.perf_counter() - started
        return seconds, "ok" if response.status_code == 200 else f"HTTP {response.status_code}"
    method, params = CALLS[label]
    if label == "write_memory":
        params = {**params, "arguments": {"content": f"The user likes green tea number {number}"}}
    started = time.perf_counter()
    response = http.post(
        "/mcp",
        json={"jsonrpc": "2.0", "id": number, "method": method, "params": params},
        headers={"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"},
    )
    return time.perf_counter() - started, _outcome(response)


def measure(
    timeout_seconds: float = 5.0, cooldown_seconds: float = 5.0, threshold: int = 5, workdir: Path | None = None
) -> list[Row]:
    """Run the phases (module docstring) against a fresh server and Redis; the rows in order."""
    with tempfile.TemporaryDirectory(prefix="hung-backend-") as scratch:
        root = workdir or Path(scratch)
        rows: list[Row] = []
        token = mint_token(SECRET, tenant="bench", subject="agent", read=[NAMESPACE], write=[NAMESPACE])
        with redis_server(root / "redis") as (redis_process, redis_url):
            env = {
                "HINDSIGHT_REDIS_URL": redis_url,
                "HINDSIGHT_RATE_LIMIT_ENABLED": "true",
                "HINDSIGHT_BACKEND_TIMEOUT_SECONDS": str(timeout_seconds),
                "HINDSIGHT_REDIS_BREAKER_COOLDOWN_SECONDS": str(cooldown_seconds),
                "HINDSIGHT_REDIS_BREAKER_THRESHOLD": str(threshold),
            }
            (root / "data").mkdir(parents=True, exist_ok=True)
            with (
                ServerProcess(root / "data", SECRET, root / "server.log", env=env) as server,
                httpx2.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=300.0) as http,
            ):
                labels = [*CALLS, "/readyz"]
                number = 0

                def run_pass(phase: str) -> None:
                    nonlocal number
                    for label in labels:
                        number += 1
                        seconds, outcome = _call(http, label, token, number)
                        rows.append(Row(phase, label, seconds, outcome))

                run_pass("up")
                os.kill(redis_process.pid, signal.SIGSTOP)
                try:
                    run_pass("frozen 1")
                    run_pass("frozen 2")
                finally:
                    os.kill(redis_process.pid, signal.SIGCONT)
                resumed = time.perf_counter()
                outcome = "not ready"
                while time.perf_counter() - resumed < READY_WAIT_SECONDS:
                    if http.get("/readyz").status_code == 200:
                        outcome = "ok"
                        break
                    time.sleep(0.1)  # polling the server from outside
                rows.append(Row("resumed", "until /readyz 200", time.perf_counter() - resumed, outcome))
                run_pass("resumed")
        return rows


def render(rows: Sequence[Row]) -> str:
    lines = ["| phase | call | seconds | outcome |", "|---|---|---:|---|"]
    lines += [f"| {row.phase} | {row.call} | {row.seconds:.3f} | {row.outcome} |" for row in rows]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--timeout", type=float, default=5.0, help="HINDSIGHT_BACKEND_TIMEOUT_SECONDS (default 5)")
    parser.add_argument(
        "--cooldown", type=float, default=5.0, help="HINDSIGHT_REDIS_BREAKER_COOLDOWN_SECONDS (default 5)"
    )
    parser.add_argument(
        "--threshold", type=int, default=5, help="HINDSIGHT_REDIS_BREAKER_THRESHOLD (default 5; 1000: no breaker)"
    )
    args = parser.parse_args(argv)
    print(render(measure(args.timeout, args.cooldown, args.threshold)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

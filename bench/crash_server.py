"""The processes the crash stage (`bench.crash`) runs: the `hindsight serve` under test, SIGKILLed and restarted on
the same data directory (`Server`), and a redis-server of the run for the Redis backend (`redis_server`)."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import anyio.to_thread
import redis

from bench.server import ServerProcess, free_port

SECRET = "bench-crash-secret-0123456789-abcdefghijklmnopqrstuvwxyz"


class Server:
    """The server under test and its restarts; `up` is set while it serves (a new, unset event per kill)."""

    def __init__(self, data_dir: Path, env: dict[str, str]) -> None:
        self.process = ServerProcess(data_dir, SECRET, data_dir.parent / "server.log", env)
        self.up = anyio.Event()
        self.kills = 0

    @property
    def url(self) -> str:
        return self.process.url

    async def start(self) -> None:
        await anyio.to_thread.run_sync(self.process.start)
        self.up.set()

    async def kill_and_restart(self) -> None:
        self.up = anyio.Event()  # before the kill: a client that fails from now on waits for the restart
        process = self.process.process
        assert process is not None
        process.kill()  # SIGKILL
        await anyio.to_thread.run_sync(process.wait)
        self.kills += 1
        await self.start()

    def stop(self) -> None:
        self.process.stop()


@contextmanager
def redis_server(workdir: Path) -> Iterator[str]:
    """A redis-server of this run on a free port (no persistence: Redis is not what is killed here)."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("redis-server is not installed")
    port = free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    command = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    process = subprocess.Popen(command, cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        deadline = time.monotonic() + 10
        while not _answers(url):
            if time.monotonic() > deadline or process.poll() is not None:
                raise SystemExit("redis-server did not start")
            time.sleep(0.05)  # readiness polling of a child process
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


def _answers(url: str) -> bool:
    client = redis.Redis.from_url(url, socket_timeout=1)
    try:
        return bool(client.ping())
    except redis.RedisError:
        return False
    finally:
        client.close()

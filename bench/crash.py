"""Exactly once under SIGKILL (issue #32, item 4): `python -m bench.crash --kills 30`.

A `hindsight serve` subprocess takes a steady stream of requests that skip the content check or have none:
forced `write_memory` calls, forced `write_memories` batches (each item its own request id) and `record_event`
calls, each with a request id, from a few concurrent clients that always have one request in flight. The server is
SIGKILLed again and again (each time after a random number of acknowledged calls, so requests die at every
step: before, during and after their store call) and restarted on the same data directory; every client retries
its unacknowledged request with the same request id until it is acknowledged, as an agent does. At the end every
stored memory and event is read back through the API and counted per request id:

- duplicates: records beyond the first stored for one request id (0 is exactly once);
- lost: acknowledged answers whose memory or event is not stored (0 is nothing lost);
- retried: requests that needed more than one attempt; partial: retries that found their first attempt already
  applied (a memory answered "completed an interrupted earlier attempt", an event recorded before the retry
  began), i.e. kills that landed between the store and the answer.

Backends (`--backends`): `inprocess` (the embedded default: idempotency records in process, lost with the
process; events in sqlite), `redis` (idempotency, locks and events on a redis-server started here) and `cluster`
(a Redis Cluster of 3 primaries with a replica each, started here; halfway through, the primary holding the
tenant fails over to its replica while calls run). Vectors are in the embedded engine in every case.
"""

from __future__ import annotations

import argparse
import importlib
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import httpx2
import redis

from bench.server import ServerProcess, free_port
from memory.write.repeats import COMPLETED
from tenancy import mint_token

SECRET = "bench-crash-secret-0123456789-abcdefghijklmnopqrstuvwxyz"
TENANT = "acme"
NAMESPACE = "user:1"
KINDS = ("forced_write", "forced_batch", "event")
BATCH_ITEMS = 4
STATEMENTS = (  # forced writes repeat these on purpose: force stores a repeat, once per request
    "The team meeting moved to Friday at 10.",
    "Alice prefers tea over coffee.",
    "The staging database listens on port 5433.",
    "Our release train leaves every second Tuesday.",
)
ATTEMPTS = 400  # a request's attempts before the run gives up on it (a bug, not a crash)
LEASE_SECONDS = 1.0  # idempotency lease: how long a retry waits for the claim of a killed call (Redis backends)
BACKENDS = ("inprocess", "redis", "cluster")


class CallRefused(RuntimeError):
    """A call answered with an error a retry cannot fix (idempotency_conflict, invalid_argument, ...)."""


@dataclass
class KindTally:
    requests: int = 0
    retried: int = 0
    partial: int = 0
    acknowledged: dict[str, str] = field(default_factory=dict)  # request id -> the id its answer named


@dataclass
class Acknowledged:
    answer: dict[str, Any]
    attempts: int
    sent: datetime  # when the answered attempt was sent


@dataclass
class KindReport:
    requests: int
    retried: int
    partial: int
    duplicates: int
    lost: int


@dataclass
class BackendReport:
    backend: str
    kills: int
    seconds: float
    failovers: int
    kinds: dict[str, KindReport]


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


class Driver:
    """The clients of one run: each keeps one request in flight, counts acknowledgements, retries until done."""

    def __init__(self, server: Server, token: str, rng: random.Random, workers: int) -> None:
        self.server = server
        self.headers = {"authorization": f"Bearer {token}", "accept": "application/json, text/event-stream"}
        self.rng = rng
        self.workers = workers
        self.tallies = {kind: KindTally() for kind in KINDS}
        self.acks = 0
        self.threshold = 0
        self.enough = anyio.Event()
        self.finishing = False
        self.sessions: set[str] = set()

    def arm(self, low: int, high: int) -> None:
        """The next kill comes after a random number of acknowledged calls in [low, high]."""
        self.acks, self.threshold, self.enough = 0, self.rng.randint(low, high), anyio.Event()

    def _acknowledged(self) -> None:
        self.acks += 1
        if self.acks >= self.threshold:
            self.enough.set()

    async def call(self, http: httpx2.AsyncClient, tool: str, arguments: dict[str, Any]) -> Acknowledged:
        """The tool's answer once acknowledged; retries across kills and retryable errors with the same arguments
        (so the same request ids)."""
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
        for attempt in range(1, ATTEMPTS + 1):
            up = self.server.up
            await up.wait()
            sent = datetime.now().astimezone()
            try:
                response = await http.post(self.server.url, json=body, headers=self.headers)
            except httpx2.HTTPError:
                continue  # the server died under the call: wait for the restart, then retry
            if response.status_code != 200:
                if response.status_code in (429, 503):
                    continue
                raise CallRefused(f"{tool}: HTTP {response.status_code}: {response.text[:200]}")
            result = response.json()["result"]
            if result.get("isError"):
                error = _error_of(result)
                if error.get("retryable"):
                    continue
                raise CallRefused(f"{tool}: {error}")
            return Acknowledged(result["structuredContent"], attempt, sent)
        raise CallRefused(f"{tool}: not acknowledged after {ATTEMPTS} attempts")

    async def batch(self, http: httpx2.AsyncClient, items: list[dict[str, Any]]) -> tuple[dict[str, Any], int]:
        """A `write_memories` call retried (the same items, so the same request ids) until every item is written;
        an item that failed retryably (`backend_unavailable`: it and the later ones were not attempted) is retried
        with the rest, the items done replay."""
        attempts = 0
        while attempts < ATTEMPTS:
            done = await self.call(http, "write_memories", {"items": items})
            answer, attempts = done.answer, attempts + done.attempts
            errors = [result["error"] for result in answer["results"] if "error" in result]
            if not errors:
                return answer, attempts
            if not all(error.get("retryable") for error in errors):
                raise CallRefused(f"write_memories items: {errors}")
        raise CallRefused(f"write_memories: not written after {ATTEMPTS} attempts")

    async def worker(self, kind: str, number: int) -> None:
        tally = self.tallies[kind]
        async with httpx2.AsyncClient(timeout=120.0) as http:
            n = 0
            while not self.finishing:
                rid = f"{kind}-{number}-{n}"
                tally.requests += 1
                if kind == "forced_write":
                    content = STATEMENTS[(number + n) % len(STATEMENTS)]
                    done = await self.call(http, "write_memory", {"content": content, "force": True, "request_id": rid})
                    answer, attempts = done.answer, done.attempts
                    tally.acknowledged[rid] = answer["id"]
                    tally.partial += answer.get("reason") == COMPLETED
                elif kind == "forced_batch":
                    items: list[dict[str, Any]] = [
                        {"content": STATEMENTS[(n + i) % len(STATEMENTS)], "force": True, "request_id": f"{rid}.{i}"}
                        for i in range(BATCH_ITEMS)
                    ]
                    answer, attempts = await self.batch(http, items)
                    for item, result in zip(items, answer["results"], strict=True):
                        tally.acknowledged[item["request_id"]] = result["id"]
                        tally.partial += result.get("reason") == COMPLETED
                    tally.requests += BATCH_ITEMS - 1  # counted per item, as the chaos run counted them
                    tally.retried += (attempts > 1) * (BATCH_ITEMS - 1)
                else:
                    session = f"crash-{number}"
                    self.sessions.add(session)
                    arguments = {
                        "session_id": session,
                        "type": "user_message",
                        "content": f"Worker {number} finished step {n} of the migration.",
                        "request_id": rid,
                    }
                    done = await self.call(http, "record_event", arguments)
                    event, attempts = done.answer["event"], done.attempts
                    tally.acknowledged[rid] = event["id"]
                    # recorded before the answered attempt was sent: an earlier attempt's event, found by its request
                    tally.partial += datetime.fromisoformat(event["recorded_at"]) < done.sent
                tally.retried += attempts > 1
                self._acknowledged()
                n += 1

    async def stored(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Every memory and event of the run, read back through the API."""
        events: list[dict[str, Any]] = []
        async with httpx2.AsyncClient(timeout=120.0) as http:
            memories = await self.listed(http, "list_memories", {"include_deleted": True}, "memories", "cursor")
            for session in sorted(self.sessions):
                events += await self.listed(http, "list_events", {"session_id": session}, "events", "after")
        return memories, events

    async def listed(
        self, http: httpx2.AsyncClient, tool: str, arguments: dict[str, Any], items: str, cursor_argument: str
    ) -> list[dict[str, Any]]:
        """Every item of a listing tool, 200 a page: called again with each page's `next_cursor` (passed as
        `cursor_argument`) until a page has none."""
        found: list[dict[str, Any]] = []
        query: dict[str, Any] = {"limit": 200, **arguments}
        while True:
            page = (await self.call(http, tool, query)).answer
            found += page[items]
            if page["next_cursor"] is None:
                return found
            query = {**query, cursor_argument: page["next_cursor"]}

    def report(self, memories: list[dict[str, Any]], events: list[dict[str, Any]]) -> dict[str, KindReport]:
        stored: dict[str, list[tuple[str | None, str]]] = {
            "forced_write": [(m["source"]["request_id"], m["id"]) for m in memories],
            "forced_batch": [(m["source"]["request_id"], m["id"]) for m in memories],
            "event": [(e["request_id"], e["id"]) for e in events],
        }
        reports: dict[str, KindReport] = {}
        for kind in KINDS:
            tally = self.tallies[kind]
            mine = [(rid, sid) for rid, sid in stored[kind] if rid is not None and rid.startswith(f"{kind}-")]
            counts = Counter(rid for rid, _ in mine)
            ids = {sid for _, sid in mine}
            duplicates = sum(count - 1 for count in counts.values())
            lost = sum(1 for rid, answered in tally.acknowledged.items() if answered not in ids or counts[rid] == 0)
            reports[kind] = KindReport(tally.requests, tally.retried, tally.partial, duplicates, lost)
        return reports


def _error_of(result: dict[str, Any]) -> dict[str, Any]:
    try:
        error: dict[str, Any] = json.loads(result["content"][0]["text"])["error"]
    except (KeyError, IndexError, ValueError):
        return {"code": "unknown", "message": str(result)[:200], "retryable": False}
    return error


async def run_backend(
    backend: str,
    workdir: Path,
    *,
    kills: int,
    seed: int = 32,
    workers: int = 2,
    acks_between: tuple[int, int] = (4, 30),
    redis_url: str | None = None,
    cluster: bool = False,
    failover: Callable[[], None] | None = None,
) -> BackendReport:
    """One measured run: `kills` SIGKILLs of a server on `workdir`, then the counts (see the module docstring).
    `redis_url` puts idempotency, locks and events on that Redis (`cluster`: a node of a Redis Cluster);
    `failover`, if given, runs (in a thread) halfway through, while calls are in flight."""
    env = {"HINDSIGHT_IDEMPOTENCY_LEASE_SECONDS": str(LEASE_SECONDS)}
    if redis_url is not None:
        env["HINDSIGHT_REDIS_URL"] = redis_url
        env["HINDSIGHT_REDIS_CLUSTER"] = "true" if cluster else "false"
    await anyio.Path(workdir).mkdir(parents=True, exist_ok=True)
    server = Server(workdir / "data", env)
    token = mint_token(SECRET, tenant=TENANT, subject="agent-crash", read=[NAMESPACE], write=[NAMESPACE])
    driver = Driver(server, token, random.Random(seed), workers)
    started = time.monotonic()
    failovers = 0
    await server.start()
    try:
        async with anyio.create_task_group() as group:
            for kind in KINDS:
                for number in range(workers):
                    group.start_soon(driver.worker, kind, number)
            for kill in range(kills):
                driver.arm(*acks_between)
                await driver.enough.wait()
                if failover is not None and kill == kills // 2:
                    await anyio.to_thread.run_sync(failover)  # calls go on meanwhile, some fail retryably
                    failovers += 1
                    driver.arm(*acks_between)
                    await driver.enough.wait()
                await server.kill_and_restart()
            driver.arm(*acks_between)
            await driver.enough.wait()  # calls answered after the last restart
            driver.finishing = True  # each client finishes its request in flight, then stops
        memories, events = await driver.stored()
    finally:
        server.stop()
    return BackendReport(backend, server.kills, time.monotonic() - started, failovers, driver.report(memories, events))


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


async def run(backends: list[str], kills: int, seed: int, workers: int, root: Path) -> list[BackendReport]:
    reports: list[BackendReport] = []
    for backend in backends:
        workdir = root / backend
        if backend == "inprocess":
            reports.append(await run_backend(backend, workdir, kills=kills, seed=seed, workers=workers))
        elif backend == "redis":
            with redis_server(workdir / "redis") as url:
                reports.append(
                    await run_backend(backend, workdir, kills=kills, seed=seed, workers=workers, redis_url=url)
                )
        else:
            reports.append(await _run_cluster(workdir, kills, seed, workers))
    return reports


async def _run_cluster(workdir: Path, kills: int, seed: int, workers: int) -> BackendReport:
    from redis.crc import key_slot

    servers = importlib.import_module("tests.redis_server")  # the test suite's cluster of real redis-servers
    cluster = servers.RedisClusterServer(workdir / "cluster")
    cluster.start()
    try:
        slot = key_slot(f"{{{TENANT}}}".encode())
        primary = next(
            port for port in cluster.masters() if any(low <= slot <= high for low, high in cluster.slots_of(port))
        )
        replica = cluster.masters()[primary][0]
        return await run_backend(
            "cluster",
            workdir,
            kills=kills,
            seed=seed,
            workers=workers,
            redis_url=cluster.url,
            cluster=True,
            failover=lambda: cluster.failover(replica),
        )
    finally:
        cluster.stop()


def render(reports: list[BackendReport]) -> str:
    lines = [
        f"{'backend':<10} {'kind':<13} {'requests':>8} {'retried':>8} {'partial':>8} {'duplicates':>10} {'lost':>5}"
    ]
    for report in reports:
        for kind, row in report.kinds.items():
            lines.append(
                f"{report.backend:<10} {kind:<13} {row.requests:>8} {row.retried:>8} {row.partial:>8} "
                f"{row.duplicates:>10} {row.lost:>5}"
            )
        extra = f", {report.failovers} failover" if report.failovers else ""
        lines.append(f"{report.backend:<10} {report.kills} SIGKILLs{extra}, {report.seconds:.0f} s")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.crash", description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=30, help="SIGKILLs per backend (default 30)")
    parser.add_argument("--backends", default="inprocess,redis,cluster", help="comma-separated: " + ",".join(BACKENDS))
    parser.add_argument("--workers", type=int, default=2, help="concurrent clients per kind (default 2)")
    parser.add_argument("--seed", type=int, default=32)
    args = parser.parse_args(argv)
    backends = [b for b in args.backends.split(",") if b]
    if unknown := set(backends) - set(BACKENDS):
        parser.error(f"unknown backends: {', '.join(sorted(unknown))}")
    with tempfile.TemporaryDirectory(prefix="hindsight-crash-") as root:
        reports = anyio.run(run, backends, args.kills, args.seed, args.workers, Path(root))
    print(render(reports))
    bad = sum(row.duplicates + row.lost for report in reports for row in report.kinds.values())
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

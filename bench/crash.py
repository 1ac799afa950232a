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
import random
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.to_thread

from bench.crash_clients import KINDS, Driver, KindReport
from bench.crash_server import SECRET, Server, redis_server
from tenancy import mint_token

TENANT = "acme"
NAMESPACE = "user:1"
LEASE_SECONDS = 1.0  # idempotency lease: how long a retry waits for the claim of a killed call (Redis backends)
BACKENDS = ("inprocess", "redis", "cluster")


@dataclass
class BackendReport:
    backend: str
    kills: int
    seconds: float
    failovers: int
    kinds: dict[str, KindReport]


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

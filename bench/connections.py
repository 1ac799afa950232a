"""`python -m bench.connections [--connections 5000] [--mode idle|slow] [--hold 20] [--addresses 1] [--lifted]`:
whether connections hoarded from one address (or a few) take the gateway down (issue #32.5).

A `hindsight serve` subprocess (embedded default, rate limits off, its connection limits at their defaults, or
lifted with `--lifted`: no caps and a 300 s header deadline, as before them) is measured alone, then while one
attacker address (127.0.1.1; `--addresses K`: 127.0.1.1 to 127.0.1.K, in turn) holds N connections that send nothing
(`idle`) or a request line and then one header line a second (`slow`) for `--hold` seconds. Meanwhile a prober
(127.0.0.3) GETs `/livez` on a new connection every 0.2 s, as a kubelet does, and a victim (127.0.0.1) calls
`recall_memory` back to back over MCP. Printed: how the attacker's connections were answered (503 at once, 408 at
the header deadline, or left open) and how many were still open after each second, the probe's and the recall's p50
/ p99 / max and failures alone and under attack, and the server's CPU time during the attack.

The attacker needs a file descriptor per connection: the soft `RLIMIT_NOFILE` is raised towards the hard one
(the server subprocess inherits it) and the number is printed.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import resource
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx2

from bench.mcp_load import call, mcp_client
from bench.procinfo import cpu_seconds, load_average
from bench.server import ServerProcess
from bench.stats import Samples, ms
from tenancy import mint_token

SECRET = "bench-connections-secret-0123456789abcdef"
ATTACKERS, PROBER = "127.0.1.", "127.0.0.3"  # the victim uses the default source, 127.0.0.1
PROBE_EVERY = 0.2
CONNECTING_AT_ONCE = 256
LIFTED = {
    "HINDSIGHT_MAX_CONNECTIONS": "1000000",
    "HINDSIGHT_MAX_CONNECTIONS_PER_CLIENT": "1000000",
    "HINDSIGHT_REQUEST_HEADER_TIMEOUT_SECONDS": "300",
}
FACTS = ["The user's deploy target is AWS eu-west-1", "The user prefers short answers", "The user lives in Lyon"]


@dataclass
class Calls:
    """Latencies of the calls that succeeded, and the failures by kind."""

    samples: Samples = field(default_factory=Samples)
    failures: Counter[str] = field(default_factory=Counter)

    def line(self) -> str:
        values = self.samples
        worst = max(values.values) * 1000 if values.values else math.nan
        failed = ", ".join(f"{n} {kind}" for kind, n in self.failures.most_common()) or "none"
        return (
            f"n={len(values)}  p50 {ms(values.p50)} ms  p99 {ms(values.p99)} ms  max {ms(worst)} ms  failed: {failed}"
        )


@dataclass
class Hoard:
    """What became of the attacker's connections."""

    wanted: int
    opened: int = 0
    not_opened: Counter[str] = field(default_factory=Counter)
    open_now: int = 0
    # by the status line the server sent before closing ("closed" without one): seconds from opening to its close
    answers: dict[str, list[float]] = field(default_factory=dict)
    open_by_second: list[int] = field(default_factory=list)
    began: float = 0.0
    all_opened_after: float = 0.0  # seconds from the first connect until the last connection was opened


def raise_open_files(needed: int) -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = needed if hard == resource.RLIM_INFINITY else min(hard, needed)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


async def hold_one(
    port: int, source: str, mode: str, hoard: Hoard, gate: asyncio.Semaphore, stop: asyncio.Event
) -> None:
    async with gate:
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
        except OSError as exc:
            hoard.not_opened[type(exc).__name__] += 1
            return
    opened = time.monotonic()
    hoard.all_opened_after = max(hoard.all_opened_after, opened - hoard.began)
    hoard.opened += 1
    hoard.open_now += 1
    trickle = asyncio.create_task(_trickle(writer, stop)) if mode == "slow" else None
    try:
        first = await _first_bytes(reader, stop)
        if first is not None:
            hoard.answers.setdefault(first, []).append(time.monotonic() - opened)
    finally:
        hoard.open_now -= 1
        if trickle is not None:
            trickle.cancel()
        writer.close()


async def _first_bytes(reader: asyncio.StreamReader, stop: asyncio.Event) -> str | None:
    """The status line the server answered before closing ("closed" without one); None when we stopped first."""
    read = asyncio.ensure_future(reader.read(4096))
    stopped = asyncio.ensure_future(stop.wait())
    try:
        done, _ = await asyncio.wait({read, stopped}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()
    if read not in done:
        read.cancel()
        return None
    try:
        data = read.result()
    except OSError:
        return "reset"
    if not data:
        return "closed"
    with_rest = data + await _until_eof(reader)
    return with_rest.split(b"\r\n", 1)[0].decode("latin-1").removeprefix("HTTP/1.1 ")


async def _until_eof(reader: asyncio.StreamReader) -> bytes:
    try:
        return await reader.read()
    except OSError:
        return b""


async def _trickle(writer: asyncio.StreamWriter, stop: asyncio.Event) -> None:
    try:
        writer.write(b"GET /livez HTTP/1.1\r\nHost: gateway\r\n")
        while not stop.is_set():
            await asyncio.sleep(1.0)  # the attack's own pace
            writer.write(b"X-Slow: 1\r\n")
            await writer.drain()
    except (OSError, RuntimeError):
        return


async def probe(port: int, until: float, into: Calls) -> None:
    transport = httpx2.AsyncHTTPTransport(local_address=PROBER, limits=httpx2.Limits(max_keepalive_connections=0))
    async with httpx2.AsyncClient(transport=transport, timeout=5.0) as client:
        while time.monotonic() < until:
            began = time.perf_counter()
            try:
                answer = await client.get(f"http://127.0.0.1:{port}/livez")
                if answer.status_code == 200:
                    into.samples.add(time.perf_counter() - began)
                else:
                    into.failures[f"HTTP {answer.status_code}"] += 1
            except httpx2.HTTPError as exc:
                into.failures[type(exc).__name__] += 1
            await asyncio.sleep(max(0.0, PROBE_EVERY - (time.perf_counter() - began)))  # the probe's period


async def recall(url: str, token: str, until: float, into: Calls) -> None:
    async with mcp_client(url, token) as client:
        while time.monotonic() < until:
            began = time.perf_counter()
            try:
                await call(client, "recall_memory", {"query": "where does the user deploy?"})
                into.samples.add(time.perf_counter() - began)
            except Exception as exc:  # a failed call is a figure here, not the end of the run
                into.failures[type(exc).__name__] += 1


async def count_open(hoard: Hoard, stop: asyncio.Event) -> None:
    while not stop.is_set():
        await asyncio.sleep(1.0)  # one sample a second
        hoard.open_by_second.append(hoard.open_now)


@dataclass
class Run:
    mode: str
    lifted: bool
    addresses: int
    open_files: int
    hoard: Hoard
    alone: dict[str, Calls]
    attacked: dict[str, Calls]
    server_cpu_s: float
    hold: float
    load: str


async def measure(connections: int, mode: str, hold: float, addresses: int, lifted: bool, workdir: Path | None) -> Run:
    open_files = raise_open_files(connections + 1024)
    token = mint_token(SECRET, tenant="victim", subject="victim", read=["user:v"], write=["user:v"], ttl_seconds=3600)
    load = load_average()
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        root = Path(tmp)
        server = ServerProcess(root / "data", SECRET, root / "server.log", env=LIFTED if lifted else None)
        server.start()
        try:
            async with mcp_client(server.url, token) as client:
                for fact in FACTS:
                    await call(client, "write_memory", {"content": fact, "namespace": "user:v"})
            alone = {"livez": Calls(), "recall": Calls()}
            until = time.monotonic() + 5.0
            await asyncio.gather(
                probe(server.port, until, alone["livez"]), recall(server.url, token, until, alone["recall"])
            )
            hoard, stop = Hoard(connections, began=time.monotonic()), asyncio.Event()
            gate = asyncio.Semaphore(CONNECTING_AT_ONCE)
            cpu_before = cpu_seconds(server.pid)
            holders = [
                asyncio.create_task(hold_one(server.port, f"{ATTACKERS}{1 + i % addresses}", mode, hoard, gate, stop))
                for i in range(connections)
            ]
            counter = asyncio.create_task(count_open(hoard, stop))
            attacked = {"livez": Calls(), "recall": Calls()}
            until = hoard.began + hold
            await asyncio.gather(
                probe(server.port, until, attacked["livez"]), recall(server.url, token, until, attacked["recall"])
            )
            stop.set()
            await asyncio.gather(*holders, counter)
            server_cpu = cpu_seconds(server.pid) - cpu_before
        finally:
            server.stop()
    return Run(mode, lifted, addresses, open_files, hoard, alone, attacked, server_cpu, hold, load)


def render(run: Run) -> str:
    hoard = run.hoard
    answers = ", ".join(
        f"{len(after)} × {what} (after {sorted(after)[len(after) // 2]:.2f} s, median)"
        for what, after in sorted(hoard.answers.items(), key=lambda item: -len(item[1]))
    )
    failed = ", ".join(f"{n} {kind}" for kind, n in hoard.not_opened.items()) or "none"
    by_second = " ".join(str(n) for n in hoard.open_by_second)
    limits = "lifted (no caps, 300 s header deadline)" if run.lifted else "defaults"
    attackers = f"{ATTACKERS}1" if run.addresses == 1 else f"{ATTACKERS}1-{run.addresses}"
    return "\n".join(
        [
            f"hindsight serve, connection limits {limits}; ulimit -n {run.open_files}; load average {run.load}",
            f"attacker {attackers}: {hoard.wanted} {run.mode} connections, {hoard.opened} opened "
            f"in {hoard.all_opened_after:.2f} s (not opened: {failed}), held for {run.hold:g} s",
            f"  answered by the server, then closed: {answers or 'none'}",
            f"  still open at each second: {by_second}",
            f"  server CPU during the attack: {run.server_cpu_s:.2f} s",
            f"/livez from {PROBER}, a new connection every {PROBE_EVERY:g} s:",
            f"  alone         {run.alone['livez'].line()}",
            f"  under attack  {run.attacked['livez'].line()}",
            "recall_memory from 127.0.0.1, back to back:",
            f"  alone         {run.alone['recall'].line()}",
            f"  under attack  {run.attacked['recall'].line()}",
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.connections", description=__doc__.split("\n\n")[0])
    parser.add_argument("--connections", type=int, default=5000, help="connections the attacker opens (5000)")
    parser.add_argument("--mode", choices=("idle", "slow"), default="idle", help="send nothing, or trickle headers")
    parser.add_argument("--hold", type=float, default=20.0, help="seconds the attacker holds them (20)")
    parser.add_argument("--addresses", type=int, default=1, help="attacker addresses the connections come from (1)")
    parser.add_argument("--lifted", action="store_true", help="lift the server's connection limits (as before)")
    parser.add_argument("--workdir", type=Path, help="where the server's temporary data directory goes")
    args = parser.parse_args(argv)
    run = asyncio.run(measure(args.connections, args.mode, args.hold, args.addresses, args.lifted, args.workdir))
    print(render(run), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

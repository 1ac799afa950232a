"""A raw MCP client: JSON-RPC posted with httpx2 to `/mcp`, no SDK, so a benchmark measures the server's work and
as little client work as a request can take. The gateway's transport is stateless with JSON answers: the
`initialize` handshake is optional and hands out no session, so a client may post `tools/call` at once (the
fairness bench does); `RawSession.initialize` does the handshake a real client does and keeps a session header
if a server ever sends one.

This module owns the request bodies (`tool_call`, shared with `bench.fairness`), the session, the measured
window (`Window`: server CPU, context switches and histograms from the server's `/proc` and `/metrics`, the
client's own CPU, round trips) and the driver that runs in a child process (`run_in_child`), so the client's
CPU is neither the server's nor mixed with the benchmark process's."""

from __future__ import annotations

import json
import multiprocessing
import queue
import time
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import anyio
import httpx2

from bench import engine_causes, server_histogram
from bench.procinfo import context_switches, cpu_seconds
from bench.stats import Samples
from bench.thread_cpu import group_deltas, task_cpu

HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
PROTOCOL_VERSION = "2025-06-18"


def request(method: str, params: dict[str, Any], call_id: int | None = 1) -> bytes:
    body: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if call_id is not None:
        body["id"] = call_id
    return json.dumps(body).encode()


def tool_call(name: str, arguments: dict[str, Any], call_id: int = 1) -> bytes:
    return request("tools/call", {"name": name, "arguments": arguments}, call_id)


class RawCallFailed(RuntimeError):
    pass


def checked(answer: httpx2.Response) -> httpx2.Response:
    """The answer of a call that succeeded (HTTP 200, a result that is no tool error), else RawCallFailed."""
    if answer.status_code != 200 or b'"isError":false' not in answer.content:
        raise RawCallFailed(f"{answer.status_code}: {answer.text[:300]}")
    return answer


class RawSession:
    """One HTTP connection (keep-alive) with a bearer token: `post` a prebuilt body, `call` a tool."""

    def __init__(self, url: str, token: str, timeout: float = 60.0) -> None:
        self.url = url
        self.http = httpx2.AsyncClient(headers={**HEADERS, "authorization": f"Bearer {token}"}, timeout=timeout)

    async def __aenter__(self) -> RawSession:
        await self.http.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.http.__aexit__(exc_type, exc, tb)

    async def initialize(self) -> dict[str, Any]:
        client = {"name": "hindsight-bench-raw", "version": "1"}
        params = {"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": client}
        answer = await self.http.post(self.url, content=request("initialize", params))
        if answer.status_code != 200:
            raise RawCallFailed(f"initialize: {answer.status_code}: {answer.text[:300]}")
        result: dict[str, Any] = answer.json()["result"]
        session = answer.headers.get("mcp-session-id")
        if session:
            self.http.headers["mcp-session-id"] = session
        self.http.headers["mcp-protocol-version"] = str(result.get("protocolVersion", PROTOCOL_VERSION))
        await self.http.post(self.url, content=request("notifications/initialized", {}, None))
        return result

    async def post(self, body: bytes) -> httpx2.Response:
        return checked(await self.http.post(self.url, content=body))

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        structured: dict[str, Any] = (await self.post(tool_call(tool, arguments))).json()["result"]["structuredContent"]
        return structured


# -- measured windows ------------------------------------------------------------------------------------------
@dataclass
class Window:
    """One measured phase: calls, wall time, the server's CPU (all threads, `/proc`), its context switches and
    histogram counts added, this client's CPU, and the round trips."""

    calls: int = 0
    seconds: float = 0.0
    server_cpu_s: float = 0.0
    client_cpu_s: float = 0.0
    switches: int = 0
    round_trip: Samples = field(default_factory=Samples)
    histograms: dict[str, server_histogram.Buckets] = field(default_factory=dict)
    threads: dict[str, float] = field(default_factory=dict)  # thread group -> CPU s in the window (sums to server)
    pid: int = 0  # the server measured
    base_url: str = ""

    @property
    def server_ms(self) -> float:
        return self.server_cpu_s / self.calls * 1000 if self.calls else float("nan")

    @property
    def client_ms(self) -> float:
        return self.client_cpu_s / self.calls * 1000 if self.calls else float("nan")

    @property
    def per_second(self) -> float:
        return self.calls / self.seconds if self.seconds else float("nan")

    @property
    def server_cores(self) -> float:
        return self.server_cpu_s / self.seconds if self.seconds else float("nan")

    @property
    def switches_per_call(self) -> float:
        return self.switches / self.calls if self.calls else float("nan")


@asynccontextmanager
async def measured(pid: int, base_url: str, window: Window) -> AsyncIterator[Window]:
    """Fill `window` with what the server and this process spent while the block ran (the `/metrics` reads lie
    outside the CPU readings)."""
    async with httpx2.AsyncClient(timeout=30.0) as http:
        before = await server_histogram.snapshot(http, base_url)
        threads, switches = task_cpu(pid), context_switches(pid)
        cpu, own, started = cpu_seconds(pid), time.process_time(), time.perf_counter()
        yield window
        window.seconds = time.perf_counter() - started
        window.server_cpu_s, window.client_cpu_s = cpu_seconds(pid) - cpu, time.process_time() - own
        window.switches = context_switches(pid) - switches
        groups = group_deltas(threads, task_cpu(pid))
        seen = sum(groups.values())  # threads that ended inside the window: their share spread over the groups
        scale = window.server_cpu_s / seen if seen > 0 else 0.0
        window.threads = {name: seconds * scale for name, seconds in groups.items()}
        window.histograms = server_histogram.delta(await server_histogram.snapshot(http, base_url), before)
    window.calls = window.calls or len(window.round_trip)


async def timed(call: Callable[[int], Awaitable[object]], window: Window, count: int, warmup: int) -> None:
    """`warmup` unrecorded calls, then `count` calls measured in `window` (`measured` around them)."""
    for i in range(warmup):
        await call(i)
    async with measured(window.pid, window.base_url, window):
        for i in range(warmup, warmup + count):
            started = time.perf_counter()
            await call(i)
            window.round_trip.add(time.perf_counter() - started)


# -- the driver (a child process) ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Plan:
    """What the child does against one server and token, each part skipped when its count is 0."""

    url: str
    pid: int
    token: str
    queries: tuple[str, ...]
    count: int = 0  # sequential recalls measured, after `warmup`
    warmup: int = 0
    floors: int = 0  # `whoami` calls and `GET /livez` requests measured
    clients: int = 0  # concurrent raw clients, each its own connection, for `seconds`
    seconds: float = 0.0
    profile_seconds: float = 0.0  # one client recalling in a loop under the recorder
    recorder: str = ""  # "perf" or "py-spy"
    profile_out: str = ""


@dataclass
class Drive:
    windows: dict[str, Window] = field(default_factory=dict)  # recall, whoami, livez, concurrent, profile
    note: str = ""  # what the recorder said when it failed


async def drive(plan: Plan) -> Drive:
    base = plan.url.removesuffix("/mcp")
    bodies = [tool_call("recall_memory", {"query": query}) for query in plan.queries]
    out = Drive()
    async with RawSession(plan.url, plan.token) as session:
        await session.initialize()
        if not (await session.call("recall_memory", {"query": plan.queries[0]}))["memories"]:
            raise RawCallFailed("a recall found nothing: the corpus is not visible to the token")
        if plan.count:
            out.windows["recall"] = window = Window(pid=plan.pid, base_url=base)
            await timed(lambda i: session.post(bodies[i % len(bodies)]), window, plan.count, plan.warmup)
        if plan.floors:
            whoami = tool_call("whoami", {})
            out.windows["whoami"] = window = Window(pid=plan.pid, base_url=base)
            await timed(lambda _i: session.post(whoami), window, plan.floors, plan.warmup)
            out.windows["livez"] = window = Window(pid=plan.pid, base_url=base)
            async with httpx2.AsyncClient(base_url=base) as http:
                await timed(lambda _i: _livez(http), window, plan.floors, plan.warmup)
        if plan.profile_seconds:
            recorder = engine_causes.start(plan.recorder, plan.pid, Path(plan.profile_out))
            await anyio.sleep(0.8)  # attached before the measured loop starts
            async with measured(plan.pid, base, Window()) as window:
                deadline, i = time.perf_counter() + plan.profile_seconds, 0
                while time.perf_counter() < deadline:
                    await session.post(bodies[i % len(bodies)])
                    i += 1
                window.calls = i
            out.note = engine_causes.stop(recorder)
            out.windows["profile"] = window
    if plan.clients:
        out.windows["concurrent"] = await concurrent(plan, bodies, base)
    return out


async def _livez(http: httpx2.AsyncClient) -> None:
    answer = await http.get("/livez")
    if answer.status_code != 200:
        raise RawCallFailed(f"/livez answered {answer.status_code}")


async def concurrent(plan: Plan, bodies: list[bytes], base: str) -> Window:
    """`plan.clients` sessions calling back to back for `plan.seconds`, after two warm-up calls each."""
    sessions = [RawSession(plan.url, plan.token) for _ in range(plan.clients)]
    for session in sessions:
        await session.__aenter__()
    try:
        async with anyio.create_task_group() as group:
            for index, session in enumerate(sessions):
                group.start_soon(_warm, session, bodies[index % len(bodies)])
        async with measured(plan.pid, base, Window()) as window:
            deadline = time.perf_counter() + plan.seconds

            async def worker(index: int, session: RawSession) -> None:
                i = index
                while time.perf_counter() < deadline:
                    started = time.perf_counter()
                    await session.post(bodies[i % len(bodies)])
                    window.round_trip.add(time.perf_counter() - started)
                    i += plan.clients

            async with anyio.create_task_group() as group:
                for index, session in enumerate(sessions):
                    group.start_soon(worker, index, session)
    finally:
        for session in sessions:
            await session.__aexit__(None, None, None)
    return window


async def _warm(session: RawSession, body: bytes) -> None:
    await session.initialize()
    for _ in range(2):
        await session.post(body)


def _child(plan: Plan, results: Any) -> None:
    try:
        results.put(anyio.run(drive, plan))
    except BaseException:  # the parent waits on the queue: it gets the failure instead
        results.put(traceback.format_exc())


def run_in_child(plan: Plan, timeout: float = 900.0) -> Drive:
    """`drive(plan)` in a spawned child process (blocking: call it from a worker thread). A child that dies
    without an answer (it failed before `drive` began) is reported at once, not after `timeout`."""
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    child = context.Process(target=_child, args=(plan, results), daemon=True)
    child.start()
    deadline = time.monotonic() + timeout
    outcome: object = None
    try:
        while outcome is None:
            try:
                outcome = results.get(timeout=1.0)
            except queue.Empty:
                if not child.is_alive():
                    raise RawCallFailed(f"the raw client exited with {child.exitcode} and no answer") from None
                if time.monotonic() > deadline:
                    raise RawCallFailed(f"the raw client gave no answer in {timeout:g} s") from None
    finally:
        child.join(timeout=30)
        if child.is_alive():
            child.kill()
    if isinstance(outcome, str):
        raise RawCallFailed(f"the raw client failed:\n{outcome}")
    assert isinstance(outcome, Drive)
    return outcome

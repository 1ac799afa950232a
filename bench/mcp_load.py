"""Real MCP clients (the SDK's `Client` over streamable HTTP on TCP) driving a `hindsight serve` subprocess."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from bench.stats import Samples


class BenchCallFailed(RuntimeError):
    pass


@asynccontextmanager
async def mcp_client(url: str, token: str) -> AsyncIterator[Client]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60.0)
    async with http, Client(streamable_http_client(url, http_client=http)) as client:
        yield client


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    if result.is_error or result.structured_content is None:
        raise BenchCallFailed(f"{tool} failed: {result.structured_content or result.content}")
    content: dict[str, Any] = result.structured_content
    return content


async def recall_latency(client: Client, queries: Sequence[str], warmup: int) -> Samples:
    """Sequential `recall_memory` calls from one client; the first `warmup` calls are not recorded."""
    samples = Samples()
    for i in range(warmup + len(queries)):
        query = queries[i % len(queries)]
        started = time.perf_counter()
        body = await call(client, "recall_memory", {"query": query})
        elapsed = time.perf_counter() - started
        if not body["memories"]:
            raise BenchCallFailed(f"recall of {query!r} found nothing: the corpus is not visible to the token")
        if i >= warmup:
            samples.add(elapsed)
    return samples


async def call_latency(client: Client, tool: str, arguments: dict[str, Any], count: int, warmup: int) -> Samples:
    """The same call `count` times after `warmup` unrecorded ones (e.g. `whoami`: the MCP floor)."""
    samples = Samples()
    for i in range(warmup + count):
        started = time.perf_counter()
        await call(client, tool, arguments)
        if i >= warmup:
            samples.add(time.perf_counter() - started)
    return samples


async def http_floor(base_url: str, count: int, warmup: int) -> Samples:
    """`GET /livez` on one keep-alive connection: TCP + uvicorn + the HTTP client, no auth, no MCP."""
    samples = Samples()
    async with httpx2.AsyncClient(base_url=base_url) as http:
        for i in range(warmup + count):
            started = time.perf_counter()
            response = await http.get("/livez")
            elapsed = time.perf_counter() - started
            if response.status_code != 200:
                raise BenchCallFailed(f"/livez answered {response.status_code}")
            if i >= warmup:
                samples.add(elapsed)
    return samples


async def write_latency(client: Client, contents: Sequence[str], namespace: str) -> Samples:
    """Sequential `write_memory` calls; `samples.outcomes` counts their statuses (the write pipeline may update a
    near-duplicate in place instead of creating a memory)."""
    samples = Samples()
    for content in contents:
        started = time.perf_counter()
        body = await call(client, "write_memory", {"content": content, "namespace": namespace})
        samples.add(time.perf_counter() - started)
        samples.outcomes[str(body["status"])] += 1
    return samples


@dataclass
class LoadResult:
    clients: int
    requests: int
    seconds: float
    samples: Samples
    server_cpu: float  # CPU seconds the server used during the measured window
    client_cpu: float  # CPU seconds this (load-generating) process used

    @property
    def throughput(self) -> float:
        return self.requests / self.seconds


async def concurrent_load(
    url: str,
    token: str,
    clients: int,
    queries: Sequence[str],
    seconds: float,
    server_cpu: Any,
    tool: str = "recall_memory",
    arguments: Any = None,
) -> LoadResult:
    """`clients` sessions, each calling `tool` back to back for `seconds` after a short warm-up.

    `arguments(i, query)` builds each call's arguments (default: a recall of the query)."""
    build = arguments or (lambda i, q: {"query": q})
    samples = Samples()
    counter = 0
    async with AsyncExitStack() as stack:
        sessions = [await stack.enter_async_context(mcp_client(url, token)) for _ in range(clients)]
        async with anyio.create_task_group() as tg:  # warm-up: two calls per session
            for c, session in enumerate(sessions):
                tg.start_soon(_calls, session, tool, [build(-1 - c, queries[c % len(queries)])] * 2)
        cpu_before, own_before = server_cpu(), time.process_time()
        started = time.perf_counter()
        deadline = started + seconds

        async def worker(index: int, session: Client) -> None:
            nonlocal counter
            i = index
            while time.perf_counter() < deadline:
                args = build(counter, queries[i % len(queries)])
                counter += 1
                t0 = time.perf_counter()
                await call(session, tool, args)
                samples.add(time.perf_counter() - t0)
                i += clients

        async with anyio.create_task_group() as tg:
            for index, session in enumerate(sessions):
                tg.start_soon(worker, index, session)
        elapsed = time.perf_counter() - started
        cpu = server_cpu() - cpu_before
        own = time.process_time() - own_before
    return LoadResult(clients, len(samples), elapsed, samples, cpu, own)


async def _calls(session: Client, tool: str, calls: list[dict[str, Any]]) -> None:
    for arguments in calls:
        await call(session, tool, arguments)

"""Fixtures shared by the suite: settings on a temp data dir, a controllable clock, token minting, the real
ASGI app with its lifespan running, real MCP clients (over the ASGI transport or a real port), and real servers
standing in for Redis and the LLM."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractContextManager, asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, TextContent
from starlette.applications import Starlette

from gateway.web.app import create_app
from memory.clock import ManualClock
from ops.config import Settings, TenantLimits
from tenancy import mint_token
from tests.chat_server import ChatServer
from tests.redis_server import RedisClusterServer, RedisServer, RedisTarget, frozen

SECRET = "test-secret-0123456789-abcdefghijklmnopqrstuvwxyz"
BASE_URL = "http://127.0.0.1:8080"
# the headers and first request of a plain JSON-RPC client of /mcp (the tests that post raw bodies)
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


# tool-call rates no test trips over (tests of other limits set these, tests of call rates `calls_per_minute`)
GENEROUS_CALLS = {
    "subject_read_per_minute": 1e6,
    "subject_write_per_minute": 1e6,
    "tenant_read_per_minute": 1e6,
    "tenant_write_per_minute": 1e6,
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def calls_per_minute(read: float, write: float, **others: Any) -> TenantLimits:
    """Limits of `read` and `write` tool calls a minute per subject, ten times as many for the whole tenant, and
    `others` as given."""
    per_tenant = {"tenant_read_per_minute": 10 * read, "tenant_write_per_minute": 10 * write}
    return TenantLimits(subject_read_per_minute=read, subject_write_per_minute=write, **per_tenant, **others)


def make_settings(data_dir: Path, **overrides: Any) -> Settings:
    generous = TenantLimits(
        **GENEROUS_CALLS,
        subject_cpu_ms_per_second=1e9,
        tenant_cpu_ms_per_second=1e9,
        subject_concurrency=1000,
        tenant_concurrency=1000,
    )  # tests of other behaviour must not trip over rate limits, CPU budgets or turns; their own tests pass theirs
    values: dict[str, Any] = {
        "data_dir": data_dir,
        "jwt_secret": SECRET,
        "maintenance_interval_seconds": 3600,
        "rate_limit_default": generous,
        "refusal_limit_burst": 100_000,  # tests of 401s and 413s refuse more than a client's burst
    }
    values.update(overrides)
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path / "data")


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(datetime.now(UTC))


Mint = Callable[..., str]


@pytest.fixture
def mint() -> Mint:
    def _mint(
        tenant: str = "acme",
        sub: str = "agent-1",
        read: list[str] | None = None,
        write: list[str] | None = None,
        **kwargs: Any,
    ) -> str:
        return mint_token(
            SECRET,
            tenant=tenant,
            subject=sub,
            read=read if read is not None else ["user:1"],
            write=write if write is not None else ["user:1"],
            **kwargs,
        )

    return _mint


@asynccontextmanager
async def running(app: Starlette) -> AsyncIterator[Starlette]:
    async with app.router.lifespan_context(app):
        yield app


@pytest.fixture
async def app(settings: Settings, clock: ManualClock) -> AsyncIterator[Starlette]:
    async with running(create_app(settings, clock=clock)) as started:
        yield started


@pytest.fixture
async def http(app: Starlette) -> AsyncIterator[httpx2.AsyncClient]:
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=BASE_URL) as client:
        yield client


@asynccontextmanager
async def mcp_session(app: Starlette, token: str) -> AsyncIterator[Client]:
    http_client = httpx2.AsyncClient(
        transport=httpx2.ASGITransport(app=app), base_url=BASE_URL, headers={"Authorization": f"Bearer {token}"}
    )
    async with http_client, Client(streamable_http_client(f"{BASE_URL}/mcp", http_client=http_client)) as client:
        yield client


def data(result: CallToolResult) -> dict[str, Any]:
    """The structured result of a successful call (fails the test on a tool error). Its text is the same JSON,
    except where a tool writes lines for the model instead (a recall: `text_of`)."""
    assert not result.is_error, result.content
    assert result.structured_content is not None
    text = text_of(result)
    if text.startswith("{"):
        assert json.loads(text) == result.structured_content
    return result.structured_content


def text_of(result: CallToolResult) -> str:
    """The text content of a result: what an MCP host hands its model."""
    [content] = result.content
    assert isinstance(content, TextContent), content
    return content.text


def tool_error(result: CallToolResult) -> dict[str, Any]:
    """The gateway's error object of a tool error, `{"code", "message", "retryable"}`, parsed from its text: a
    tool error carries no structured content (clients validate that against the tool's output schema)."""
    assert result.is_error, result.structured_content
    assert result.structured_content is None, result.structured_content
    error: dict[str, Any] = json.loads(result.content[0].text)["error"]  # type: ignore[union-attr]
    return error


def error_code(result: CallToolResult) -> str:
    return str(tool_error(result)["code"])


@pytest.fixture
def chat_server() -> Iterator[ChatServer]:
    """A real OpenAI-compatible chat server on a free port, standing in for the LLM; tests set its `reply`."""
    with ChatServer() as server:
        yield server


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """One real redis-server for the session; tests flush what they use (see `redis_url`)."""
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    """The URL of the session's redis-server, emptied before the test."""
    import redis

    client = redis.Redis.from_url(redis_server.url)
    client.flushall()
    client.close()
    return redis_server.url


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisServer]:
    """A redis-server of this test alone, which the test may stop and restart (fault tests)."""
    server = RedisServer(tmp_path / "redis")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisClusterServer]:
    """One real Redis Cluster (3 primaries, 1 replica each) for the session: it takes seconds to form. Tests
    flush what they use (see `redis_cluster_url`); a failover test leaves it healthy with other roles."""
    cluster = RedisClusterServer(tmp_path_factory.mktemp("redis-cluster"))
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def freezable_redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisClusterServer]:
    """A Redis Cluster that tests freeze whole (SIGSTOP, `tests.redis_server.frozen`): its nodes wait 60 s before
    they flag a silent peer, so a freeze of a few seconds leaves the cluster as it was. Tests use keys of their
    own."""
    cluster = RedisClusterServer(tmp_path_factory.mktemp("freezable-cluster"), node_timeout_ms=60_000)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


Freeze = Callable[[], AbstractContextManager[None]]  # stops every process of a Redis inside its block


@pytest.fixture(params=["redis", "redis_cluster"])
async def hung_redis(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[tuple[str, bool, Freeze]]:
    """(url, cluster, a function freezing every Redis process) for a server of this test and the freezable
    cluster of the session."""
    if request.param == "redis":
        server = RedisServer(tmp_path / "redis")
        server.start()
        try:
            assert server.process is not None
            process = server.process
            yield server.url, False, lambda: frozen(process)
        finally:
            server.stop()
    else:
        cluster: RedisClusterServer = request.getfixturevalue("freezable_redis_cluster")
        yield cluster.url, True, lambda: frozen(*cluster.processes.values())


@pytest.fixture
def redis_cluster_url(redis_cluster: RedisClusterServer) -> str:
    """A URL naming one node of the session's cluster, every primary emptied before the test."""
    from redis.cluster import RedisCluster

    client = RedisCluster.from_url(redis_cluster.url)
    client.flushall(target_nodes=RedisCluster.PRIMARIES)
    client.close()
    return redis_cluster.url


@pytest.fixture(params=["redis", "redis_cluster"])
def redis_target(request: pytest.FixtureRequest) -> RedisTarget:
    """Each kind of Redis in turn, emptied: the session's single server, then the session's cluster."""
    if request.param == "redis":
        return RedisTarget(request.getfixturevalue("redis_url"), cluster=False)
    return RedisTarget(request.getfixturevalue("redis_cluster_url"), cluster=True)

"""No background task can end the runtime (issue #12, deliverable 2): a poison memory stored straight in the
embedded engine, a failing access-count flush, and whole maintenance loops leave every other tenant served and
`/livez` green; and when something does end the runtime, `/livez` answers 503 so a supervisor restarts it."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import anyio
import httpx2
import pytest
from starlette.applications import Starlette

from gateway.services.background import Supervisor
from gateway.services.maintenance import admin_scope, maintain_all, maintenance_loop
from gateway.web.app import create_app
from memory.clock import ManualClock
from memory.models import Memory
from ops.config import Settings
from tests.conftest import BASE_URL, Mint, data, mcp_session
from tests.memory.conftest import make_memory

pytestmark = pytest.mark.anyio

POISON_TIME = datetime.min.replace(tzinfo=timezone(timedelta(hours=14)))  # before year 1 once in UTC
STANDUPS = [f"The standup meeting moved to nine on {day}" for day in ("Monday", "Tuesday", "Wednesday")]


async def store_directly(app: Starlette, tenant: str, content: str, **overrides: Any) -> Memory:
    """A memory written straight through the store (no validation, as an older version or a bug could have)."""
    runtime = app.state.runtime
    defaults = {"at": datetime.now(UTC), "embedding_model": runtime.embedder.model_id}
    memory = make_memory(content, tenant=tenant, **(defaults | overrides))
    [vector] = await runtime.embedder.embed_documents([content])
    await runtime.store.upsert(admin_scope(tenant), [(memory, vector)])
    return memory


async def store_poison_time(app: Starlette, tenant: str) -> None:
    """Times the decoder cannot read back (before year 1 in UTC)."""
    await store_directly(
        app, tenant, "a poison memory", created_at=POISON_TIME, updated_at=POISON_TIME, expires_at=POISON_TIME
    )


async def store_poison_cluster(app: Starlette, tenant: str) -> None:
    """Three related episodes, one with tags nested in a list (decodable, but consolidating them raises)."""
    for i, content in enumerate(STANDUPS):
        await store_directly(app, tenant, content, tags=[["old", "format"]] if i == 0 else ["meetings"])


async def assert_serving(app: Starlette, mint: Mint) -> None:
    """Another tenant's whoami and write still work over MCP, and /livez is green."""
    async with mcp_session(app, mint(tenant="globex", sub="agent-9")) as client:
        assert data(await client.call_tool("whoami", {}))["tenant"] == "globex"
        assert data(await client.call_tool("write_memory", {"content": "Globex ships on Fridays"}))["status"]
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=BASE_URL) as http:
        live = await http.get("/livez")
    assert live.status_code == 200, live.text


def background_errors(app: Starlette, task: str) -> float:
    value = app.state.telemetry.metrics.registry.get_sample_value("hindsight_background_errors_total", {"task": task})
    return float(value or 0.0)


async def test_a_poison_memory_neither_stops_other_tenants_maintenance_nor_ends_the_runtime(
    app: Starlette, mint: Mint, clock: ManualClock
) -> None:
    async with mcp_session(app, mint()) as client:  # tenant acme: a memory that expires in a minute
        data(await client.call_tool("write_memory", {"content": "The demo room is booked", "ttl_seconds": 60}))
    await store_poison_time(app, "evil")
    await store_poison_cluster(app, "aaa-first")  # sorted before acme: its failure must not skip acme's pass
    clock.advance(120)

    reports = await maintain_all(app.state.runtime, supervisor=app.state.supervisor)

    assert reports["acme"]["expired"] == 1
    assert reports["acme"]["failed"] == []
    assert reports["aaa-first"]["failed"] == ["user:1: consolidation"]
    assert background_errors(app, "memory_maintenance") >= 1
    await assert_serving(app, mint)


async def test_the_maintenance_loop_keeps_running_rounds_over_a_poison_memory(app: Starlette, mint: Mint) -> None:
    await store_poison_cluster(app, "evil")
    await store_poison_time(app, "evil")
    rounds: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    three_rounds = anyio.Event()

    def count_round(task: str) -> None:
        rounds[task] += 1
        if rounds["memory_maintenance"] >= 3:
            three_rounds.set()

    def count_error(task: str) -> None:
        errors[task] += 1

    supervisor = Supervisor(count_error=count_error, count_round=count_round)
    with anyio.fail_after(20):
        async with anyio.create_task_group() as loop:
            loop.start_soon(maintenance_loop, app.state.runtime, 0.0, supervisor)
            await three_rounds.wait()
            loop.cancel_scope.cancel()

    assert rounds["memory_maintenance"] >= 3
    assert errors["memory_maintenance"] >= 3  # every round tried again, failed again, and went on
    await assert_serving(app, mint)


async def test_a_failing_access_count_flush_is_counted_and_the_runtime_keeps_serving(
    app: Starlette, mint: Mint
) -> None:
    runtime = app.state.runtime
    await runtime.memories.access.record(admin_scope("acme"), ["not-a-uuid"])  # the engine refuses this id
    await runtime.memories.drain()  # the flush the runtime's task group would run, now

    assert background_errors(app, "access_flush") == 1
    await assert_serving(app, mint)


@asynccontextmanager
async def lifespan_task(app: Starlette) -> AsyncIterator[anyio.abc.ObjectReceiveStream[dict[str, Any]]]:
    """The app's lifespan driven as uvicorn drives it: the ASGI lifespan protocol in a task of its own (so what
    ends the runtime does not end the server, nor this test). Yields the app's further lifespan messages."""
    to_app, app_inbox = anyio.create_memory_object_stream[dict[str, Any]](4)
    app_outbox, from_app = anyio.create_memory_object_stream[dict[str, Any]](4)

    async def lifespan() -> None:
        scope = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}
        await app(scope, app_inbox.receive, app_outbox.send)

    async with anyio.create_task_group() as server, to_app, app_inbox, app_outbox, from_app:
        server.start_soon(lifespan)
        with anyio.fail_after(30):
            await to_app.send({"type": "lifespan.startup"})
            assert (await from_app.receive())["type"] == "lifespan.startup.complete"
        yield from_app
        await to_app.send({"type": "lifespan.shutdown"})


async def test_livez_answers_503_once_the_runtimes_task_group_has_ended(settings: Settings, clock: ManualClock) -> None:
    app = create_app(settings, clock=clock)
    async with (
        lifespan_task(app) as messages,
        httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=BASE_URL) as http,
    ):
        assert (await http.get("/livez")).status_code == 200
        app.state.supervisor.scopes["runtime"].cancel()  # what an escaping background failure does to it
        with anyio.fail_after(10):
            ended = await messages.receive()  # the lifespan gave up; the server alone would keep running
            live = await http.get("/livez")

    assert ended["type"].startswith("lifespan.shutdown")
    assert live.status_code == 503
    assert "runtime ended" in live.json()["problems"]


async def test_livez_answers_503_before_the_runtime_is_open(settings: Settings) -> None:
    app = create_app(settings, clock=ManualClock(datetime.now(UTC)))
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=BASE_URL) as http:
        live = await http.get("/livez")
    assert live.status_code == 503
    assert live.json()["status"] == "not serving"

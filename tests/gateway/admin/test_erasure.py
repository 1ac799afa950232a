"""`purge_namespace` erases a namespace from every store, in process, on Redis and on Redis Cluster: one person's
data written through every tool and path (memories, a batch, linked copies in a shared namespace and what was
consolidated from them, working memory, task-session events, the recall log, idempotent answers) is searched for
afterwards in every store, through the tools, the stores' own reads and, on Redis, every key's raw value."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster
from starlette.applications import Starlette

from gateway.web.app import create_app
from memory.clock import ManualClock
from ops.config import Settings
from tenancy.limits import IdempotencyKey
from tests.conftest import Mint, data, error_code, make_settings, mcp_session, running
from tests.redis_server import RedisTarget

pytestmark = pytest.mark.anyio

WORD = "quokkaflux"  # in every text the person wrote, and nowhere else
PRIVATE, SHARED = "user:1", "shared:t"
VECTORS = "vectors"  # the embedded vector engine's folder in the data directory
COFFEE = (
    f"Wren drinks a {WORD} espresso every morning",
    f"Wren likes the {WORD} espresso with no sugar in the morning",
    f"Every morning Wren orders a {WORD} espresso",
)


@pytest.fixture(params=["in_process", "redis", "redis_cluster"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Settings, RedisTarget | None]:
    logged = {"recall_log_tenants": ["acme"]}
    if request.param == "in_process":
        return make_settings(tmp_path / "data", **logged), None
    cluster = request.param == "redis_cluster"
    target = RedisTarget(request.getfixturevalue("redis_cluster_url" if cluster else "redis_url"), cluster=cluster)
    return make_settings(tmp_path / "data", redis_url=target.url, redis_cluster=target.cluster, **logged), target


@pytest.fixture
async def app(backend: tuple[Settings, RedisTarget | None], clock: ManualClock) -> AsyncIterator[Starlette]:
    async with running(create_app(backend[0], clock=clock)) as started:
        yield started


async def raw_values(target: RedisTarget) -> list[str]:
    """Every value of every key on the Redis (all its nodes), as text."""
    client: Any = RedisCluster.from_url(target.url) if target.cluster else aioredis.Redis.from_url(target.url)
    values: list[str] = []
    try:
        keys = [k async for k in client.scan_iter(count=500)]
        for key in keys:
            kind = (await client.type(key)).decode()
            if kind == "string":
                values.append(str(await client.get(key)))
            elif kind == "hash":
                values.append(str(await client.hgetall(key)))
            elif kind == "list":
                values.append(str(await client.lrange(key, 0, -1)))
            elif kind == "zset":
                values.append(str(await client.zrange(key, 0, -1)))
            elif kind == "set":
                values.append(str(await client.smembers(key)))
            elif kind == "stream":
                values.append(str(await client.xrange(key)))
            values.append(key.decode())
    finally:
        await client.aclose()
    return values


def files_holding(folder: Path, needle: bytes) -> list[Path]:
    return [f for f in folder.rglob("*") if f.is_file() and needle in f.read_bytes()]


async def write_everywhere(app: Starlette, mint: Mint) -> None:
    """The person's data through every tool: memories (one with a request id), a batch, copies into a shared
    namespace (consolidated there), a working-memory session, a task session's events, logged recalls."""
    both = [PRIVATE, SHARED]
    async with mcp_session(app, mint(sub="wren", read=both, write=both)) as client:
        data(await client.call_tool("write_memory", {"content": f"Wren keeps the {WORD} ledger", "request_id": "w-1"}))
        items = [{"content": text, "share_to": [SHARED], "request_id": f"b-{i}"} for i, text in enumerate(COFFEE)]
        data(await client.call_tool("write_memories", {"items": items, "namespace": PRIVATE}))
        turn = {"session_id": "s1", "role": "user", "content": f"My {WORD} locker is 12", "namespace": PRIVATE}
        data(await client.call_tool("record_turn", turn))
        data(await client.call_tool("start_session", {"session_id": "t1", "goal": f"move the {WORD} ledger"}))
        event = {"session_id": "t1", "type": "user_message", "content": f"The {WORD} ledger goes to Oslo"}
        data(await client.call_tool("record_event", event | {"request_id": "e-1"}))
        data(await client.call_tool("recall_memory", {"query": f"{WORD} ledger", "namespaces": [PRIVATE]}))
    async with mcp_session(app, mint(sub="bob", read=[SHARED], write=[SHARED])) as client:
        data(await client.call_tool("write_memory", {"content": "Team lunch is on Thursday at noon"}))
        data(await client.call_tool("recall_memory", {"query": "morning espresso"}))
    async with mcp_session(app, mint(sub="ops", read=[], write=[], admin=True)) as client:
        consolidated = data(await client.call_tool("consolidate", {"namespace": SHARED}))
    assert consolidated["written"], "the copies in the shared namespace were consolidated"


async def test_a_purge_leaves_none_of_the_namespace_s_words_in_any_store_and_answers_a_receipt(
    app: Starlette,
    mint: Mint,
    backend: tuple[Settings, RedisTarget | None],
    caplog: pytest.LogCaptureFixture,
) -> None:
    await write_everywhere(app, mint)
    caplog.set_level(logging.INFO, logger="hindsight.audit")
    admin = mint(sub="ops", read=[], write=[], admin=True)
    async with mcp_session(app, admin) as client:
        purged = data(await client.call_tool("purge_namespace", {"namespace": PRIVATE, "confirm": PRIVATE}))
        left = data(await client.call_tool("select_memories", {"criteria": {"written_by": "wren"}}))
        shared = data(await client.call_tool("export_memories", {"namespace": SHARED}))["records"]
        log = data(await client.call_tool("recall_log", {"limit": 100}))
        sessions = data(await client.call_tool("export_events", {"namespace": PRIVATE}))
    async with mcp_session(app, mint(sub="wren", read=[PRIVATE, SHARED], write=[PRIVATE])) as client:
        working = data(await client.call_tool("get_working_memory", {"session_id": "s1", "namespace": PRIVATE}))
    runtime = app.state.runtime
    stored = [
        await runtime.idempotency.done_response(IdempotencyKey("acme", "wren", tool, request_id))
        for tool, request_id in [("write_memory", "w-1"), ("record_event", "e-1")]
    ]

    removed = purged["receipt"]["removed"]
    assert purged["receipt"]["by"] == "ops" and purged["receipt"]["namespace"] == PRIVATE
    assert removed["memories"] == 4 and removed["copies_in_other_namespaces"] == 3
    assert removed["consolidated_from_them"] == 1 and removed["working_memory_sessions"] == 2  # s1 and t1
    assert (removed["events"], removed["event_sessions"], removed["recall_log_entries"]) == (1, 1, 2)
    assert removed["idempotency_answers"] == 5  # w-1, the batch's three items, e-1
    assert left["records"] == []
    assert [r["content"] for r in shared] == ["Team lunch is on Thursday at noon"]
    assert WORD not in json.dumps(log) and "morning espresso" not in json.dumps(log)
    assert sessions["sessions"] == [] and working["turns"] == [] and stored == [None, None]
    [line] = [
        r.getMessage() for r in caplog.records if r.name == "hindsight.audit" and "purge_namespace" in r.getMessage()
    ]
    assert json.loads(line)["receipt"] == purged["receipt"] and WORD not in line
    target = backend[1]
    if target is not None:
        assert not [value for value in await raw_values(target) if WORD in value.lower()]
    on_disk = files_holding(Path(backend[0].backends.data_dir), WORD.encode())
    # the event store's files hold none of it; the embedded vector engine keeps an erased point's bytes in its
    # segment and write-ahead log files until it rewrites them (docs/OPERATIONS.md: what a receipt proves)
    assert [f.name for f in on_disk if VECTORS not in f.parts] == []


async def test_erasing_what_one_subject_wrote_leaves_none_of_its_words_in_any_store(
    app: Starlette, mint: Mint, backend: tuple[Settings, RedisTarget | None], caplog: pytest.LogCaptureFixture
) -> None:
    await write_everywhere(app, mint)
    caplog.set_level(logging.INFO, logger="hindsight.audit")
    wren = {"criteria": {"written_by": "wren"}}
    async with mcp_session(app, mint(sub="ops", read=[], write=[], admin=True)) as client:
        unconfirmed = await client.call_tool("erase_selected_memories", wren | {"confirm": "bob"})
        erased = data(await client.call_tool("erase_selected_memories", wren | {"confirm": "wren"}))
        left = data(await client.call_tool("select_memories", wren))
        shared = data(await client.call_tool("export_memories", {"namespace": SHARED}))["records"]
        log = data(await client.call_tool("recall_log", {"limit": 100}))
        sessions = data(await client.call_tool("export_events", {"namespace": PRIVATE}))
    async with mcp_session(app, mint(sub="wren", read=[PRIVATE, SHARED], write=[PRIVATE])) as client:
        working = data(await client.call_tool("get_working_memory", {"session_id": "s1", "namespace": PRIVATE}))
    stored = await app.state.runtime.idempotency.done_response(IdempotencyKey("acme", "wren", "write_memory", "w-1"))

    assert error_code(unconfirmed) == "invalid_argument"
    receipt = erased["receipt"]
    assert (receipt["by"], receipt["selection"]) == ("ops", "written by wren")
    removed = receipt["removed"]
    assert (removed["memories"], removed["consolidated_from_them"], removed["events"]) == (7, 1, 1)
    assert removed["working_memory_sessions"] == 2 and removed["idempotency_answers"] == 5  # s1 and t1
    assert left["records"] == [] and [r["content"] for r in shared] == ["Team lunch is on Thursday at noon"]
    assert log["entries"] == []  # wren's recalls, and bob's that returned wren's copies
    assert sessions["sessions"] == [] and working["turns"] == [] and stored is None
    lines = [
        r.getMessage() for r in caplog.records if r.name == "hindsight.audit" and "erase_selected" in r.getMessage()
    ]
    assert json.loads(lines[-1])["receipt"] == receipt and WORD not in lines[-1]
    target = backend[1]
    if target is not None:
        assert not [value for value in await raw_values(target) if WORD in value.lower()]
    assert [
        f.name for f in files_holding(Path(backend[0].backends.data_dir), WORD.encode()) if VECTORS not in f.parts
    ] == []

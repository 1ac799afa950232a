"""The gateway's shared state on a real Redis and on a real Redis Cluster (`HINDSIGHT_REDIS_CLUSTER`), over MCP:
a retry of a call whose first attempt died mid-call takes the claim over after one lease and runs (it used to
wait the full 30 s and answer `backend_unavailable`); idempotent turns replay and land in working memory; a forced
write, a forced batch item and an event whose answer was lost are found by their request id (issue #32)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from starlette.applications import Starlette

from gateway.errors import REPLAY_META
from gateway.tools.idempotent import fingerprint
from gateway.web.app import create_app
from memory.clock import ManualClock
from tenancy.idempotency import RedisIdempotency
from tenancy.limits import IdempotencyKey, Started
from tests.conftest import Mint, data, make_settings, mcp_session, running
from tests.redis_server import RedisTarget

pytestmark = pytest.mark.anyio

LEASE = 0.3


@pytest.fixture
async def app(redis_target: RedisTarget, tmp_path: Path, clock: ManualClock) -> AsyncIterator[Starlette]:
    settings = make_settings(
        tmp_path / "data",
        redis_url=redis_target.url,
        redis_cluster=redis_target.cluster,
        idempotency_lease_seconds=LEASE,
        idempotency_wait_seconds=30,
    )
    async with running(create_app(settings, clock=clock)) as started:
        yield started


def turn_arguments(request_id: str) -> dict[str, Any]:
    return {"session_id": "s1", "role": "user", "content": "hello", "request_id": request_id}


async def test_a_retry_of_a_call_that_died_mid_call_runs_once_its_claim_s_lease_ran_out(
    app: Starlette, redis_target: RedisTarget, mint: Mint
) -> None:
    # the first attempt claimed the request on another replica, then that replica was SIGKILLed
    arguments = turn_arguments("req-crashed")
    as_the_tool_sees_them = {**arguments, "occurred_at": None, "namespace": None}
    dead_replica = RedisIdempotency(redis_target.client(), lease_seconds=LEASE)
    key = IdempotencyKey("acme", "agent-1", "record_turn", "req-crashed")
    assert await dead_replica.begin(key, fingerprint(as_the_tool_sees_them)) == Started()

    async with mcp_session(app, mint()) as client:
        with anyio.fail_after(10):  # one lease, far less than the 30 s wait
            retried = await client.call_tool("record_turn", arguments)
        replayed = await client.call_tool("record_turn", arguments)
        session = data(await client.call_tool("get_working_memory", {"session_id": "s1"}))

    assert data(retried)["turns"] == 1
    assert not (retried.meta and retried.meta.get(REPLAY_META))
    assert data(replayed) == data(retried)
    assert replayed.meta is not None and replayed.meta.get(REPLAY_META)
    assert [t["content"] for t in session["turns"]] == ["hello"]
    await dead_replica.close()


async def test_idempotent_turns_replay_and_land_in_working_memory_on_the_configured_redis(
    app: Starlette, redis_target: RedisTarget, mint: Mint
) -> None:
    async with mcp_session(app, mint()) as client:
        answers = [data(await client.call_tool("record_turn", turn_arguments(f"req-{n % 3}"))) for n in range(6)]
        session = data(await client.call_tool("get_working_memory", {"session_id": "s1"}))

    assert [a["turns"] for a in answers] == [1, 2, 3, 1, 2, 3]  # the second three are replays
    assert [t["content"] for t in session["turns"]] == ["hello"] * 3
    client_of_test = redis_target.client()
    assert await client_of_test.exists(IdempotencyKey("acme", "agent-1", "record_turn", "req-0").redis_key) == 1
    await client_of_test.aclose()


async def test_a_task_session_runs_on_redis_events_and_its_sweep_reads_them_from_there(
    app: Starlette, mint: Mint, clock: ManualClock, tmp_path: Path
) -> None:
    from gateway.services.maintenance import sweep_sessions

    async with mcp_session(app, mint()) as client:
        await client.call_tool("start_session", {"session_id": "r1", "goal": "trip"})
        said = data(
            await client.call_tool(
                "record_event", {"session_id": "r1", "type": "user_message", "content": "I moved to Porto in May."}
            )
        )
        clock.advance(app.state.runtime.settings.maintenance.session_idle_seconds + 1)
        report = await sweep_sessions(app.state.runtime)
        listed = data(await client.call_tool("list_memories", {}))
        events = data(await client.call_tool("list_events", {"session_id": "r1"}))

    assert "user:1/r1" in report["ended"]["acme"]  # the Redis is shared by the session: others may be swept too
    assert not (tmp_path / "data" / "events.sqlite3").exists()  # server mode keeps events in Redis
    [fact] = [m for m in listed["memories"] if "Porto" in m["content"]]
    assert fact["metadata"]["source_event_ids"] == [said["event"]["id"]]
    assert [e["id"] for e in events["events"]] == [said["event"]["id"]]


async def test_a_forced_write_a_forced_batch_item_and_an_event_whose_answer_was_lost_are_applied_once_by_the_retry(
    app: Starlette, redis_target: RedisTarget, mint: Mint
) -> None:
    fact = "Invoice 1042 was paid"
    calls: list[tuple[str, dict[str, Any]]] = [
        ("write_memory", {"content": fact, "force": True, "request_id": "fw-1"}),
        ("write_memories", {"items": [{"content": fact, "force": True, "request_id": "fb-1"}]}),
        ("record_event", {"session_id": "s1", "type": "user_message", "content": fact, "request_id": "ev-1"}),
    ]
    lost = [("write_memory", "fw-1"), ("write_memory", "fb-1"), ("record_event", "ev-1")]
    async with mcp_session(app, mint()) as client:
        data(await client.call_tool("write_memory", {"content": fact}))
        first = [data(await client.call_tool(tool, arguments)) for tool, arguments in calls]
        # the answers are lost (a SIGKILL before they were stored, a failover that lost them): the claims run out
        client_of_test = redis_target.client()
        for tool, request_id in lost:
            assert await client_of_test.delete(IdempotencyKey("acme", "agent-1", tool, request_id).redis_key) == 1
        await client_of_test.aclose()
        retried = [await client.call_tool(tool, arguments) for tool, arguments in calls]
        memories = data(await client.call_tool("list_memories", {}))["memories"]
        events = data(await client.call_tool("list_events", {"session_id": "s1"}))["events"]

    assert not any(r.meta and r.meta.get(REPLAY_META) for r in retried)  # run again, not replayed
    write, batch, event = (data(r) for r in retried)
    assert (write["id"], write["status"]) == (first[0]["id"], "created")
    assert [(i["id"], i["status"]) for i in batch["results"]] == [(first[1]["results"][0]["id"], "created")]
    assert event["event"] == first[2]["event"]
    assert sorted(m["source"]["request_id"] or "" for m in memories) == ["", "fb-1", "fw-1"]
    assert [e["request_id"] for e in events] == ["ev-1"]

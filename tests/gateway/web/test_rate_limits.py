"""Rate limits over HTTP: a burst over the bucket gets 429 with `Retry-After`, refills let calls through again,
and one tenant's flood does not limit another tenant. In-process (time on a controlled clock) and on Redis.

Protocol messages (`initialize`, `tools/list`, notifications, ...) take tokens from a bucket of their own, never
from the tool calls' ones; a retry of a write whose answer is stored replays it without a write token. Both on
the in-process limiter, a real Redis and a real Redis Cluster (issue #15, item 2)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from starlette.applications import Starlette

from gateway.errors import REPLAY_META
from gateway.web.app import create_app
from memory.clock import ManualClock
from ops.config import TenantLimits
from tests.conftest import BASE_URL, HEADERS, Mint, calls_per_minute, make_settings, running

pytestmark = pytest.mark.anyio


def tool_call(name: str, arguments: dict[str, object], call_id: int | str = 1) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": call_id, "method": "tools/call", "params": {"name": name, "arguments": arguments}}


async def post(http: httpx2.AsyncClient, token: str, body: dict[str, object], **headers: str) -> httpx2.Response:
    return await http.post("/mcp", json=body, headers={**HEADERS, "authorization": f"Bearer {token}", **headers})


TIGHT = calls_per_minute(read=60, write=60, burst_seconds=5)  # 5 requests of burst per subject, 1 per second refill


async def test_a_burst_over_the_bucket_gets_429_with_retry_after_and_refills(
    tmp_path: Path, clock: ManualClock, mint: Mint
) -> None:
    settings = make_settings(tmp_path / "data", rate_limit_default=TIGHT)
    async with running(create_app(settings, clock=clock)) as app:
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=BASE_URL) as http:
            token = mint()
            codes = [(await post(http, token, tool_call("whoami", {}))).status_code for _ in range(8)]
            refused = await post(http, token, tool_call("whoami", {}))
            other_tenant = await post(http, mint(tenant="globex"), tool_call("whoami", {}))
            write_bucket = await post(http, token, tool_call("write_memory", {"content": "writes have their own"}))
            clock.advance(2)
            after_refill = await post(http, token, tool_call("whoami", {}))
    assert codes == [200] * 5 + [429] * 3
    assert refused.status_code == 429
    assert int(refused.headers["retry-after"]) >= 1
    assert refused.json()["error"]["data"]["code"] == "rate_limited"
    assert other_tenant.status_code == 200
    assert write_bucket.status_code == 200
    assert after_refill.status_code == 200


async def test_redis_limits_are_shared_and_refill(tmp_path: Path, redis_url: str, mint: Mint) -> None:
    fast = calls_per_minute(read=600, write=600, burst_seconds=0.3)  # 3 requests of burst, 10 per second refill
    settings = make_settings(tmp_path / "data", redis_url=redis_url, rate_limit_default=fast)
    async with running(create_app(settings)) as app:
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=BASE_URL) as http:
            token = mint()
            statuses = [(await post(http, token, tool_call("whoami", {}))).status_code for _ in range(6)]
            other = await post(http, mint(tenant="globex"), tool_call("whoami", {}))
            deadline = time.monotonic() + 5
            recovered = 429
            while recovered == 429 and time.monotonic() < deadline:  # real Redis time: bounded polling
                recovered = (await post(http, token, tool_call("whoami", {}))).status_code
    assert statuses.count(429) >= 2
    assert statuses[0] == 200
    assert other.status_code == 200
    assert recovered == 200


async def test_per_tenant_overrides_apply_to_that_tenant_only(tmp_path: Path, clock: ManualClock, mint: Mint) -> None:
    strict = TenantLimits(subject_write_per_minute=6, tenant_write_per_minute=6, burst_seconds=10)  # 1 write
    settings = make_settings(tmp_path / "data", rate_limit_tenants={"tiny": strict})
    async with running(create_app(settings, clock=clock)) as app:
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=BASE_URL) as http:
            tiny = mint(tenant="tiny")
            big = mint(tenant="big")
            tiny_codes = [
                (await post(http, tiny, tool_call("write_memory", {"content": f"t{i}"}))).status_code for i in range(2)
            ]
            big_codes = [
                (await post(http, big, tool_call("write_memory", {"content": f"b{i}"}))).status_code for i in range(2)
            ]
    assert tiny_codes == [200, 429]
    assert big_codes == [200, 200]


# --- protocol messages and replays (issue #15, item 2) ------------------------------------------------------

ONE_PER_MINUTE = TenantLimits(
    subject_read_per_minute=1, subject_write_per_minute=1, burst_seconds=60
)  # one read and one write token per subject, refilled after a minute: never within a test, on Redis too
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


@asynccontextmanager
async def gateway(
    tmp_path: Path, clock: ManualClock, backend: dict[str, Any], limits: TenantLimits
) -> AsyncIterator[httpx2.AsyncClient]:
    settings = make_settings(tmp_path / "data", rate_limit_default=limits, **backend)
    async with running(create_app(settings, clock=clock)) as app, raw_client(app) as http:
        yield http


def raw_client(app: Starlette) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=BASE_URL)


def protocol_messages() -> list[dict[str, object]]:
    """200 protocol messages, as 100 reconnecting clients send them."""
    messages: list[dict[str, object]] = []
    for n in range(100):
        messages.append({**INITIALIZE, "id": f"init-{n}"})
        messages.append({"jsonrpc": "2.0", "id": f"list-{n}", "method": "tools/list"})
    return messages


def answer(response: httpx2.Response) -> tuple[dict[str, Any], bool]:
    """The structured answer of a successful tool call over raw JSON-RPC, and whether it was a replay."""
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    assert not result.get("isError"), result
    return result["structuredContent"], bool((result.get("_meta") or {}).get(REPLAY_META))


def write(content: str, request_id: str | None = None, call_id: int | str = 1) -> dict[str, object]:
    arguments: dict[str, object] = {"content": content}
    if request_id is not None:
        arguments["request_id"] = request_id
    return tool_call("write_memory", arguments, call_id)


async def test_two_hundred_protocol_messages_from_one_subject_leave_its_next_tool_call_unlimited_by_default(
    tmp_path: Path, clock: ManualClock, mint: Mint, limiter_backend: dict[str, Any]
) -> None:
    async with gateway(tmp_path, clock, limiter_backend, TenantLimits()) as http:
        token = mint()
        statuses = [(await post(http, token, message)).status_code for message in protocol_messages()]
        read = await post(http, token, tool_call("whoami", {}))
    assert statuses == [200] * 200
    assert read.status_code == 200


async def test_protocol_messages_never_take_the_tokens_of_tool_calls(
    tmp_path: Path, clock: ManualClock, mint: Mint, limiter_backend: dict[str, Any]
) -> None:
    async with gateway(tmp_path, clock, limiter_backend, ONE_PER_MINUTE) as http:
        token = mint()
        for message in protocol_messages()[:20]:
            assert (await post(http, token, message)).status_code == 200
        notified = await post(http, token, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        pinged = await post(http, token, {"jsonrpc": "2.0", "id": "p", "method": "ping"})
        first_read = await post(http, token, tool_call("whoami", {}))
        second_read = await post(http, token, tool_call("whoami", {}))
        first_write = await post(http, token, write("still my one write"))
    assert notified.status_code == 202
    assert pinged.status_code == 200
    assert first_read.status_code == 200  # the one read token was still there ...
    assert second_read.status_code == 429  # ... and it was the only one
    assert first_write.status_code == 200


async def test_a_retry_of_a_stored_write_gets_its_answer_while_the_write_bucket_is_empty(
    tmp_path: Path, clock: ManualClock, mint: Mint, limiter_backend: dict[str, Any]
) -> None:
    async with gateway(
        tmp_path, clock, limiter_backend, TenantLimits(subject_write_per_minute=1, burst_seconds=60)
    ) as http:
        token = mint()
        first = await post(http, token, write("Invoice 1042 was paid", "req-1"))
        retried = await post(http, token, write("Invoice 1042 was paid", "req-1", call_id=2))
        by_header = await post(http, token, write("paid by header"), **{"idempotency-key": "hdr-1"})
        fresh = await post(http, token, write("a new write", "req-2", call_id="fresh"))
    stored, first_replayed = answer(first)
    assert not first_replayed
    assert answer(retried) == (stored, True)
    assert fresh.status_code == 429  # the bucket is empty: the retry was served without its token
    assert fresh.json()["error"]["data"]["code"] == "rate_limited"
    assert fresh.json()["id"] == "fresh"
    assert by_header.status_code == 429  # a header key with nothing stored is a new write: it needs a token


async def test_a_retry_by_idempotency_key_header_replays_without_a_write_token(
    tmp_path: Path, clock: ManualClock, mint: Mint
) -> None:
    async with gateway(tmp_path, clock, {}, TenantLimits(subject_write_per_minute=1, burst_seconds=60)) as http:
        token = mint()
        first = await post(http, token, write("paid by header"), **{"idempotency-key": "hdr-1"})
        retried = await post(http, token, write("paid by header", call_id=2), **{"idempotency-key": "hdr-1"})
        other_subject = await post(http, mint(sub="agent-2"), write("paid by header"), **{"idempotency-key": "hdr-1"})
        other_subject_again = await post(
            http, mint(sub="agent-2"), write("paid by header", call_id=3), **{"idempotency-key": "hdr-1"}
        )
    stored, _ = answer(first)
    assert answer(retried) == (stored, True)
    assert answer(other_subject)[1] is False  # another subject's key names another call
    assert answer(other_subject_again)[1] is True


async def test_replays_take_read_tokens_so_a_replay_flood_is_still_limited(
    tmp_path: Path, clock: ManualClock, mint: Mint, limiter_backend: dict[str, Any]
) -> None:
    async with gateway(tmp_path, clock, limiter_backend, ONE_PER_MINUTE) as http:
        token = mint()
        first = await post(http, token, write("Invoice 1042 was paid", "req-1"))
        replayed = await post(http, token, write("Invoice 1042 was paid", "req-1"))
        refused = await post(http, token, write("Invoice 1042 was paid", "req-1", call_id="again"))
    assert answer(replayed) == (answer(first)[0], True)
    assert refused.status_code == 429
    assert refused.json()["id"] == "again"
    assert refused.json()["error"]["data"]["message"] == "too many read requests; slow down"


async def test_fifty_racing_retries_of_one_request_id_get_its_one_stored_answer_or_a_readable_rate_limited(
    tmp_path: Path, clock: ManualClock, mint: Mint, limiter_backend: dict[str, Any]
) -> None:
    token = mint()
    responses: list[httpx2.Response] = []

    async def retry(http: httpx2.AsyncClient, n: int) -> None:
        responses.append(await post(http, token, write("Invoice 1042 was paid", "req-42", call_id=n)))

    async with gateway(tmp_path, clock, limiter_backend, TenantLimits()) as http:
        async with anyio.create_task_group() as group:
            for n in range(50):
                group.start_soon(retry, http, n)
        drained = 0  # then a subject's own fresh writes empty its write bucket (a not_found forget writes nothing)
        while (
            await post(http, token, tool_call("forget_memory", {"id": "01890a5d-ac96-774b-bcce-b302099a8057"}))
        ).status_code == 200:
            drained += 1
            assert drained < 50
        after_the_race = await post(http, token, write("Invoice 1042 was paid", "req-42", call_id="late"))
        listed = await post(http, token, tool_call("list_memories", {"limit": 100}))

    answers = [answer(r) for r in responses if r.status_code == 200]
    refused = [r for r in responses if r.status_code != 200]
    stored = answers[0][0]
    assert len(responses) == 50
    assert all(body == stored for body, _ in answers)
    assert [replayed for _, replayed in answers].count(False) == 1  # one ran; every other answer is its replay
    assert stored["status"] == "created"
    for response in refused:
        assert response.status_code == 429
        assert int(response.headers["retry-after"]) >= 1
        error = response.json()["error"]
        assert error["data"]["code"] == "rate_limited"
        assert error["data"]["retry_after_seconds"] == int(response.headers["retry-after"])
    assert answer(after_the_race) == (stored, True)
    assert [m["content"] for m in answer(listed)[0]["memories"]] == ["Invoice 1042 was paid"]

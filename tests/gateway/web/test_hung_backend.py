"""A hung Redis fails fast (issue #32, item 3): the real app over a real `redis-server` (and a real Redis Cluster)
stopped with SIGSTOP, so its sockets accept and nothing answers, with the default timeouts (5 s backend timeout,
rate limits failing open). Calls that need Redis only for rate limits and the recall log answer within about a
second, calls that need it answer the retryable `backend_unavailable` within 6 s, `/readyz` answers within 2 s
naming the failing checks; the breaker's state is on `/metrics`. After SIGCONT everything recovers on its own:
the breaker's probe after its cool-down, without a `/readyz` call to close it."""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client

from gateway.web.app import create_app
from tests.conftest import BASE_URL, Freeze, Mint, data, error_code, make_settings, mcp_session, running, tool_error

pytestmark = pytest.mark.anyio

FAIL_OPEN_SECONDS = 1.0  # one wait of 0.5 s (redis_fail_open_timeout_seconds) per request, and slack
BACKEND_UNAVAILABLE_SECONDS = 6.0  # the 5 s backend timeout, once, plus a fail-open call and slack
READYZ_SECONDS = 2.0
RECOVERY_SECONDS = 30.0  # bound of the wait after SIGCONT (the breaker's cool-down is 5 s)


async def timed(call: Awaitable[Any]) -> tuple[float, Any]:
    started = time.monotonic()
    result = await call
    return time.monotonic() - started, result


def breaker_state(metrics: str) -> float:
    found = re.search(r"^hindsight_redis_breaker_state (\S+)$", metrics, re.MULTILINE)
    assert found is not None
    return float(found.group(1))


async def until_ok(call: Callable[[], Awaitable[Any]]) -> float:
    """Seconds until `call` answers without a tool error (bounded: RECOVERY_SECONDS)."""
    started = time.monotonic()
    with anyio.fail_after(RECOVERY_SECONDS):
        for attempt in range(1_000_000):
            if not (await call()).is_error:
                break
            await anyio.sleep(min(0.02 * 2**attempt, 0.25))  # polling a recovery, bounded above
    return time.monotonic() - started


async def test_with_redis_frozen_calls_fail_fast_readyz_answers_and_all_recovers_after_sigcont(
    hung_redis: tuple[str, bool, Freeze], tmp_path: Path, mint: Mint
) -> None:
    url, cluster, freeze = hung_redis
    tenant = f"hung-{tmp_path.name[-12:]}"  # keys of this test alone on the session's cluster
    settings = make_settings(tmp_path / "data", redis_url=url, redis_cluster=cluster, recall_log_tenants=[tenant])
    assert settings.backends.backend_timeout_seconds == 5 and settings.rate_limits.rate_limit_fail_open
    token = mint(tenant=tenant)
    session = {"session_id": "s1"}
    event = {"session_id": "s1", "type": "user_message", "content": "I like tea", "request_id": "e-1"}
    async with (
        running(create_app(settings)) as app,
        httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=BASE_URL) as http,
        mcp_session(app, token) as client,
    ):
        await client.list_tools()  # the client caches the tools' output schemas before the freeze
        data(await client.call_tool("update_working_memory", {**session, "state": {"a": 1}}))
        with freeze():
            whoami = await timed(client.call_tool("whoami", {}))
            listed = await timed(client.list_tools())
            recall = await timed(client.call_tool("recall_memory", {"query": "tea"}))
            working = await timed(client.call_tool("get_working_memory", session))
            recorded = await timed(client.call_tool("record_event", event))
            ready = await timed(http.get("/readyz"))
            again = await timed(client.call_tool("whoami", {}))  # the breaker is open now
            working_again = await timed(client.call_tool("get_working_memory", session))
            state_frozen = breaker_state((await http.get("/metrics")).text)
        recovered_in = await until_ok(lambda: _call(client, "get_working_memory", session))  # no /readyz call
        state_resumed = breaker_state((await http.get("/metrics")).text)
        ready_after = await http.get("/readyz")
        after = [
            await client.call_tool("whoami", {}),
            await client.call_tool("record_event", event),
            await client.call_tool("recall_memory", {"query": "tea"}),
        ]

    for took, result in (whoami, recall, again):
        assert took < FAIL_OPEN_SECONDS and not result.is_error, (took, result)
    assert listed[0] < FAIL_OPEN_SECONDS and listed[1].tools
    for took, result in (working, recorded, working_again):
        assert took < BACKEND_UNAVAILABLE_SECONDS, took
        assert error_code(result) == "backend_unavailable"
        assert tool_error(result)["retryable"] is True
    assert working_again[0] < 0.5  # failed at once: the breaker is open
    took, response = ready
    assert took < READYZ_SECONDS
    assert response.status_code == 503 and response.headers["retry-after"]
    checks = response.json()["checks"]
    assert checks["vector_store"] == checks["embedder"] == "ok"
    for name in ("working_memory", "idempotency", "rate_limiter"):
        assert checks[name].startswith("error"), checks
    assert state_frozen == 2  # open
    assert recovered_in < RECOVERY_SECONDS
    assert state_resumed == 0
    assert ready_after.status_code == 200
    assert data(after[0])["tenant"] == tenant
    assert data(after[1])["event"]["content"] == "I like tea"
    assert not after[2].is_error


async def _call(client: Client, tool: str, arguments: dict[str, Any]) -> Any:
    return await client.call_tool(tool, arguments)

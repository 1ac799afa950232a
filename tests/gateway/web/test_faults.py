"""Backend faults: with Redis down the gateway stays up, tools answer `backend_unavailable`, `/readyz` is 503;
when Redis returns everything works again without a restart."""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest

from gateway.web.app import create_app
from tests.conftest import BASE_URL, Mint, data, error_code, make_settings, mcp_session, running, tool_error
from tests.redis_server import RedisServer

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("fail_open", [True, False])
async def test_redis_outage_is_survived_and_recovered(
    tmp_path: Path, own_redis: RedisServer, mint: Mint, fail_open: bool
) -> None:
    settings = make_settings(
        tmp_path / "data", redis_url=own_redis.url, rate_limit_fail_open=fail_open, backend_timeout_seconds=1
    )
    token = mint()
    async with running(create_app(settings)) as app:
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=BASE_URL) as http:
            async with mcp_session(app, token) as client:
                data(await client.call_tool("update_working_memory", {"session_id": "s", "state": {"a": 1}}))
            own_redis.stop()
            ready_down = await http.get("/readyz")
            if fail_open:
                async with mcp_session(app, token) as client:
                    state = await client.call_tool("get_working_memory", {"session_id": "s"})
                    write = await client.call_tool("write_memory", {"content": "x", "request_id": "during-outage"})
                    recall = await client.call_tool("recall_memory", {"query": "anything"})
                assert error_code(state) == "backend_unavailable"
                assert error_code(write) == "backend_unavailable"
                assert tool_error(state)["retryable"] is True
                assert not recall.is_error  # the vector store is up: recall keeps working
            else:
                refused = await http.post(
                    "/mcp",
                    json={
                        "jsonrpc": "2.0",
                        "id": 1,
                        "method": "tools/call",
                        "params": {"name": "whoami", "arguments": {}},
                    },
                    headers={"authorization": f"Bearer {token}", "accept": "application/json, text/event-stream"},
                )
                assert refused.status_code == 503
                assert refused.headers["retry-after"]
            own_redis.start()
            ready_up = await http.get("/readyz")
            async with mcp_session(app, token) as client:
                written = data(await client.call_tool("write_memory", {"content": "after", "request_id": "after-1"}))
                again = data(await client.call_tool("write_memory", {"content": "after", "request_id": "after-1"}))
    assert ready_down.status_code == 503
    assert ready_down.headers["retry-after"]
    assert ready_up.status_code == 200
    assert written == again

"""Rate limits over HTTP: a burst over the bucket gets 429 with `Retry-After`, refills let calls through again,
and one tenant's flood does not limit another tenant. In-process (time on a controlled clock) and on Redis."""

from __future__ import annotations

import time
from pathlib import Path

import httpx2
import pytest

from gateway.app import create_app
from memory.clock import ManualClock
from ops.config import TenantLimits
from tests.conftest import BASE_URL, Mint, make_settings, running

pytestmark = pytest.mark.anyio

HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def tool_call(name: str, arguments: dict[str, object], call_id: int = 1) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": call_id, "method": "tools/call", "params": {"name": name, "arguments": arguments}}


async def post(http: httpx2.AsyncClient, token: str, body: dict[str, object]) -> httpx2.Response:
    return await http.post("/mcp", json=body, headers={**HEADERS, "authorization": f"Bearer {token}"})


TIGHT = TenantLimits(
    subject_read_per_minute=60,
    subject_write_per_minute=60,
    tenant_read_per_minute=600,
    tenant_write_per_minute=600,
    burst_seconds=5,
)  # 5 requests of burst per subject, 1 per second refill


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
    fast = TenantLimits(
        subject_read_per_minute=600,
        subject_write_per_minute=600,
        tenant_read_per_minute=6000,
        tenant_write_per_minute=6000,
        burst_seconds=0.3,
    )  # 3 requests of burst, 10 per second refill
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

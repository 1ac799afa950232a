"""Refused traffic is not free (issue #32.2) and a request with an unusable JSON-RPC id is refused, not dropped
(issue #32.6), on the real ASGI app.

Per client address and per bearer token a small bucket counts 400/401/413 answers; once it is empty the next
requests get 429 with `Retry-After` before any token is verified (no "bearer token rejected" log line) or body
read. A token that authenticated keeps working from a limited address; the probes are never limited."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from starlette.applications import Starlette

from gateway.web.app import create_app
from memory.clock import ManualClock
from tests.conftest import BASE_URL, HEADERS, Mint, data, make_settings, mcp_session, running

pytestmark = pytest.mark.anyio

BURST = 3
PER_MINUTE = 60  # one refusal a second
LIMITED = (
    "too many refused requests (invalid tokens, bodies over the limit, malformed requests) from this client or with "
    "this token; slow down"
)


@pytest.fixture
async def limited_app(tmp_path: Path, clock: ManualClock) -> AsyncIterator[Starlette]:
    settings = make_settings(
        tmp_path / "data", refusal_limit_per_minute=PER_MINUTE, refusal_limit_burst=BURST, max_request_bytes=2048
    )
    async with running(create_app(settings, clock=clock)) as app:
        yield app


def client(app: Starlette, address: str, token: str | None = None) -> httpx2.AsyncClient:
    headers = {**HEADERS, "authorization": f"Bearer {token}"} if token else HEADERS
    transport = httpx2.ASGITransport(app=app, client=(address, 40000))
    return httpx2.AsyncClient(transport=transport, base_url=BASE_URL, headers=headers)


def whoami(call_id: object = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": call_id, "method": "tools/call", "params": {"name": "whoami", "arguments": {}}}


def assert_limited(response: httpx2.Response, retry_after: int = 1) -> None:
    assert response.status_code == 429, response.text
    assert response.headers["retry-after"] == str(retry_after)
    assert response.json() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": -32010,
            "message": f"{LIMITED} (rate_limited; retry after {retry_after} s)",
            "data": {"code": "rate_limited", "message": LIMITED, "retryable": True, "retry_after_seconds": retry_after},
        },
    }


def verified_tokens(caplog: pytest.LogCaptureFixture) -> int:
    return sum(1 for r in caplog.records if r.getMessage().startswith("bearer token rejected"))


async def test_bad_tokens_from_one_address_get_429_without_being_verified_once_its_bucket_is_empty(
    limited_app: Starlette, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="tenancy.jwt_verifier")
    async with client(limited_app, "203.0.113.7") as attacker, client(limited_app, "198.51.100.1") as other:
        refused = [
            await attacker.post("/mcp", json=whoami(), headers={"authorization": f"Bearer bad-{i}"})
            for i in range(BURST)
        ]
        assert [r.status_code for r in refused] == [401] * BURST
        assert verified_tokens(caplog) == BURST
        for i in range(5):
            assert_limited(await attacker.post("/mcp", json=whoami(), headers={"authorization": f"Bearer more-{i}"}))
        assert_limited(await attacker.post("/mcp", json=whoami()))  # no token at all: the address's bucket
        assert verified_tokens(caplog) == BURST  # the limited ones were never verified
        assert (await other.post("/mcp", json=whoami())).status_code == 401  # another address: its own bucket
        assert (await attacker.get("/livez")).status_code == 200  # probes are never limited
        metrics = (await other.get("/metrics")).text
    assert 'hindsight_rate_limit_rejections_total{kind="refused"} 6.0' in metrics


async def test_the_bucket_refills_at_its_rate(limited_app: Starlette, clock: ManualClock) -> None:
    async with client(limited_app, "203.0.113.8") as attacker:
        for _ in range(BURST):
            assert (await attacker.post("/mcp", json=whoami())).status_code == 401
        assert_limited(await attacker.post("/mcp", json=whoami()))
        clock.advance(60 / PER_MINUTE)  # one refusal's worth
        assert (await attacker.post("/mcp", json=whoami())).status_code == 401
        assert_limited(await attacker.post("/mcp", json=whoami()))


async def test_a_token_that_authenticated_keeps_working_from_a_limited_address_a_new_one_waits(
    limited_app: Starlette, mint: Mint
) -> None:
    shared = "192.0.2.50"  # a NAT: a good agent and a bad one behind one address
    good, fresh = mint(sub="good"), mint(sub="fresh")
    async with client(limited_app, shared, good) as agent, client(limited_app, shared) as bad:
        assert (await agent.post("/mcp", json=whoami())).status_code == 200
        for i in range(BURST):
            assert (await bad.post("/mcp", json=whoami(), headers={"authorization": f"Bearer x{i}"})).status_code == 401
        assert_limited(await bad.post("/mcp", json=whoami()))
        assert (await agent.post("/mcp", json=whoami())).status_code == 200
        assert_limited(await agent.post("/mcp", json=whoami(), headers={"authorization": f"Bearer {fresh}"}))


async def test_a_valid_token_sending_bodies_over_the_limit_is_limited_from_any_address(
    limited_app: Starlette, mint: Mint
) -> None:
    token = mint()
    oversized = json.dumps(whoami() | {"padding": "x" * 4096})
    async with client(limited_app, "203.0.113.9", token) as first, client(limited_app, "203.0.113.10", token) as second:
        for _ in range(BURST):
            assert (await first.post("/mcp", content=oversized)).status_code == 413
        limited = await second.post("/mcp", content=oversized)  # another address, the same token
        assert_limited(limited)
        assert limited.headers["connection"] == "close"  # its body is never read: the connection goes
        assert (await second.post("/mcp", json=whoami(), headers={"authorization": ""})).status_code == 401


async def test_an_authorization_header_over_the_token_limit_is_refused_unparsed(limited_app: Starlette) -> None:
    async with client(limited_app, "203.0.113.11", "e" * 8000) as http:
        refused = await http.post("/mcp", json=whoami())
    assert refused.status_code == 401
    assert "bearer token is larger than 4096 bytes" in refused.json()["error"]["data"]["message"]


# --- issue #32.6: a request whose id is neither a string nor an integer ---------------------------------------


@pytest.mark.parametrize(
    ("raw_id", "what"),
    [
        ("1.5", "the number 1.5"),
        ("1.0", "the number 1.0"),
        ("NaN", "NaN"),
        ("true", "true"),
        ("null", "null"),
        ('{"a": 1}', "an object"),
        ("[1]", "an array"),
    ],
)
async def test_a_tool_call_with_an_unusable_id_gets_invalid_request_and_never_runs(
    app: Starlette, mint: Mint, raw_id: str, what: str
) -> None:
    token = mint()
    call = '{"jsonrpc": "2.0", "id": %s, "method": "tools/call", "params": {"name": "write_memory", "arguments": %s}}'
    body = call % (raw_id, json.dumps({"content": f"The id was {what}"}))
    async with client(app, "127.0.0.1", token) as http:
        response = await http.post("/mcp", content=body)
    message = f"Invalid Request: a request's id must be a string or an integer, not {what}"
    assert response.status_code == 400
    assert response.json() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": -32600,
            "message": f"{message} (invalid_request)",
            "data": {"code": "invalid_request", "message": message, "retryable": False, "retry_after_seconds": None},
        },
    }
    async with mcp_session(app, token) as session:
        recalled = data(await session.call_tool("recall_memory", {"query": "what was the id"}))
    assert recalled["memories"] == []  # the call never ran


async def test_string_and_integer_ids_and_notifications_are_served_as_before(app: Starlette, mint: Mint) -> None:
    async with client(app, "127.0.0.1", mint()) as http:
        by_string = await http.post("/mcp", json=whoami("call-7"))
        by_integer = await http.post("/mcp", json=whoami(2**53))
        notification = await http.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert (by_string.status_code, by_string.json()["id"]) == (200, "call-7")
    assert (by_integer.status_code, by_integer.json()["id"]) == (200, 2**53)
    assert notification.status_code == 202


async def test_without_rate_limits_an_unusable_id_is_refused_all_the_same(tmp_path: Path, mint: Mint) -> None:
    settings = make_settings(tmp_path / "data", rate_limit_enabled=False)
    async with running(create_app(settings)) as app, client(app, "127.0.0.1", mint()) as http:
        response = await http.post("/mcp", content=b'{"jsonrpc": "2.0", "id": NaN, "method": "ping"}')
    assert response.status_code == 400
    assert response.json()["error"]["data"]["message"] == (
        "Invalid Request: a request's id must be a string or an integer, not NaN"
    )

"""Bearer auth on /mcp: 401 with a `WWW-Authenticate` challenge for bad tokens, 403 without a memory scope,
and a per-tool scope check."""

from __future__ import annotations

import time

import httpx2
import jwt
import pytest
from starlette.applications import Starlette

from tests.conftest import SECRET, Mint, error_code, mcp_session

pytestmark = pytest.mark.anyio

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def claims(**overrides: object) -> dict[str, object]:
    now = int(time.time())
    body: dict[str, object] = {
        "sub": "agent-1",
        "tenant": "acme",
        "aud": "hindsight",
        "iat": now,
        "exp": now + 600,
        "namespaces": {"read": ["user:1"], "write": ["user:1"]},
        "scope": "memory:read memory:write",
    }
    body.update(overrides)
    return body


def bearer(token: str) -> dict[str, str]:
    return {**HEADERS, "authorization": f"Bearer {token}"}


async def post(http: httpx2.AsyncClient, headers: dict[str, str]) -> httpx2.Response:
    return await http.post("/mcp", json=INITIALIZE, headers=headers)


async def test_a_valid_token_initialises_a_session(http: httpx2.AsyncClient, mint: Mint) -> None:
    response = await post(http, bearer(mint()))
    assert response.status_code == 200
    assert response.json()["result"]["serverInfo"]["name"] == "hindsight"


async def test_mcp_is_served_with_and_without_trailing_slash_without_redirect(
    http: httpx2.AsyncClient, mint: Mint
) -> None:
    for path in ("/mcp", "/mcp/"):
        response = await http.post(path, json=INITIALIZE, headers=bearer(mint()))
        assert response.status_code == 200, path


@pytest.mark.parametrize(
    "token",
    [
        pytest.param(None, id="no token"),
        pytest.param(jwt.encode(claims(exp=int(time.time()) - 3600), SECRET, "HS256"), id="expired"),
        pytest.param(jwt.encode(claims(), "another-secret-that-is-long-enough-to-sign", "HS256"), id="bad signature"),
        pytest.param(jwt.encode(claims(aud="someone-else"), SECRET, "HS256"), id="wrong audience"),
        pytest.param(jwt.encode(claims(tenant=None), SECRET, "HS256"), id="no tenant"),
        pytest.param("not.a.jwt", id="garbage"),
    ],
)
async def test_bad_tokens_get_401_with_a_bearer_challenge(http: httpx2.AsyncClient, token: str | None) -> None:
    headers = HEADERS if token is None else bearer(token)
    response = await post(http, headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer ")
    assert 'error="invalid_token"' in response.headers["www-authenticate"]


async def test_a_token_without_any_memory_scope_gets_403(http: httpx2.AsyncClient) -> None:
    token = jwt.encode(claims(scope="profile email"), SECRET, "HS256")
    response = await post(http, bearer(token))
    assert response.status_code == 403
    assert 'error="insufficient_scope"' in response.headers["www-authenticate"]


async def test_a_read_only_token_cannot_call_mutating_tools(app: Starlette, mint: Mint) -> None:
    token = mint(scopes=["memory:read"])
    async with mcp_session(app, token) as client:
        result = await client.call_tool("write_memory", {"content": "should not be stored"})
        listed = await client.call_tool("list_memories", {})
    assert error_code(result) == "scope_forbidden"
    assert listed.structured_content == {"memories": [], "next_cursor": None}


async def test_probes_answer_without_a_token(http: httpx2.AsyncClient) -> None:
    live = await http.get("/livez")
    ready = await http.get("/readyz")
    assert live.status_code == 200
    assert ready.status_code == 200
    assert ready.json()["checks"] == {
        "vector_store": "ok",
        "working_memory": "ok",
        "idempotency": "ok",
        "embedder": "ok",
        "rate_limiter": "ok",
    }

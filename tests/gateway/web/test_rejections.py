"""Requests refused before any tool runs (issue #15.1): 401, 403, 413, 429 and 503 answer their status, their
headers and a JSON-RPC 2.0 error whose `data` carries our error code, so the official MCP SDK client raises an
`MCPError` that says `rate_limited` and when to retry. Checked with the SDK's `Client` and with raw HTTP.

The 403 here is the HTTP-level one (a token without any `memory:*` scope); a token lacking the scope one tool
needs gets the `scope_forbidden` tool error instead (tests/gateway/web/test_auth.py). For contrast, the same client's
success and tool errors (a result with `is_error`, our error as text, no structured content) are checked too."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import jwt
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from starlette.applications import Starlette

from gateway.web.app import create_app
from memory.clock import ManualClock
from ops.config import Settings, TenantLimits
from tests.conftest import BASE_URL, HEADERS, SECRET, Mint, data, make_settings, mcp_session, running, tool_error
from tests.redis_server import RedisServer

pytestmark = pytest.mark.anyio

ONE_READ = TenantLimits(
    subject_read_per_minute=60, subject_write_per_minute=60, tenant_read_per_minute=600, burst_seconds=1
)  # one read of burst per subject, refilled at 1 per second (never, on the test's stopped clock)
FIVE_READS = TenantLimits(subject_read_per_minute=60, tenant_read_per_minute=600, burst_seconds=5)


def tool_call(name: str, call_id: int | str = 1, **arguments: object) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": call_id, "method": "tools/call", "params": {"name": name, "arguments": arguments}}


def refusal(
    json_rpc_code: int,
    code: str,
    message: str,
    *,
    request_id: int | str | None = None,
    retry_after: int | None = None,
) -> dict[str, Any]:
    """The body every refusal must have, written out in full."""
    hint = f"{code}; retry after {retry_after} s" if retry_after is not None else code
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {
            "code": json_rpc_code,
            "message": f"{message} ({hint})",
            "data": {
                "code": code,
                "message": message,
                "retryable": retry_after is not None,
                "retry_after_seconds": retry_after,
            },
        },
    }


def client(app: Starlette, token: str | None = None) -> httpx2.AsyncClient:
    headers = {**HEADERS, "authorization": f"Bearer {token}"} if token else HEADERS
    return httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=BASE_URL, headers=headers)


async def metrics_text(app: Starlette) -> str:
    async with client(app) as http:
        return (await http.get("/metrics")).text


async def connect(app: Starlette, token: str | None) -> None:
    async with client(app, token) as http, Client(streamable_http_client(f"{BASE_URL}/mcp", http_client=http)):
        pass


def the_mcp_error(group: BaseExceptionGroup[BaseException]) -> MCPError:
    """The one `MCPError` in what the SDK client raised: a refused connection comes out of its task groups
    wrapped in exception groups."""
    found: list[MCPError] = []

    def walk(exc: BaseException) -> None:
        if isinstance(exc, BaseExceptionGroup):
            for inner in exc.exceptions:
                walk(inner)
        elif isinstance(exc, MCPError):
            found.append(exc)

    walk(group)
    assert len(found) == 1, group
    return found[0]


async def whoami_until_refused(session: Client) -> None:
    for _ in range(10):
        await session.call_tool("whoami", {})


METADATA_URL = "http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp"  # the test settings' host and port


async def test_the_protected_resource_metadata_names_the_resource_its_scopes_and_how_a_token_is_sent(
    app: Starlette,
) -> None:
    async with client(app) as http:
        metadata = await http.get("/.well-known/oauth-protected-resource/mcp")
        bare = await http.get("/.well-known/oauth-protected-resource")
    assert metadata.status_code == bare.status_code == 200
    assert (
        metadata.json()
        == bare.json()
        == {
            "resource": "http://127.0.0.1:8080/mcp",
            "authorization_servers": [],
            "bearer_methods_supported": ["header"],
            "scopes_supported": ["memory:read", "memory:write", "memory:admin"],
            "resource_name": "hindsight memory gateway",
        }
    )


# --- 401 and 403 --------------------------------------------------------------------------------------------


NO_TOKEN = (
    "a valid bearer token is required: no bearer token was presented (send the header 'Authorization: Bearer <token>')"
)


async def test_a_missing_token_gets_401_with_a_challenge_and_a_json_rpc_error_with_id_null(app: Starlette) -> None:
    async with client(app) as http:
        response = await http.post("/mcp", json=tool_call("whoami", call_id=3))
    assert response.status_code == 401
    assert response.headers["content-type"] == "application/json"
    assert response.headers["www-authenticate"] == (
        f'Bearer realm="hindsight", error="invalid_token", error_description="{NO_TOKEN}", '
        f'resource_metadata="{METADATA_URL}"'
    )
    assert "retry-after" not in response.headers
    assert response.json() == refusal(-32003, "unauthenticated", NO_TOKEN)


async def test_a_reason_with_double_quotes_stays_one_quoted_string_in_the_challenge(app: Starlette) -> None:
    token = jwt.encode(
        {"sub": "a", "tenant": "acme", "aud": "hindsight", "exp": int(time.time()) + 600, "namespaces": ["user:1"]},
        SECRET,
        "HS256",
    )
    async with client(app, token) as http:
        response = await http.post("/mcp", json=tool_call("whoami"))
    message = response.json()["error"]["data"]["message"]
    assert response.status_code == 401
    assert message == (
        "a valid bearer token is required: "
        """claim 'namespaces' must be an object {"read": [...], "write": [...]}"""
    )
    quoted = message.replace('"', '\\"')
    assert f'error_description="{quoted}", resource_metadata=' in response.headers["www-authenticate"]


@pytest.mark.parametrize("token", [None, "not.a.jwt"], ids=["no token", "invalid token"])
async def test_the_sdk_client_without_a_valid_token_raises_unauthenticated(app: Starlette, token: str | None) -> None:
    with pytest.RaisesGroup(MCPError, flatten_subgroups=True) as raised:
        await connect(app, token)
    error = the_mcp_error(raised.value)
    assert error.code == -32003
    assert error.data["code"] == "unauthenticated"
    assert error.data["retryable"] is False
    assert "unauthenticated" in error.message
    says = "no bearer token was presented" if token is None else "bearer token is not a well-formed JWT"
    assert says in error.data["message"]


async def test_a_token_without_any_memory_scope_gets_403_with_a_json_rpc_error(app: Starlette, mint: Mint) -> None:
    async with client(app, mint(scopes=["profile", "email"])) as http:
        response = await http.post("/mcp", json=tool_call("whoami"))
    assert response.status_code == 403
    assert response.headers["www-authenticate"] == (
        'Bearer realm="hindsight", error="insufficient_scope", '
        f'error_description="the token carries no memory:* scope", resource_metadata="{METADATA_URL}"'
    )
    assert response.json() == refusal(-32004, "scope_forbidden", "the token carries no memory:* scope")


async def test_the_sdk_client_with_a_token_for_another_service_raises_scope_forbidden(
    app: Starlette, mint: Mint
) -> None:
    with pytest.RaisesGroup(MCPError, flatten_subgroups=True) as raised:
        await connect(app, mint(scopes=["profile"]))
    error = the_mcp_error(raised.value)
    assert error.code == -32004
    assert error.data["code"] == "scope_forbidden"


# --- 413 ----------------------------------------------------------------------------------------------------


async def pulled_chunks(app: Starlette, token: str, *, declare_length: bool) -> tuple[httpx2.Response, int]:
    """POST five 600-byte chunks; answer the response and how many chunks the server pulled."""
    pulled = 0

    async def body() -> AsyncIterator[bytes]:
        nonlocal pulled
        for _ in range(5):
            pulled += 1
            yield b" " * 600

    headers = {"content-length": "3000"} if declare_length else {}
    async with client(app, token) as http:
        response = await http.post("/mcp", content=body(), headers=headers)
    return response, pulled


@pytest.mark.parametrize("rate_limits", [True, False], ids=["rate limits on", "rate limits off"])
async def test_a_body_over_the_limit_gets_413_without_being_read_past_the_limit(
    tmp_path: Path, mint: Mint, rate_limits: bool
) -> None:
    settings = make_settings(tmp_path / "data", max_request_bytes=1024, rate_limit_enabled=rate_limits)
    async with running(create_app(settings)) as app:
        declared, pulled_when_declared = await pulled_chunks(app, mint(), declare_length=True)
        streamed, pulled_when_streamed = await pulled_chunks(app, mint(), declare_length=False)
    expected = refusal(-32009, "request_too_large", "the request body is over the size limit")
    for response in (declared, streamed):
        assert response.status_code == 413
        assert "retry-after" not in response.headers
        assert response.json() == expected
    assert pulled_when_declared == 0  # Content-Length says it all: nothing is read
    assert pulled_when_streamed == 2  # 1,200 bytes are over 1,024: the rest is never read


async def test_the_sdk_client_sending_too_large_a_call_raises_request_too_large(tmp_path: Path, mint: Mint) -> None:
    settings = make_settings(tmp_path / "data", max_request_bytes=2048)
    async with running(create_app(settings)) as app, mcp_session(app, mint()) as session:
        with pytest.raises(MCPError) as raised:
            await session.call_tool("write_memory", {"content": "x" * 4096})
    assert raised.value.code == -32009
    assert raised.value.data == {
        "code": "request_too_large",
        "message": "the request body is over the size limit",
        "retryable": False,
        "retry_after_seconds": None,
    }


# --- 429 ----------------------------------------------------------------------------------------------------


async def test_a_call_over_the_rate_limit_gets_429_with_its_id_and_retry_time(
    tmp_path: Path, clock: ManualClock, mint: Mint
) -> None:
    settings = make_settings(tmp_path / "data", rate_limit_default=ONE_READ)
    async with running(create_app(settings, clock=clock)) as app, client(app, mint()) as http:
        allowed = await http.post("/mcp", json=tool_call("whoami", call_id=1))
        refused = await http.post("/mcp", json=tool_call("whoami", call_id="call-2"))
        numbered = await http.post("/mcp", json=tool_call("recall_memory", call_id=9, query="tea"))
        batch = await http.post("/mcp", json=[tool_call("whoami", call_id=3)])
        not_json = await http.post("/mcp", content=b"{not json")
        boolean_id = await http.post("/mcp", json=tool_call("whoami", call_id=True))
    assert allowed.status_code == 200
    retry = int(refused.headers["retry-after"])
    assert retry >= 1
    message = "too many read requests; slow down"
    assert refused.status_code == 429
    assert refused.json() == refusal(-32010, "rate_limited", message, request_id="call-2", retry_after=retry)
    assert numbered.json() == refusal(-32010, "rate_limited", message, request_id=9, retry_after=retry)
    for no_id in (batch, not_json, boolean_id):
        assert no_id.status_code == 429
        assert no_id.headers["retry-after"] == str(retry)
        assert no_id.json() == refusal(-32010, "rate_limited", message, retry_after=retry)


async def test_the_sdk_client_over_its_rate_limit_raises_rate_limited_with_the_retry_time(
    tmp_path: Path, clock: ManualClock, mint: Mint
) -> None:
    settings = make_settings(tmp_path / "data", rate_limit_default=FIVE_READS)
    async with running(create_app(settings, clock=clock)) as app, mcp_session(app, mint()) as session:
        with pytest.raises(MCPError) as raised:
            await whoami_until_refused(session)  # the bucket holds 5; connecting (protocol messages) took none
    assert raised.value.code == -32010
    assert raised.value.data["code"] == "rate_limited"
    assert raised.value.data["retryable"] is True
    assert raised.value.data["retry_after_seconds"] >= 1
    assert "rate_limited; retry after" in raised.value.message


async def test_rate_limited_calls_are_counted_as_tool_calls_by_tool(
    tmp_path: Path, clock: ManualClock, mint: Mint
) -> None:
    settings = make_settings(tmp_path / "data", rate_limit_default=ONE_READ)
    async with running(create_app(settings, clock=clock)) as app:
        async with client(app, mint()) as http:
            await http.post("/mcp", json=tool_call("whoami"))
            for body in (
                tool_call("whoami"),
                tool_call("recall_memory", query="tea"),
                tool_call("recall_memory", query="coffee"),
                tool_call("no_such_tool_of_a_caller_minting_labels"),
                {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {}},  # names no tool
            ):
                assert (await http.post("/mcp", json=body)).status_code == 429
        text = await metrics_text(app)
    assert 'hindsight_tool_calls_total{outcome="ok",tool="whoami"} 1.0' in text
    assert 'hindsight_tool_calls_total{outcome="rate_limited",tool="whoami"} 1.0' in text
    assert 'hindsight_tool_calls_total{outcome="rate_limited",tool="recall_memory"} 2.0' in text
    assert 'hindsight_tool_calls_total{outcome="rate_limited",tool="-"} 2.0' in text
    assert "no_such_tool" not in text
    assert 'hindsight_rate_limit_rejections_total{kind="read"} 5.0' in text
    assert "hindsight_recall_latency_seconds_count 0.0" in text  # a refused call has no latency to record


async def test_protocol_messages_over_their_own_bucket_get_429_counted_as_protocol_rejections(
    tmp_path: Path, clock: ManualClock, mint: Mint
) -> None:
    one_message = TenantLimits(subject_protocol_per_minute=60, protocol_burst_seconds=1)  # refilled never here
    settings = make_settings(tmp_path / "data", rate_limit_default=one_message)
    async with running(create_app(settings, clock=clock)) as app:
        async with client(app, mint()) as http:
            listed = await http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
            refused = await http.post("/mcp", json={"jsonrpc": "2.0", "id": "p-2", "method": "ping"})
            notification = await http.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"})
            tool = await http.post("/mcp", json=tool_call("whoami", call_id=4))
        text = await metrics_text(app)
    assert listed.status_code == 200
    retry = int(refused.headers["retry-after"])
    message = "too many protocol messages; slow down"
    assert refused.status_code == 429
    assert refused.json() == refusal(-32010, "rate_limited", message, request_id="p-2", retry_after=retry)
    assert notification.status_code == 429
    assert notification.json() == refusal(-32010, "rate_limited", message, retry_after=retry)
    assert tool.status_code == 200  # tool calls have buckets of their own
    assert 'hindsight_tool_calls_total{outcome="rate_limited",tool="-"} 2.0' in text
    assert 'hindsight_rate_limit_rejections_total{kind="protocol"} 2.0' in text


# --- 503 ----------------------------------------------------------------------------------------------------


async def test_a_gateway_without_a_runtime_answers_503_with_retry_after(settings: Settings, mint: Mint) -> None:
    app = create_app(settings)  # its lifespan never ran: starting (or, after shutdown, stopping)
    async with client(app, mint()) as http:
        response = await http.post("/mcp", json=tool_call("whoami", call_id=7))
    assert response.status_code == 503
    assert response.headers["retry-after"] == "5"
    message = "the gateway is starting or stopping; retry shortly"
    assert response.json() == refusal(-32011, "backend_unavailable", message, request_id=7, retry_after=5)


async def test_the_sdk_client_of_a_gateway_without_a_runtime_raises_backend_unavailable(
    settings: Settings, mint: Mint
) -> None:
    with pytest.RaisesGroup(MCPError, flatten_subgroups=True) as raised:
        await connect(create_app(settings), mint())
    error = the_mcp_error(raised.value)
    assert error.code == -32011
    assert error.data["code"] == "backend_unavailable"
    assert error.data["retry_after_seconds"] == 5


async def test_with_the_rate_limiter_down_and_failing_closed_calls_get_503_and_the_sdk_raises_backend_unavailable(
    tmp_path: Path, own_redis: RedisServer, mint: Mint
) -> None:
    settings = make_settings(
        tmp_path / "data", redis_url=own_redis.url, rate_limit_fail_open=False, backend_timeout_seconds=1
    )
    async with running(create_app(settings)) as app:
        async with mcp_session(app, mint()) as session, client(app, mint()) as http:
            own_redis.stop()
            with pytest.raises(MCPError) as raised:
                await session.call_tool("whoami", {})
            response = await http.post("/mcp", json=tool_call("whoami", call_id="w"))
        own_redis.start()
    message = "rate limiter unavailable; retry shortly"
    assert raised.value.code == -32011
    assert raised.value.data["code"] == "backend_unavailable"
    assert raised.value.data["retry_after_seconds"] == 5
    assert response.status_code == 503
    assert response.headers["retry-after"] == "5"
    assert response.json() == refusal(-32011, "backend_unavailable", message, request_id="w", retry_after=5)


# --- not a refusal: a success and a tool error, with the same SDK client -------------------------------------


async def test_the_sdk_client_validates_a_success_and_gets_tool_errors_as_text_without_structured_content(
    app: Starlette, mint: Mint
) -> None:
    """A tool that fails answers a result, not a JSON-RPC error: `is_error`, our error as compact JSON text, and
    no structured content, which clients check against the tool's output schema (the TypeScript SDK even on an
    error: tests/gateway/web/test_typescript_client.py)."""
    async with mcp_session(app, mint()) as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}  # caches the output schemas
        written = data(await session.call_tool("write_memory", {"content": "The user's favourite editor is Helix"}))
        recalled = data(await session.call_tool("recall_memory", {"query": "which editor does the user like?"}))
        invalid = await session.call_tool("write_memory", {"content": "The user drinks tea", "importance": "high"})
        missing = await session.call_tool("forget_memory", {"id": str(uuid.uuid4())})
    assert tools["write_memory"].output_schema is not None and tools["forget_memory"].output_schema is not None
    assert written["status"] == "created"
    assert [hit["id"] for hit in recalled["memories"]] == [written["id"]]
    for result, code in ((invalid, "invalid_argument"), (missing, "not_found")):
        error = tool_error(result)  # is_error, and no structured content
        assert error["code"] == code and error["retryable"] is False
        assert [part.type for part in result.content] == ["text"]
        text = result.content[0].text  # type: ignore[union-attr]
        assert text == json.dumps({"error": error}, ensure_ascii=False, separators=(",", ":"))
        assert text.startswith(f'{{"error":{{"code":"{code}","message":')


# --- the same shape elsewhere -------------------------------------------------------------------------------


async def test_debug_views_refuse_with_the_same_json_rpc_error(tmp_path: Path, mint: Mint) -> None:
    settings = make_settings(tmp_path / "data", debug_views_enabled=True)
    async with running(create_app(settings)) as app:
        async with client(app) as anonymous, client(app, mint()) as user:
            unauthenticated = await anonymous.get("/debug/stats")
            forbidden = await user.get("/debug/stats")
    assert unauthenticated.status_code == 401
    assert 'error="invalid_token"' in unauthenticated.headers["www-authenticate"]
    assert unauthenticated.json() == refusal(-32003, "unauthenticated", "an admin bearer token is required")
    assert forbidden.status_code == 403
    assert forbidden.json() == refusal(-32004, "scope_forbidden", "debug views need memory:admin")

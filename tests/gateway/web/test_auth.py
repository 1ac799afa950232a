"""Bearer auth on /mcp: 401 with a `WWW-Authenticate` challenge for bad tokens, saying why (issue #31: expired,
bad signature, wrong audience or issuer, missing, malformed), 403 without a memory scope, and a per-tool scope
check."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
import jwt
import pytest
from starlette.applications import Starlette

from gateway.web.app import create_app
from tests.conftest import BASE_URL, HEADERS, INITIALIZE, SECRET, Mint, error_code, make_settings, mcp_session, running

pytestmark = pytest.mark.anyio


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


UNAUTHENTICATED = "a valid bearer token is required: "
ISSUER = "https://issuer.example"


async def refusal_of(http: httpx2.AsyncClient, token: str | None) -> tuple[str, str]:
    """The 401's message and its `WWW-Authenticate` error_description, checked to say the same, with the stable
    code `unauthenticated` and nothing of the secret, the token or the token's tenant."""
    response = await post(http, HEADERS if token is None else bearer(token))
    assert response.status_code == 401
    error = response.json()["error"]
    assert error["data"]["code"] == "unauthenticated"
    message: str = error["data"]["message"]
    assert error["message"] == f"{message} (unauthenticated)"
    challenge = response.headers["www-authenticate"]
    assert 'error="invalid_token"' in challenge
    for leak in (SECRET, "acme", *([token] if token else [])):
        assert leak not in response.text and leak not in challenge
    assert message.startswith(UNAUTHENTICATED), message
    return message.removeprefix(UNAUTHENTICATED), challenge


async def test_a_401_without_a_token_says_no_token_was_presented(http: httpx2.AsyncClient) -> None:
    reason, challenge = await refusal_of(http, None)
    assert reason == "no bearer token was presented (send the header 'Authorization: Bearer <token>')"
    assert f'error_description="{UNAUTHENTICATED}{reason}"' in challenge


async def test_a_401_for_a_non_bearer_authorization_says_no_token_was_presented(http: httpx2.AsyncClient) -> None:
    response = await post(http, {**HEADERS, "authorization": "Basic dXNlcjpwYXNz"})
    assert response.status_code == 401
    assert response.json()["error"]["data"]["message"] == (
        f"{UNAUTHENTICATED}no bearer token was presented (send the header 'Authorization: Bearer <token>')"
    )


async def test_a_401_for_an_expired_token_says_it_has_expired(http: httpx2.AsyncClient) -> None:
    reason, challenge = await refusal_of(http, jwt.encode(claims(exp=int(time.time()) - 3600), SECRET, "HS256"))
    assert reason == "token has expired"
    assert f'error_description="{UNAUTHENTICATED}token has expired"' in challenge


async def test_a_401_for_a_token_expired_within_the_leeway_says_it_has_expired(http: httpx2.AsyncClient) -> None:
    # The verifier's 30 s leeway accepts it; the SDK's backend then refuses it for its past `exp`.
    reason, _ = await refusal_of(http, jwt.encode(claims(exp=int(time.time()) - 5), SECRET, "HS256"))
    assert reason == "token has expired"


async def test_a_401_for_a_token_signed_with_another_secret_says_the_signature_is_invalid(
    http: httpx2.AsyncClient,
) -> None:
    other = "another-secret-that-is-long-enough-to-sign"
    reason, _ = await refusal_of(http, jwt.encode(claims(), other, "HS256"))
    assert reason == "token signature is invalid (it was signed with another secret or key than this server's)"
    assert other not in (await post(http, bearer(jwt.encode(claims(), other, "HS256")))).text


async def test_a_401_for_a_token_for_another_audience_says_so(http: httpx2.AsyncClient) -> None:
    reason, _ = await refusal_of(http, jwt.encode(claims(aud="someone-else"), SECRET, "HS256"))
    assert reason == "token was not issued for this audience (its 'aud' claim)"
    assert "someone-else" not in reason


@pytest.fixture
async def issuer_http(tmp_path: Path) -> AsyncIterator[httpx2.AsyncClient]:
    settings = make_settings(tmp_path / "data", jwt_issuer=ISSUER)
    async with running(create_app(settings)) as app:
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=BASE_URL) as client:
            yield client


async def test_a_401_for_a_token_from_another_issuer_says_so(issuer_http: httpx2.AsyncClient) -> None:
    reason, _ = await refusal_of(issuer_http, jwt.encode(claims(iss="https://evil.example"), SECRET, "HS256"))
    assert reason == "token was not issued by the configured issuer (its 'iss' claim)"
    assert (await post(issuer_http, bearer(jwt.encode(claims(iss=ISSUER), SECRET, "HS256")))).status_code == 200


@pytest.mark.parametrize("token", ["not.a.jwt", "garbage", "eyJhbGciOiJIUzI1NiJ9.e30"])
async def test_a_401_for_a_malformed_token_says_it_is_not_a_jwt(http: httpx2.AsyncClient, token: str) -> None:
    reason, _ = await refusal_of(http, token)
    assert reason == "bearer token is not a well-formed JWT"


async def test_the_reason_is_this_requests_after_another_request_was_refused(http: httpx2.AsyncClient) -> None:
    expired = jwt.encode(claims(exp=int(time.time()) - 3600), SECRET, "HS256")
    assert (await refusal_of(http, expired))[0] == "token has expired"
    assert (await refusal_of(http, None))[0].startswith("no bearer token was presented")
    assert (await refusal_of(http, "not.a.jwt"))[0] == "bearer token is not a well-formed JWT"


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

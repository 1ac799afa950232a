"""The scope claim (RFC 6749 §3.3): scope tokens separated by ASCII spaces only, each token of the allowed
characters, each compared exactly. A token joined to another by any other whitespace is one malformed token:
the whole token is refused (HTTP 401), never read as two scopes."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import jwt
import pytest

from gateway.web.app import create_app
from tenancy import SCOPE_ADMIN, SCOPE_READ, SCOPE_WRITE, AuthenticationFailed, JwtVerifier, parse_scope_claim
from tests.conftest import BASE_URL, SECRET, make_settings, running

PayloadFactory = Callable[..., dict[str, Any]]
Encoder = Callable[..., str]

# Characters Python's str.split() treats as separators besides the ASCII space
OTHER_WHITESPACE = ["\u00a0", "\t", "\n", "\r", "\x0b", "\x0c", "\x1c", "\x1f", "\x85", "\u2003", "\u2028", "\u3000"]


@pytest.mark.parametrize("separator", OTHER_WHITESPACE, ids=lambda s: f"U+{ord(s):04X}")
def test_scopes_joined_by_whitespace_other_than_an_ascii_space_are_one_malformed_token(
    verifier: JwtVerifier, make_payload: PayloadFactory, encode: Encoder, separator: str
) -> None:
    token = encode(make_payload(scope=f"memory:read{separator}memory:admin"))
    with pytest.raises(AuthenticationFailed) as refused:
        verifier.verify(token)
    assert refused.value.reason == "invalid_claims"
    assert "malformed scope" in refused.value.message


@pytest.mark.parametrize(
    "scope",
    [
        'memory:"admin"',  # %x22 is not a scope-token character
        "memory\\admin",  # nor is %x5C
        "mémoire:lire",  # nor anything outside printable ASCII
        ["memory:read", "memory:admin\u00a0"],
        ["memory:read memory:admin"],  # a list item is one token: no space inside
    ],
)
def test_a_scope_token_outside_the_rfc_6749_characters_is_refused(scope: object) -> None:
    with pytest.raises(AuthenticationFailed, match="malformed scope"):
        parse_scope_claim(scope)


def test_scopes_separated_by_ascii_spaces_are_each_granted() -> None:
    assert parse_scope_claim(" memory:read  memory:write openid ") == frozenset({SCOPE_READ, SCOPE_WRITE, "openid"})
    assert parse_scope_claim(["memory:admin", "x!#[]~"]) == frozenset({SCOPE_ADMIN, "x!#[]~"})


@pytest.mark.parametrize("near_miss", ["memory:ADMIN", "memory:admin:x", "memory:admi", "xmemory:admin"])
def test_a_scope_that_only_resembles_admin_does_not_grant_admin(
    verifier: JwtVerifier, make_payload: PayloadFactory, encode: Encoder, near_miss: str
) -> None:
    principal = verifier.verify(encode(make_payload(scope=f"memory:read {near_miss}")))
    assert principal.scopes == frozenset({SCOPE_READ, near_miss})
    assert not principal.is_admin


@pytest.mark.anyio
async def test_the_gateway_answers_401_to_a_token_whose_scope_hides_admin_behind_a_no_break_space(
    tmp_path: Path,
) -> None:
    def token(scope: str) -> str:
        now = int(time.time())
        claims = {
            "sub": "agent-1",
            "tenant": "acme",
            "aud": "hindsight",
            "iat": now,
            "exp": now + 600,
            "namespaces": {"read": ["user:1"]},
            "scope": scope,
        }
        return jwt.encode(claims, SECRET, "HS256")

    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "whoami", "arguments": {}}}
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    async with (
        running(create_app(make_settings(tmp_path / "data"))) as app,
        httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=BASE_URL) as http,
    ):
        smuggled, plain = [
            await http.post("/mcp", json=call, headers={**headers, "authorization": f"Bearer {token(scope)}"})
            for scope in ("memory:read\u00a0memory:admin", "memory:read")
        ]
    assert plain.status_code == 200  # the same token with a well-formed scope is served
    assert plain.json()["result"]["structuredContent"]["scopes"] == ["memory:read"]
    assert smuggled.status_code == 401
    assert 'error="invalid_token"' in smuggled.headers["www-authenticate"]

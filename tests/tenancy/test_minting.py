"""mint_token: tokens it issues verify with JwtVerifier; bad inputs are refused with clear messages."""

from __future__ import annotations

import jwt
import pytest

from tenancy import (
    SCOPE_ADMIN,
    SCOPE_READ,
    SCOPE_WRITE,
    AuthenticationFailed,
    JwtSettings,
    JwtVerifier,
    mint_token,
    scope_for,
)


def test_minted_token_verifies_with_jwt_verifier(verifier: JwtVerifier, secret: str, now: int) -> None:
    token = mint_token(secret, tenant="acme", subject="agent-7", read=["shared:support"], write=["user:42"])

    principal = verifier.verify(token)

    assert principal.subject == "agent-7"
    assert principal.tenant == "acme"
    assert principal.read_namespaces == ("shared:support",)
    assert principal.write_namespaces == ("user:42",)
    assert principal.scopes == frozenset({SCOPE_READ, SCOPE_WRITE})
    assert principal.token_id
    assert principal.expires_at is not None
    assert now + 86400 - 5 <= principal.expires_at <= now + 86400 + 5
    assert scope_for(principal).all_readable == ("shared:support", "user:42")


def test_minted_token_has_design_claims(secret: str) -> None:
    token = mint_token(
        secret, tenant="acme", subject="agent-7", read=["a"], write=[], issuer="https://auth.example", now=1000
    )
    claims = jwt.decode(token, options={"verify_signature": False})
    assert jwt.get_unverified_header(token)["alg"] == "HS256"
    assert claims["iss"] == "https://auth.example"
    assert claims["aud"] == "hindsight"
    assert (claims["iat"], claims["exp"]) == (1000, 1000 + 86400)
    assert claims["namespaces"] == {"read": ["a"], "write": []}
    assert claims["scope"] == "memory:read memory:write"


def test_each_minted_token_gets_its_own_jti(secret: str) -> None:
    tokens = {mint_token(secret, tenant="t", subject="s", read=[], write=[], now=1000) for _ in range(5)}
    ids = {jwt.decode(t, options={"verify_signature": False})["jti"] for t in tokens}
    assert len(ids) == 5


def test_admin_token_carries_admin_scope(verifier: JwtVerifier, secret: str) -> None:
    token = mint_token(secret, tenant="acme", subject="ops", read=[], write=[], admin=True)
    principal = verifier.verify(token)
    assert principal.scopes == frozenset({SCOPE_READ, SCOPE_WRITE, SCOPE_ADMIN})
    assert scope_for(principal).admin


def test_explicit_scopes_replace_the_defaults(verifier: JwtVerifier, secret: str) -> None:
    token = mint_token(secret, tenant="acme", subject="ro", read=["a"], write=[], scopes=[SCOPE_READ])
    assert verifier.verify(token).scopes == frozenset({SCOPE_READ})


def test_token_minted_in_the_past_is_expired(verifier: JwtVerifier, secret: str, now: int) -> None:
    token = mint_token(secret, tenant="acme", subject="a", read=[], write=[], ttl_seconds=60, now=now - 3600)
    with pytest.raises(AuthenticationFailed) as info:
        verifier.verify(token)
    assert info.value.reason == "expired"


def test_issuer_and_audience_must_match_the_verifier(secret: str) -> None:
    verifier = JwtVerifier(JwtSettings(secret=secret, issuer="https://auth.example", audience="memory-api"))
    good = mint_token(
        secret, tenant="acme", subject="a", read=[], write=[], issuer="https://auth.example", audience="memory-api"
    )
    assert verifier.verify(good).subject == "a"
    with pytest.raises(AuthenticationFailed):
        verifier.verify(mint_token(secret, tenant="acme", subject="a", read=[], write=[]))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"tenant": "bad tenant"}, "tenant"),
        ({"subject": ""}, "subject"),
        ({"read": ["Bad:NS"]}, "read namespace 'Bad:NS' is malformed"),
        ({"write": ["ok", "no spaces"]}, "write namespace 'no spaces' is malformed"),
        ({"read": "user:42"}, "not a single string"),
        ({"ttl_seconds": 0}, "ttl_seconds must be a positive integer"),
        ({"ttl_seconds": -5}, "ttl_seconds must be a positive integer"),
        ({"scopes": ["memory:read memory:write"]}, "without whitespace"),
        ({"scopes": "memory:read"}, "not a single string"),
    ],
)
def test_invalid_inputs_raise_clear_value_errors(secret: str, kwargs: dict[str, object], message: str) -> None:
    arguments: dict[str, object] = {"tenant": "acme", "subject": "a", "read": [], "write": []} | kwargs
    with pytest.raises(ValueError, match=message):
        mint_token(secret, **arguments)  # type: ignore[arg-type]


def test_short_secret_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 32 bytes"):
        mint_token("short", tenant="acme", subject="a", read=[], write=[])

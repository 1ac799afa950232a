"""JwtVerifier: which bearer tokens become a Principal and which are rejected (and why)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp.server.auth.provider import AccessToken, TokenVerifier

from tenancy import (
    SCOPE_READ,
    SCOPE_WRITE,
    AuthenticationFailed,
    ClaimNames,
    JwtSettings,
    JwtVerifier,
    Principal,
    principal_from_access_token,
    scope_for,
)

PayloadFactory = Callable[..., dict[str, Any]]
Encoder = Callable[..., str]


def rejection(verifier: JwtVerifier, token: str) -> AuthenticationFailed:
    with pytest.raises(AuthenticationFailed) as info:
        verifier.verify(token)
    assert info.value.code == "unauthenticated"
    assert not token or token not in info.value.message
    return info.value


Refused = Callable[..., AuthenticationFailed]


@pytest.fixture
def refused(verifier: JwtVerifier, make_payload: PayloadFactory, encode: Encoder) -> Refused:
    """The rejection of a token of the valid payload with `claims` overridden (`...` removes one), signed as
    `encode` signs (with its `key` and `algorithm`)."""

    def refuse(*, key: str | None = None, algorithm: str = "HS256", **claims: Any) -> AuthenticationFailed:
        return rejection(verifier, encode(make_payload(**claims), key=key, algorithm=algorithm))

    return refuse


# --- valid tokens -------------------------------------------------------------------------------------------


def test_valid_token_round_trips_to_principal_and_scope(
    verifier: JwtVerifier, make_payload: PayloadFactory, encode: Encoder, now: int
) -> None:
    principal = verifier.verify(encode(make_payload()))

    assert principal == Principal(
        subject="agent-7",
        tenant="acme",
        read_namespaces=("user:42", "shared:support"),
        write_namespaces=("user:42",),
        scopes=frozenset({SCOPE_READ, SCOPE_WRITE}),
        expires_at=now + 3600,
        token_id="token-1",
    )
    scope = scope_for(principal)
    assert scope.tenant == "acme"
    assert scope.all_readable == ("user:42", "shared:support")
    assert scope.writable == ("user:42",)
    assert not scope.admin


def test_verifier_satisfies_the_mcp_token_verifier_protocol(verifier: JwtVerifier) -> None:
    as_protocol: TokenVerifier = verifier
    assert callable(as_protocol.verify_token)


def test_expired_token_within_leeway_is_accepted(
    verifier: JwtVerifier, make_payload: PayloadFactory, encode: Encoder, now: int
) -> None:
    assert verifier.verify(encode(make_payload(exp=now - 5))).subject == "agent-7"


def test_nbf_within_leeway_is_accepted(
    verifier: JwtVerifier, make_payload: PayloadFactory, encode: Encoder, now: int
) -> None:
    assert verifier.verify(encode(make_payload(nbf=now + 5))).tenant == "acme"


def test_configured_issuer_is_accepted_when_it_matches(
    secret: str, make_payload: PayloadFactory, encode: Encoder
) -> None:
    verifier = JwtVerifier(JwtSettings(secret=secret, issuer="https://auth.example"))
    assert verifier.verify(encode(make_payload(iss="https://auth.example"))).subject == "agent-7"


def test_audience_is_not_checked_when_not_configured(
    secret: str, make_payload: PayloadFactory, encode: Encoder
) -> None:
    verifier = JwtVerifier(JwtSettings(secret=secret, audience=None))
    assert verifier.verify(encode(make_payload(aud="someone-else"))).subject == "agent-7"
    assert verifier.verify(encode(make_payload(aud=...))).subject == "agent-7"


def test_hs512_token_is_accepted_when_hs512_is_allowed(
    secret: str, make_payload: PayloadFactory, encode: Encoder
) -> None:
    verifier = JwtVerifier(JwtSettings(secret=secret, algorithms=("HS256", "HS512")))
    assert verifier.verify(encode(make_payload(), algorithm="HS512")).subject == "agent-7"


def test_custom_claim_names_are_read(secret: str, make_payload: PayloadFactory, encode: Encoder) -> None:
    names = ClaimNames(tenant="https://hindsight/tenant", namespaces="https://hindsight/ns", scope="scp")
    verifier = JwtVerifier(JwtSettings(secret=secret, claim_names=names))
    payload = make_payload(tenant=..., namespaces=..., scope=...)
    payload |= {names.tenant: "acme", names.namespaces: {"read": ["a"]}, names.scope: ["memory:read"]}

    principal = verifier.verify(encode(payload))

    assert (principal.tenant, principal.read_namespaces, principal.scopes) == (
        "acme",
        ("a",),
        frozenset({SCOPE_READ}),
    )


# --- rejected tokens ----------------------------------------------------------------------------------------


def test_expired_token_is_rejected(refused: Refused, now: int) -> None:
    assert refused(iat=now - 7200, exp=now - 3600).reason == "expired"


def test_token_with_nbf_in_the_future_is_rejected(refused: Refused, now: int) -> None:
    assert refused(nbf=now + 600).reason == "not_yet_valid"


def test_token_issued_in_the_future_is_rejected(refused: Refused, now: int) -> None:
    assert refused(iat=now + 600, exp=now + 4000).reason == "not_yet_valid"


def test_token_without_exp_is_rejected(refused: Refused) -> None:
    error = refused(exp=...)
    assert error.reason == "missing_claim"
    assert "exp" in error.message


def test_token_without_sub_is_rejected(refused: Refused) -> None:
    assert refused(sub=...).reason == "missing_claim"


def test_token_with_bad_signature_is_rejected(refused: Refused) -> None:
    assert refused(key="another-secret-that-is-also-long-enough-for-hs256!!").reason == "bad_signature"


def test_token_with_tampered_payload_is_rejected(
    verifier: JwtVerifier, make_payload: PayloadFactory, encode: Encoder
) -> None:
    header, _, signature = encode(make_payload()).split(".")
    _, forged_payload, _ = encode(make_payload(tenant="other-tenant")).split(".")
    assert rejection(verifier, f"{header}.{forged_payload}.{signature}").reason == "bad_signature"


def test_token_for_another_audience_is_rejected(refused: Refused) -> None:
    assert refused(aud="another-service").reason == "wrong_audience"


def test_token_without_audience_is_rejected_when_audience_is_configured(refused: Refused) -> None:
    assert refused(aud=...).reason == "missing_claim"


def test_token_from_another_issuer_is_rejected_when_issuer_is_configured(
    secret: str, make_payload: PayloadFactory, encode: Encoder
) -> None:
    verifier = JwtVerifier(JwtSettings(secret=secret, issuer="https://auth.example"))
    assert rejection(verifier, encode(make_payload(iss="https://evil.example"))).reason == "wrong_issuer"
    assert rejection(verifier, encode(make_payload())).reason == "missing_claim"


@pytest.mark.parametrize("alg", ["none", "None", "NONE"])
def test_unsigned_alg_none_token_is_rejected(
    alg: str, verifier: JwtVerifier, make_payload: PayloadFactory, unsigned_token: Encoder
) -> None:
    assert rejection(verifier, unsigned_token(make_payload(), alg=alg)).reason == "algorithm_not_allowed"


def test_alg_none_is_rejected_even_if_listed_in_settings(secret: str) -> None:
    with pytest.raises(ValueError, match="not allowed"):
        JwtSettings(secret=secret, algorithms=("HS256", "none"))


def test_token_signed_hs512_is_rejected_when_only_hs256_is_allowed(refused: Refused) -> None:
    assert refused(algorithm="HS512").reason == "algorithm_not_allowed"


def test_token_claiming_rs256_is_rejected_with_a_shared_secret(
    verifier: JwtVerifier, make_payload: PayloadFactory, unsigned_token: Encoder
) -> None:
    token = unsigned_token(make_payload(), alg="RS256") + "c2lnbmF0dXJl"
    assert rejection(verifier, token).reason == "algorithm_not_allowed"


def test_asymmetric_algorithms_cannot_be_configured_with_a_secret(secret: str) -> None:
    with pytest.raises(ValueError, match="RS256"):
        JwtSettings(secret=secret, algorithms=("RS256",))


def test_short_secrets_are_refused_by_settings() -> None:
    with pytest.raises(ValueError, match="at least 32 bytes"):
        JwtSettings(secret="too-short")
    with pytest.raises(ValueError, match="at least 64 bytes for HS512"):
        JwtSettings(secret="x" * 40, algorithms=("HS512",))


def test_oversized_token_is_rejected_before_parsing(
    verifier: JwtVerifier, make_payload: PayloadFactory, encode: Encoder
) -> None:
    token = encode(make_payload(padding="x" * 9000))  # correctly signed, just too big
    assert len(token) > 8192
    assert rejection(verifier, token).reason == "token_too_large"


@pytest.mark.parametrize("token", ["", "not-a-jwt", "a.b.c", "....", "eyJhbGciOiJIUzI1NiJ9.e30"])
def test_malformed_token_is_rejected(verifier: JwtVerifier, token: str) -> None:
    assert rejection(verifier, token).reason in {"missing_token", "malformed"}


def test_token_missing_tenant_claim_is_rejected(
    verifier: JwtVerifier, make_payload: PayloadFactory, encode: Encoder
) -> None:
    error = rejection(verifier, encode(make_payload(tenant=...)))
    assert error.reason == "missing_claim"
    assert "tenant" in error.message


def test_token_with_malformed_namespaces_is_rejected(
    verifier: JwtVerifier, make_payload: PayloadFactory, encode: Encoder
) -> None:
    token = encode(make_payload(namespaces=["user:42"]))
    assert rejection(verifier, token).reason == "invalid_claims"


@given(st.text(max_size=300))
def test_arbitrary_strings_only_ever_raise_authentication_failed(garbage: str) -> None:
    verifier = JwtVerifier(JwtSettings(secret="s" * 64))
    with pytest.raises(AuthenticationFailed):
        verifier.verify(garbage)


# --- the MCP SDK entry point --------------------------------------------------------------------------------


def test_verify_token_returns_access_token_whose_claims_round_trip_to_the_principal(
    verifier: JwtVerifier, make_payload: PayloadFactory, encode: Encoder, now: int
) -> None:
    token = encode(make_payload(scope="memory:write memory:read"))

    access = asyncio.run(verifier.verify_token(token))

    assert isinstance(access, AccessToken)
    assert access.token == token
    assert access.client_id == access.subject == "agent-7"
    assert access.scopes == [SCOPE_READ, SCOPE_WRITE]
    assert access.expires_at == now + 3600
    assert principal_from_access_token(access) == verifier.verify(token)


def test_verify_token_passes_issuer_for_session_binding(
    secret: str, make_payload: PayloadFactory, encode: Encoder
) -> None:
    verifier = JwtVerifier(JwtSettings(secret=secret, issuer="https://auth.example"))
    access = asyncio.run(verifier.verify_token(encode(make_payload(iss="https://auth.example"))))
    assert access is not None
    assert access.claims is not None
    assert access.claims["iss"] == "https://auth.example"


def test_verify_token_returns_none_for_bad_tokens(
    verifier: JwtVerifier, make_payload: PayloadFactory, encode: Encoder, unsigned_token: Encoder, now: int
) -> None:
    bad_tokens = [
        "",
        "garbage",
        encode(make_payload(exp=now - 3600)),
        encode(make_payload(), key="wrong-secret-wrong-secret-wrong-secret!!"),
        unsigned_token(make_payload()),
        encode(make_payload(tenant="bad tenant")),
    ]
    for token in bad_tokens:
        assert asyncio.run(verifier.verify_token(token)) is None


def test_rejected_tokens_are_never_logged(
    verifier: JwtVerifier,
    make_payload: PayloadFactory,
    encode: Encoder,
    now: int,
    caplog: pytest.LogCaptureFixture,
) -> None:
    token = encode(make_payload(exp=now - 3600))
    with caplog.at_level(logging.DEBUG):
        assert asyncio.run(verifier.verify_token(token)) is None
    assert "expired" in caplog.text
    for segment in token.split("."):
        assert segment not in caplog.text


def test_an_access_token_not_made_by_the_verifier_carries_no_principal() -> None:
    access = AccessToken(token="t", client_id="c", scopes=[], claims={"hindsight_principal": {"tenant": "acme"}})
    with pytest.raises(AuthenticationFailed):
        principal_from_access_token(access)


def test_a_verified_token_is_served_from_the_cache_but_never_past_its_expiry() -> None:
    import asyncio
    import time as _time

    from tenancy import JwtSettings, JwtVerifier, mint_token

    secret = "cache-secret-0123456789-0123456789-abcdef"
    verifier = JwtVerifier(JwtSettings(secret=secret))
    token = mint_token(secret, tenant="acme", subject="a", read=["user:1"], write=[], ttl_seconds=600)
    first = asyncio.run(verifier.verify_token(token))
    second = asyncio.run(verifier.verify_token(token))
    assert first is not None and second is first  # the second call did not verify again
    expired = mint_token(
        secret, tenant="acme", subject="a", read=["user:1"], write=[], ttl_seconds=1, now=int(_time.time()) - 120
    )
    assert asyncio.run(verifier.verify_token(expired)) is None
    assert asyncio.run(verifier.verify_token(token + "x")) is None

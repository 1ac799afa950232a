"""The attack suite: forged, confused, stale and oversized tokens are rejected with a static PEM key and with JWKS.

Each attack must make `verify_token` return None (HTTP 401) and `verify` raise `AuthenticationFailed` with the
expected reason; attacks caught before verification must not even reach the identity provider's JWKS.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from tenancy import AuthenticationFailed, JwtSettings, JwtVerifier
from tests.tenancy.signing import FakeMonotonic, JwksServer, KeyPair, ec_key, hmac_token

PayloadFactory = Callable[..., dict[str, Any]]
Encoder = Callable[..., str]
ISSUER = "https://auth.example"


@dataclass
class Forge:
    """What an attacker may use: valid payloads, the trusted public key (it is public), its own keys."""

    payload: PayloadFactory
    trusted: KeyPair
    attacker: KeyPair
    unsigned: Encoder
    now: int

    def signed(self, **overrides: Any) -> str:
        return self.trusted.sign(self.payload(**overrides))


def alg_none(f: Forge) -> str:
    return f.unsigned(f.payload())


def hs256_signed_with_the_public_key_pem(f: Forge) -> str:
    return hmac_token(f.payload(), f.trusted.public_pem.encode(), kid=f.trusted.kid)


def expired(f: Forge) -> str:
    return f.signed(iat=f.now - 7200, exp=f.now - 3600)


def nbf_in_the_future(f: Forge) -> str:
    return f.signed(nbf=f.now + 600)


def wrong_audience(f: Forge) -> str:
    return f.signed(aud="another-service")


def wrong_issuer(f: Forge) -> str:
    return f.signed(iss="https://evil.example")


def tampered_payload(f: Forge) -> str:
    header, _, signature = f.signed().split(".")
    _, forged, _ = f.signed(tenant="victim", namespaces={"read": ["user:1"], "write": ["user:1"]}).split(".")
    return f"{header}.{forged}.{signature}"


def unknown_kid(f: Forge) -> str:
    return f.attacker.sign(f.payload())


def untrusted_key_under_the_trusted_kid(f: Forge) -> str:
    return f.attacker.sign(f.payload(), kid=f.trusted.kid)


def es256_token_claiming_the_rsa_kid(f: Forge) -> str:
    return ec_key("ec-attacker").sign(f.payload(), kid=f.trusted.kid)


def missing_tenant_claim(f: Forge) -> str:
    return f.signed(tenant=...)


def malformed_namespaces_claim(f: Forge) -> str:
    return f.signed(namespaces={"read": ["Not A Namespace!"]})


def megabyte_token(f: Forge) -> str:
    return f.signed(padding="x" * 1_000_000)


REJECTED_BEFORE_KEY_LOOKUP = {alg_none, hs256_signed_with_the_public_key_pem, megabyte_token}

# attack -> (reason with a static PEM key, reason with JWKS)
ATTACKS: dict[Callable[[Forge], str], tuple[str, str]] = {
    alg_none: ("algorithm_not_allowed", "algorithm_not_allowed"),
    hs256_signed_with_the_public_key_pem: ("algorithm_not_allowed", "algorithm_not_allowed"),
    expired: ("expired", "expired"),
    nbf_in_the_future: ("not_yet_valid", "not_yet_valid"),
    wrong_audience: ("wrong_audience", "wrong_audience"),
    wrong_issuer: ("wrong_issuer", "wrong_issuer"),
    tampered_payload: ("bad_signature", "bad_signature"),
    unknown_kid: ("bad_signature", "unknown_kid"),  # a static key has no kid: the signature decides
    untrusted_key_under_the_trusted_kid: ("bad_signature", "bad_signature"),
    es256_token_claiming_the_rsa_kid: ("no_matching_key", "no_matching_key"),
    missing_tenant_claim: ("missing_claim", "missing_claim"),
    malformed_namespaces_claim: ("invalid_claims", "invalid_claims"),
    megabyte_token: ("token_too_large", "token_too_large"),
}


@pytest.fixture(params=["static_pem", "jwks"])
def key_source(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def verifier(key_source: str, rsa_old: KeyPair, jwks_server: JwksServer, monotonic: FakeMonotonic) -> JwtVerifier:
    """RS256 + ES256 allowed, issuer and audience checked; the trusted key is `rsa_old`."""
    if key_source == "static_pem":
        settings = JwtSettings(public_keys=(rsa_old.public_pem,), issuer=ISSUER)
    else:
        jwks_server.publish(rsa_old)
        settings = JwtSettings(jwks_url=jwks_server.url, issuer=ISSUER)
    assert settings.algorithms == ("RS256", "ES256")
    return JwtVerifier(settings, clock=monotonic)


@pytest.fixture
def forge(
    make_payload: PayloadFactory, rsa_old: KeyPair, attacker_key: KeyPair, unsigned_token: Encoder, now: int
) -> Forge:
    def payload(**overrides: Any) -> dict[str, Any]:
        return make_payload(**({"iss": ISSUER} | overrides))

    return Forge(payload, rsa_old, attacker_key, unsigned_token, now)


def test_a_genuine_token_is_accepted_by_each_key_source(verifier: JwtVerifier, forge: Forge) -> None:
    assert asyncio.run(verifier.verify_token(forge.signed())) is not None
    assert verifier.verify(forge.signed()).tenant == "acme"


@pytest.mark.parametrize("attack", list(ATTACKS), ids=[attack.__name__ for attack in ATTACKS])
def test_attack_token_is_rejected(
    attack: Callable[[Forge], str], key_source: str, verifier: JwtVerifier, forge: Forge, jwks_server: JwksServer
) -> None:
    token = attack(forge)
    expected = ATTACKS[attack][0 if key_source == "static_pem" else 1]

    assert asyncio.run(verifier.verify_token(token)) is None
    with pytest.raises(AuthenticationFailed) as info:
        verifier.verify(token)

    assert info.value.reason == expected
    assert token not in info.value.message
    if attack in REJECTED_BEFORE_KEY_LOOKUP:
        assert jwks_server.requests == 0

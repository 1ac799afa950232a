"""Shared fixtures for the tenancy tests: a test secret, a clock reading, token/payload factories, asymmetric key
pairs (generated once per session) and a real JWKS HTTP server."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import jwt
import pytest

from tenancy import JwtSettings, JwtVerifier
from tests.tenancy.signing import FakeMonotonic, JwksServer, KeyPair, ec_key, rsa_key

# 64 bytes: long enough for HS512 as well, so PyJWT never warns about short keys.
TEST_SECRET = "test-secret-0123456789abcdefghijklmnopqrstuvwxyz-ABCDEFGHIJKLMNOP"

PayloadFactory = Callable[..., dict[str, Any]]
Encoder = Callable[..., str]


@pytest.fixture
def secret() -> str:
    return TEST_SECRET


@pytest.fixture
def now() -> int:
    return int(time.time())


@pytest.fixture
def settings(secret: str) -> JwtSettings:
    return JwtSettings(secret=secret)


@pytest.fixture
def verifier(settings: JwtSettings) -> JwtVerifier:
    return JwtVerifier(settings)


@pytest.fixture
def make_payload(now: int) -> PayloadFactory:
    """A valid payload (docs/CONFIGURATION.md § "Identity providers"); keyword arguments override (or, with value `...`,
    remove) claims."""

    def factory(**overrides: Any) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "aud": "hindsight",
            "sub": "agent-7",
            "iat": now,
            "exp": now + 3600,
            "jti": "token-1",
            "tenant": "acme",
            "namespaces": {"read": ["user:42", "shared:support"], "write": ["user:42"]},
            "scope": "memory:read memory:write",
        }
        return overridden(payload, overrides)

    return factory


def overridden(claims: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """`claims` with each of `overrides` set, or removed where its value is `...`."""
    for key, value in overrides.items():
        if value is ...:
            claims.pop(key, None)
        else:
            claims[key] = value
    return claims


@pytest.fixture
def encode(secret: str) -> Encoder:
    """Sign a payload with PyJWT (default: the test secret, HS256)."""

    def factory(payload: dict[str, Any], *, key: str | None = None, algorithm: str = "HS256") -> str:
        return jwt.encode(payload, key if key is not None else secret, algorithm=algorithm)

    return factory


@pytest.fixture
def unsigned_token() -> Encoder:
    """Build an unsecured JWT by hand: base64url header and payload, empty signature."""

    def factory(payload: dict[str, Any], *, alg: str = "none") -> str:
        def b64(data: dict[str, Any]) -> str:
            raw = json.dumps(data, separators=(",", ":")).encode()
            return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

        return f"{b64({'alg': alg, 'typ': 'JWT'})}.{b64(payload)}."

    return factory


@pytest.fixture(scope="session")
def rsa_old() -> KeyPair:
    return rsa_key("rsa-2025")


@pytest.fixture(scope="session")
def rsa_new() -> KeyPair:
    return rsa_key("rsa-2026")


@pytest.fixture(scope="session")
def ec_p256() -> KeyPair:
    return ec_key("ec-2026")


@pytest.fixture(scope="session")
def attacker_key() -> KeyPair:
    """A well-formed key the gateway does not trust."""
    return rsa_key("attacker")


@pytest.fixture
def monotonic() -> FakeMonotonic:
    return FakeMonotonic()


@pytest.fixture
def jwks_server() -> Iterator[JwksServer]:
    server = JwksServer()
    try:
        yield server
    finally:
        server.stop()

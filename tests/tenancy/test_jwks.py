"""JWKS key source over real HTTP: caching by kid, refetch on an unknown kid at a bounded rate, key rotation,
failures that reject tokens without raising, and fetches that never block the event loop.

The server is a real `ThreadingHTTPServer` on 127.0.0.1; time is a `FakeMonotonic` clock, so nothing sleeps.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anyio
import anyio.to_thread
import pytest

from tenancy import AuthenticationFailed, JwtSettings, JwtVerifier
from tenancy.jwks import parse_jwks
from tests.tenancy.signing import FakeMonotonic, JwksServer, KeyPair, ec_key, hmac_token, rsa_key

PayloadFactory = Callable[..., dict[str, Any]]
CACHE_SECONDS = 300
MIN_REFRESH_SECONDS = 30


def jwks_verifier(server: JwksServer, clock: FakeMonotonic, **overrides: Any) -> JwtVerifier:
    options: dict[str, Any] = {
        "jwks_url": server.url,
        "jwks_cache_seconds": CACHE_SECONDS,
        "jwks_min_refresh_seconds": MIN_REFRESH_SECONDS,
        "jwks_timeout_seconds": 2,
    }
    return JwtVerifier(JwtSettings(**(options | overrides)), clock=clock)


@pytest.fixture
def verifier(jwks_server: JwksServer, monotonic: FakeMonotonic) -> JwtVerifier:
    """A verifier of the test's JWKS server with the default options; it fetches the keys on its first token, so
    the test may publish them after asking for it."""
    return jwks_verifier(jwks_server, monotonic)


def rejection(verifier: JwtVerifier, token: str) -> str:
    with pytest.raises(AuthenticationFailed) as info:
        verifier.verify(token)
    return info.value.reason


# --- accepting and caching ----------------------------------------------------------------------------------


def test_rs256_and_es256_tokens_from_the_jwks_are_accepted_with_a_single_fetch(
    jwks_server: JwksServer,
    monotonic: FakeMonotonic,
    verifier: JwtVerifier,
    rsa_old: KeyPair,
    ec_p256: KeyPair,
    make_payload: PayloadFactory,
) -> None:
    jwks_server.publish(rsa_old, ec_p256)

    for _ in range(5):
        assert verifier.verify(rsa_old.sign(make_payload(sub="rsa-agent"))).subject == "rsa-agent"
        assert verifier.verify(ec_p256.sign(make_payload(sub="ec-agent"))).subject == "ec-agent"
        monotonic.advance(CACHE_SECONDS / 10)

    assert jwks_server.requests == 1


def test_keys_are_refetched_once_the_cache_has_expired(
    jwks_server: JwksServer,
    monotonic: FakeMonotonic,
    verifier: JwtVerifier,
    rsa_old: KeyPair,
    make_payload: PayloadFactory,
) -> None:
    jwks_server.publish(rsa_old)
    token = rsa_old.sign(make_payload())

    verifier.verify(token)
    monotonic.advance(CACHE_SECONDS - 1)
    verifier.verify(token)
    assert jwks_server.requests == 1

    monotonic.advance(1)
    verifier.verify(token)
    assert jwks_server.requests == 2


def test_a_jwks_token_without_kid_is_rejected(
    jwks_server: JwksServer, verifier: JwtVerifier, rsa_old: KeyPair, make_payload: PayloadFactory
) -> None:
    jwks_server.publish(rsa_old)
    assert rejection(verifier, rsa_old.sign(make_payload(), kid=None)) == "no_kid"
    assert rejection(verifier, rsa_old.sign(make_payload(), kid="k" * 300)) == "no_kid"
    assert jwks_server.requests == 0


def test_a_jwk_declaring_rs256_does_not_verify_a_ps256_token_with_the_same_key(
    jwks_server: JwksServer, monotonic: FakeMonotonic, rsa_old: KeyPair, make_payload: PayloadFactory
) -> None:
    jwks_server.publish(rsa_old.jwk(alg="RS256"))
    verifier = jwks_verifier(jwks_server, monotonic, algorithms=("RS256", "PS256"))
    assert verifier.verify(rsa_old.sign(make_payload())).tenant == "acme"
    assert rejection(verifier, rsa_old.sign(make_payload(), algorithm="PS256")) == "no_matching_key"


def test_a_jwk_without_alg_verifies_any_allowed_algorithm_of_its_key_type(
    jwks_server: JwksServer, monotonic: FakeMonotonic, rsa_old: KeyPair, make_payload: PayloadFactory
) -> None:
    jwks_server.publish(rsa_old.jwk(alg=None))
    verifier = jwks_verifier(jwks_server, monotonic, algorithms=("RS256", "PS256"))
    assert verifier.verify(rsa_old.sign(make_payload(), algorithm="PS256")).tenant == "acme"


def test_a_hs256_token_is_refused_even_if_the_jwks_publishes_a_symmetric_key(
    jwks_server: JwksServer, verifier: JwtVerifier, make_payload: PayloadFactory
) -> None:
    secret = b"s" * 64
    jwks_server.publish({"kty": "oct", "kid": "hmac", "k": "c" * 86, "alg": "HS256"})
    assert rejection(verifier, hmac_token(make_payload(), secret, kid="hmac")) == "algorithm_not_allowed"


def test_the_jku_header_is_never_followed(
    jwks_server: JwksServer, verifier: JwtVerifier, rsa_old: KeyPair, make_payload: PayloadFactory
) -> None:
    attacker_jwks = JwksServer()
    try:
        forged_key = rsa_key("forged")
        attacker_jwks.publish(forged_key)
        jwks_server.publish(rsa_old)
        token = forged_key.sign(make_payload(), kid="forged")
        token_with_jku = forged_key.sign(make_payload(), headers={"jku": attacker_jwks.url, "x5u": attacker_jwks.url})

        assert rejection(verifier, token) == "unknown_kid"
        assert rejection(verifier, token_with_jku) == "unknown_kid"
        assert attacker_jwks.requests == 0
    finally:
        attacker_jwks.stop()


# --- rotation -----------------------------------------------------------------------------------------------


def test_rotation_old_and_new_keys_are_valid_together_then_the_removed_key_expires_with_the_cache(
    jwks_server: JwksServer,
    monotonic: FakeMonotonic,
    verifier: JwtVerifier,
    rsa_old: KeyPair,
    rsa_new: KeyPair,
    make_payload: PayloadFactory,
) -> None:
    jwks_server.publish(rsa_old, rsa_new)
    old_token = rsa_old.sign(make_payload(sub="old"))
    new_token = rsa_new.sign(make_payload(sub="new"))

    assert verifier.verify(old_token).subject == "old"
    assert verifier.verify(new_token).subject == "new"

    jwks_server.publish(rsa_new)  # the identity provider retires the old key
    monotonic.advance(CACHE_SECONDS - 1)
    assert verifier.verify(old_token).subject == "old"  # still cached
    assert jwks_server.requests == 1

    monotonic.advance(1)
    assert rejection(verifier, old_token) == "unknown_kid"
    assert verifier.verify(new_token).subject == "new"
    assert jwks_server.requests == 2


def test_a_key_added_to_the_jwks_is_picked_up_by_the_refetch_on_its_unknown_kid(
    jwks_server: JwksServer,
    monotonic: FakeMonotonic,
    verifier: JwtVerifier,
    rsa_old: KeyPair,
    rsa_new: KeyPair,
    make_payload: PayloadFactory,
) -> None:
    jwks_server.publish(rsa_old)
    verifier.verify(rsa_old.sign(make_payload()))

    jwks_server.publish(rsa_old, rsa_new)
    monotonic.advance(MIN_REFRESH_SECONDS)
    assert verifier.verify(rsa_new.sign(make_payload(sub="new"))).subject == "new"
    assert verifier.verify(rsa_old.sign(make_payload(sub="old"))).subject == "old"
    assert jwks_server.requests == 2


def test_a_new_kid_within_the_refresh_interval_is_rejected_without_a_fetch(
    jwks_server: JwksServer,
    monotonic: FakeMonotonic,
    rsa_old: KeyPair,
    rsa_new: KeyPair,
    make_payload: PayloadFactory,
) -> None:
    jwks_server.publish(rsa_old, rsa_new)
    verifier = jwks_verifier(jwks_server, monotonic)
    jwks_server.publish(rsa_old)
    verifier.verify(rsa_old.sign(make_payload()))  # fetch 1: only the old key
    jwks_server.publish(rsa_old, rsa_new)

    monotonic.advance(MIN_REFRESH_SECONDS - 1)
    assert rejection(verifier, rsa_new.sign(make_payload())) == "unknown_kid"
    assert jwks_server.requests == 1


# --- bounded refresh rate -----------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_flood_of_unknown_kids_causes_at_most_one_fetch_per_refresh_interval(
    jwks_server: JwksServer,
    monotonic: FakeMonotonic,
    rsa_old: KeyPair,
    attacker_key: KeyPair,
    make_payload: PayloadFactory,
) -> None:
    jwks_server.publish(rsa_old)
    verifier = jwks_verifier(jwks_server, monotonic)
    assert await verifier.verify_token(rsa_old.sign(make_payload())) is not None
    flood = [attacker_key.sign(make_payload(), kid=f"made-up-{i}") for i in range(50)]
    results: list[object] = []

    async def attempt(token: str) -> None:
        results.append(await verifier.verify_token(token))

    async with anyio.create_task_group() as tasks:  # within the interval of the first fetch
        for token in flood:
            tasks.start_soon(attempt, token)
    assert jwks_server.requests == 1

    monotonic.advance(MIN_REFRESH_SECONDS)
    async with anyio.create_task_group() as tasks:  # one refetch allowed, shared by the whole flood
        for token in flood:
            tasks.start_soon(attempt, token)

    assert results == [None] * 100
    assert jwks_server.requests == 2
    assert await verifier.verify_token(rsa_old.sign(make_payload())) is not None


def test_failed_fetches_are_rate_limited_as_well(
    jwks_server: JwksServer,
    monotonic: FakeMonotonic,
    verifier: JwtVerifier,
    rsa_old: KeyPair,
    make_payload: PayloadFactory,
) -> None:
    jwks_server.status = 503
    token = rsa_old.sign(make_payload())

    for _ in range(20):
        assert rejection(verifier, token) == "jwks_unavailable"
    assert jwks_server.requests == 1

    jwks_server.status = 200
    jwks_server.publish(rsa_old)
    monotonic.advance(MIN_REFRESH_SECONDS)
    assert verifier.verify(token).tenant == "acme"
    assert jwks_server.requests == 2


# --- failures reject, never raise ---------------------------------------------------------------------------


@pytest.mark.anyio
async def test_jwks_server_down_rejects_the_token_without_an_exception(
    monotonic: FakeMonotonic, rsa_old: KeyPair, make_payload: PayloadFactory
) -> None:
    server = JwksServer()
    server.stop()  # nothing listens on its port any more
    verifier = jwks_verifier(server, monotonic)
    token = rsa_old.sign(make_payload())

    assert await verifier.verify_token(token) is None
    monotonic.advance(MIN_REFRESH_SECONDS)
    assert rejection(verifier, token) == "jwks_unavailable"


@pytest.mark.parametrize(
    "body",
    [b"<html>not json</html>", b'{"no": "keys"}', b"[]", b"\xff\xfe", b'{"keys": "nope"}', b" " * 2_000_000],
    ids=["html", "no-keys-member", "json-array", "not-utf8", "keys-not-a-list", "too-big"],
)
def test_a_malformed_jwks_document_rejects_the_token(
    body: bytes, jwks_server: JwksServer, verifier: JwtVerifier, rsa_old: KeyPair, make_payload: PayloadFactory
) -> None:
    jwks_server.body = body
    assert rejection(verifier, rsa_old.sign(make_payload())) == "jwks_unavailable"


def test_a_slow_jwks_server_times_out_and_the_token_is_rejected(
    jwks_server: JwksServer, monotonic: FakeMonotonic, rsa_old: KeyPair, make_payload: PayloadFactory
) -> None:
    jwks_server.publish(rsa_old)
    verifier = jwks_verifier(jwks_server, monotonic, jwks_timeout_seconds=0.2)
    with jwks_server.hold():
        assert rejection(verifier, rsa_old.sign(make_payload())) == "jwks_unavailable"


def test_stale_keys_are_not_used_when_the_refetch_fails(
    jwks_server: JwksServer, monotonic: FakeMonotonic, rsa_old: KeyPair, make_payload: PayloadFactory
) -> None:
    jwks_server.publish(rsa_old)
    verifier = jwks_verifier(jwks_server, monotonic)
    token = rsa_old.sign(make_payload())
    verifier.verify(token)

    jwks_server.status = 500
    monotonic.advance(CACHE_SECONDS)
    assert rejection(verifier, token) == "jwks_unavailable"
    assert rejection(verifier, token) == "jwks_unavailable"
    assert jwks_server.requests == 2


@pytest.mark.anyio
async def test_verify_token_fetches_the_jwks_without_blocking_the_event_loop(
    jwks_server: JwksServer, monotonic: FakeMonotonic, rsa_old: KeyPair, make_payload: PayloadFactory
) -> None:
    jwks_server.publish(rsa_old)
    verifier = jwks_verifier(jwks_server, monotonic)
    results: list[object] = []

    async def verify() -> None:
        results.append(await verifier.verify_token(rsa_old.sign(make_payload())))

    async with anyio.create_task_group() as tasks:
        with jwks_server.hold():
            tasks.start_soon(verify)
            tasks.start_soon(verify)  # a second request while the fetch is in flight waits for it
            # The server is holding the fetch; this loop still runs, so the fetch is not on the event loop.
            assert await anyio.to_thread.run_sync(jwks_server.request_seen.wait, 5)
            assert results == []

    assert len(results) == 2
    assert all(result is not None for result in results)
    assert jwks_server.requests == 1


# --- configuration and parsing ------------------------------------------------------------------------------


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://auth.example/jwks", "https://", "jwks.json"])
def test_only_http_and_https_jwks_urls_are_accepted(url: str) -> None:
    with pytest.raises(ValueError, match="https:// URL with a host"):
        JwtSettings(jwks_url=url)


def test_jwks_timing_settings_must_be_sensible() -> None:
    with pytest.raises(ValueError, match="positive"):
        JwtSettings(jwks_url="https://auth.example/jwks", jwks_timeout_seconds=0)
    with pytest.raises(ValueError, match="positive"):
        JwtSettings(jwks_url="https://auth.example/jwks", jwks_cache_seconds=0)


def test_unusable_jwks_entries_are_skipped(rsa_old: KeyPair, ec_p256: KeyPair) -> None:
    document = {
        "keys": [
            rsa_old.jwk(),
            ec_p256.jwk(alg=None),
            rsa_key("no-kid").jwk(kid=None),
            rsa_key("enc").jwk(use="enc"),
            rsa_key("short", bits=1024).jwk(),
            ec_key("wrong-alg").jwk(alg="RS256"),
            rsa_key("hs").jwk(alg="HS256"),
            {"kty": "oct", "kid": "hmac", "k": "c2VjcmV0"},
            {"kty": "EC", "kid": "broken", "crv": "P-256"},
            "not an object",
        ]
    }
    keys = parse_jwks(json.dumps(document).encode())
    assert sorted(keys) == sorted([rsa_old.kid, ec_p256.kid])
    assert keys[rsa_old.kid][0].algorithm == "RS256"
    assert keys[ec_p256.kid][0].algorithm is None


def test_a_jwks_with_a_private_key_only_exposes_nothing(rsa_old: KeyPair) -> None:
    from jwt.algorithms import RSAAlgorithm

    private_jwk = RSAAlgorithm.to_jwk(rsa_old.private_key, as_dict=True) | {"kid": "private"}
    assert parse_jwks(json.dumps({"keys": [private_jwk]}).encode()) == {}

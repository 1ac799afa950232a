"""RS256/ES256 with static PEM public keys: accepted tokens, key rollover, and which configurations are refused."""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tenancy import AuthenticationFailed, JwtSettings, JwtVerifier, mint_token, read_public_keys
from tests.tenancy.conftest import TEST_SECRET
from tests.tenancy.signing import KeyPair, ec_key, rsa_key

PayloadFactory = Callable[..., dict[str, Any]]


def rejection(verifier: JwtVerifier, token: str) -> str:
    with pytest.raises(AuthenticationFailed) as info:
        verifier.verify(token)
    return info.value.reason


def self_signed_certificate_pem(key: KeyPair) -> str:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "auth.example")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.private_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key.private_key, hashes.SHA256())
    )
    return certificate.public_bytes(serialization.Encoding.PEM).decode()


# --- accepted tokens ----------------------------------------------------------------------------------------


def test_rs256_token_is_accepted_with_a_static_rsa_public_key(rsa_old: KeyPair, make_payload: PayloadFactory) -> None:
    verifier = JwtVerifier(JwtSettings(public_keys=(rsa_old.public_pem,), algorithms=("RS256",)))
    principal = verifier.verify(rsa_old.sign(make_payload()))
    assert (principal.subject, principal.tenant, principal.write_namespaces) == ("agent-7", "acme", ("user:42",))


def test_es256_token_is_accepted_with_a_static_ec_public_key(ec_p256: KeyPair, make_payload: PayloadFactory) -> None:
    verifier = JwtVerifier(JwtSettings(public_keys=(ec_p256.public_pem,), algorithms=("ES256",)))
    assert verifier.verify(ec_p256.sign(make_payload())).tenant == "acme"


def test_static_keys_ignore_the_kid_header(rsa_old: KeyPair, make_payload: PayloadFactory) -> None:
    verifier = JwtVerifier(JwtSettings(public_keys=(rsa_old.public_pem,)))
    assert verifier.verify(rsa_old.sign(make_payload(), kid=None)).tenant == "acme"
    assert verifier.verify(rsa_old.sign(make_payload(), kid="whatever")).tenant == "acme"


def test_ps256_token_is_accepted_when_ps256_is_allowed(rsa_old: KeyPair, make_payload: PayloadFactory) -> None:
    verifier = JwtVerifier(JwtSettings(public_keys=(rsa_old.public_pem,), algorithms=("PS256",)))
    assert verifier.verify(rsa_old.sign(make_payload(), algorithm="PS256")).tenant == "acme"


def test_public_key_from_an_x509_certificate_verifies_tokens(rsa_old: KeyPair, make_payload: PayloadFactory) -> None:
    verifier = JwtVerifier(JwtSettings(public_keys=read_public_keys(self_signed_certificate_pem(rsa_old))))
    assert verifier.verify(rsa_old.sign(make_payload())).tenant == "acme"


def test_verify_token_accepts_a_static_key_token(rsa_old: KeyPair, make_payload: PayloadFactory) -> None:
    verifier = JwtVerifier(JwtSettings(public_keys=(rsa_old.public_pem,)))
    access = asyncio.run(verifier.verify_token(rsa_old.sign(make_payload())))
    assert access is not None
    assert access.subject == "agent-7"


# --- key rollover -------------------------------------------------------------------------------------------


def test_during_a_rollover_tokens_signed_with_either_configured_key_are_valid(
    rsa_old: KeyPair, rsa_new: KeyPair, ec_p256: KeyPair, attacker_key: KeyPair, make_payload: PayloadFactory
) -> None:
    pems = read_public_keys(rsa_old.public_pem + rsa_new.public_pem + ec_p256.public_pem)
    verifier = JwtVerifier(JwtSettings(public_keys=pems))

    assert len(pems) == 3
    assert verifier.verify(rsa_old.sign(make_payload(sub="old-key"))).subject == "old-key"
    assert verifier.verify(rsa_new.sign(make_payload(sub="new-key"))).subject == "new-key"
    assert verifier.verify(ec_p256.sign(make_payload(sub="ec-key"))).subject == "ec-key"
    assert rejection(verifier, attacker_key.sign(make_payload())) == "bad_signature"


def test_after_the_rollover_the_removed_key_is_rejected(
    rsa_old: KeyPair, rsa_new: KeyPair, make_payload: PayloadFactory
) -> None:
    verifier = JwtVerifier(JwtSettings(public_keys=(rsa_new.public_pem,)))
    assert rejection(verifier, rsa_old.sign(make_payload())) == "bad_signature"
    assert verifier.verify(rsa_new.sign(make_payload())).tenant == "acme"


def test_claim_errors_are_reported_even_when_the_matching_key_is_not_the_first(
    rsa_old: KeyPair, rsa_new: KeyPair, make_payload: PayloadFactory, now: int
) -> None:
    verifier = JwtVerifier(JwtSettings(public_keys=(rsa_old.public_pem, rsa_new.public_pem)))
    assert rejection(verifier, rsa_new.sign(make_payload(exp=now - 3600, iat=now - 7200))) == "expired"


# --- the algorithm allow-list -------------------------------------------------------------------------------


def test_algorithms_default_to_rs256_and_es256_with_public_keys(rsa_old: KeyPair) -> None:
    assert JwtSettings(public_keys=(rsa_old.public_pem,)).algorithms == ("RS256", "ES256")
    assert JwtSettings(secret=TEST_SECRET).algorithms == ("HS256",)


def test_an_algorithm_outside_the_allow_list_is_rejected(rsa_old: KeyPair, make_payload: PayloadFactory) -> None:
    verifier = JwtVerifier(JwtSettings(public_keys=(rsa_old.public_pem,), algorithms=("RS256",)))
    assert rejection(verifier, rsa_old.sign(make_payload(), algorithm="RS512")) == "algorithm_not_allowed"
    assert rejection(verifier, ec_key("x").sign(make_payload())) == "algorithm_not_allowed"


def test_es256_token_is_rejected_when_only_an_rsa_key_is_configured(
    rsa_old: KeyPair, ec_p256: KeyPair, make_payload: PayloadFactory
) -> None:
    verifier = JwtVerifier(JwtSettings(public_keys=(rsa_old.public_pem,)))
    assert rejection(verifier, ec_p256.sign(make_payload())) == "no_matching_key"


def test_es256_token_is_rejected_when_the_ec_key_is_on_another_curve(make_payload: PayloadFactory) -> None:
    p384 = ec_key("p384", ec.SECP384R1(), "ES384")
    p256 = ec_key("p256")
    verifier = JwtVerifier(JwtSettings(public_keys=(p384.public_pem,), algorithms=("ES256", "ES384")))
    assert verifier.verify(p384.sign(make_payload())).tenant == "acme"
    assert rejection(verifier, p256.sign(make_payload())) == "no_matching_key"


@pytest.mark.parametrize("alg", ["HS256", "HS384", "HS512"])
def test_hmac_algorithms_are_refused_with_public_keys(alg: str, rsa_old: KeyPair) -> None:
    with pytest.raises(ValueError, match="algorithm confusion"):
        JwtSettings(public_keys=(rsa_old.public_pem,), algorithms=("RS256", alg))


def test_hmac_algorithms_are_refused_with_a_jwks_url() -> None:
    with pytest.raises(ValueError, match="algorithm confusion"):
        JwtSettings(jwks_url="https://auth.example/jwks.json", algorithms=("HS256",))


@pytest.mark.parametrize("alg", ["none", "None"])
def test_alg_none_is_refused_with_public_keys(alg: str, rsa_old: KeyPair) -> None:
    with pytest.raises(ValueError, match="'none' is not allowed"):
        JwtSettings(public_keys=(rsa_old.public_pem,), algorithms=("RS256", alg))


def test_unknown_algorithms_are_refused(rsa_old: KeyPair) -> None:
    with pytest.raises(ValueError, match="not supported"):
        JwtSettings(public_keys=(rsa_old.public_pem,), algorithms=("RS999",))


# --- refused configurations ---------------------------------------------------------------------------------


def test_exactly_one_key_source_must_be_configured(rsa_old: KeyPair) -> None:
    with pytest.raises(ValueError, match="exactly one JWT key source"):
        JwtSettings()
    with pytest.raises(ValueError, match=r"got: secret, public_keys"):
        JwtSettings(secret=TEST_SECRET, public_keys=(rsa_old.public_pem,))
    with pytest.raises(ValueError, match=r"got: public_keys, jwks_url"):
        JwtSettings(public_keys=(rsa_old.public_pem,), jwks_url="https://auth.example/jwks.json")


def test_a_private_key_is_refused_as_a_verification_key(rsa_old: KeyPair) -> None:
    with pytest.raises(ValueError, match="private key"):
        JwtSettings(public_keys=(rsa_old.private_pem,))
    with pytest.raises(ValueError, match="private key"):
        read_public_keys(rsa_old.private_pem)


def test_rsa_keys_shorter_than_2048_bits_are_refused() -> None:
    with pytest.raises(ValueError, match="at least 2048 bits"):
        JwtSettings(public_keys=(rsa_key("short", bits=1024).public_pem,))


def test_a_key_that_fits_none_of_the_allowed_algorithms_is_refused(ec_p256: KeyPair) -> None:
    with pytest.raises(ValueError, match=r"EC secp256r1\) fits none of the allowed algorithms RS256"):
        JwtSettings(public_keys=(ec_p256.public_pem,), algorithms=("RS256",))


def test_garbage_pem_is_refused() -> None:
    pem = "-----BEGIN PUBLIC KEY-----\nbm90IGEga2V5\n-----END PUBLIC KEY-----\n"
    with pytest.raises(ValueError, match="cannot be parsed"):
        JwtSettings(public_keys=(pem,))


def test_mint_token_explains_that_public_key_installs_have_no_secret_to_mint_with() -> None:
    with pytest.raises(ValueError, match="issued by the identity provider"):
        mint_token("", tenant="acme", subject="a", read=[], write=[])


# --- reading the configured PEM -----------------------------------------------------------------------------


def test_public_keys_are_read_from_a_pem_file(tmp_path: Path, rsa_old: KeyPair, rsa_new: KeyPair) -> None:
    path = tmp_path / "jwt-public.pem"
    path.write_text(rsa_old.public_pem + "\n" + rsa_new.public_pem, encoding="utf-8")
    assert read_public_keys(str(path)) == (rsa_old.public_pem.strip(), rsa_new.public_pem.strip())


def test_public_keys_are_read_from_pem_text_with_escaped_newlines(rsa_old: KeyPair) -> None:
    one_line = rsa_old.public_pem.strip().replace("\n", "\\n")
    assert read_public_keys(one_line) == (rsa_old.public_pem.strip(),)


@pytest.mark.parametrize("value", ["/nonexistent/jwt.pem", "not a pem at all"])
def test_a_value_that_is_neither_pem_nor_a_readable_file_is_refused(value: str) -> None:
    with pytest.raises(ValueError, match="neither PEM text nor a readable PEM file"):
        read_public_keys(value)


def test_a_file_without_pem_blocks_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "empty.pem"
    path.write_text("nothing here\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no PEM block"):
        read_public_keys(str(path))

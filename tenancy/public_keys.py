"""Asymmetric JWT keys: which algorithms exist, which key fits which algorithm, and reading PEM public keys.

Algorithm families are kept strictly apart (docs/DESIGN.md § "Isolation by construction"): HMAC algorithms only ever see
the shared secret, RSA and EC algorithms only ever see a parsed public key object of the matching type (and, for ECDSA,
the matching curve). So an `HS256` token can never be checked with an RSA public key used as an HMAC secret (algorithm
confusion)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TypeAlias, TypeGuard

from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

PublicKey: TypeAlias = rsa.RSAPublicKey | ec.EllipticCurvePublicKey

# RFC 7518 §3.2: an HMAC key must be at least as long as the hash output.
HMAC_MIN_KEY_BYTES = {"HS256": 32, "HS384": 48, "HS512": 64}
RSA_ALGORITHMS = frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"})
EC_ALGORITHM_CURVES: dict[str, type[ec.EllipticCurve]] = {
    "ES256": ec.SECP256R1,
    "ES384": ec.SECP384R1,
    "ES512": ec.SECP521R1,
}
ASYMMETRIC_ALGORITHMS = RSA_ALGORITHMS | frozenset(EC_ALGORITHM_CURVES)
DEFAULT_SECRET_ALGORITHMS = ("HS256",)
DEFAULT_PUBLIC_KEY_ALGORITHMS = ("RS256", "ES256")
MIN_RSA_KEY_BITS = 2048
MAX_PUBLIC_KEYS = 16

_PEM_BLOCK = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----.+?-----END \1-----", re.DOTALL)
_PUBLIC_BLOCKS = frozenset({"PUBLIC KEY", "RSA PUBLIC KEY", "CERTIFICATE"})


def key_fits_algorithm(key: object, alg: str) -> bool:
    """Whether `key` may verify an `alg` signature: an RSA key for RS*/PS*, an EC key on the right curve for ES*."""
    if alg in RSA_ALGORITHMS:
        return isinstance(key, rsa.RSAPublicKey)
    curve = EC_ALGORITHM_CURVES.get(alg)
    return curve is not None and isinstance(key, ec.EllipticCurvePublicKey) and isinstance(key.curve, curve)


def is_acceptable_public_key(key: object) -> TypeGuard[PublicKey]:
    """An RSA public key of at least 2048 bits or an EC public key on P-256, P-384 or P-521."""
    if isinstance(key, rsa.RSAPublicKey):
        return key.key_size >= MIN_RSA_KEY_BITS
    return isinstance(key, ec.EllipticCurvePublicKey) and any(
        isinstance(key.curve, curve) for curve in EC_ALGORITHM_CURVES.values()
    )


def describe_key(key: PublicKey) -> str:
    if isinstance(key, rsa.RSAPublicKey):
        return f"RSA-{key.key_size}"
    return f"EC {key.curve.name}"


def parse_public_key(pem: str) -> PublicKey:
    """Parse one PEM block (`PUBLIC KEY`, `RSA PUBLIC KEY` or an X.509 `CERTIFICATE`) into a public key object.

    Raises `ValueError` for anything else, including private keys (the gateway must never hold one), RSA keys
    shorter than 2048 bits and EC curves other than P-256/P-384/P-521.
    """
    match = _PEM_BLOCK.search(pem)
    if match is None:
        raise ValueError("not a PEM block (expected -----BEGIN PUBLIC KEY-----)")
    label = match.group(1)
    if "PRIVATE" in label:
        raise ValueError("a private key was configured; configure the public key (never the private key)")
    if label not in _PUBLIC_BLOCKS:
        raise ValueError(f"unsupported PEM block {label!r}; expected PUBLIC KEY or CERTIFICATE")
    data = match.group(0).encode("ascii", errors="strict")
    loaded: object
    try:
        if label == "CERTIFICATE":
            loaded = x509.load_pem_x509_certificate(data).public_key()
        else:
            loaded = serialization.load_pem_public_key(data)
    except (ValueError, UnsupportedAlgorithm):
        raise ValueError(f"the {label} PEM block cannot be parsed") from None
    if not is_acceptable_public_key(loaded):
        raise ValueError(
            f"unsupported public key: use RSA with at least {MIN_RSA_KEY_BITS} bits or EC P-256/P-384/P-521"
        )
    return loaded


def split_pem_blocks(text: str) -> tuple[str, ...]:
    """Every PEM block in `text`, in order (several keys may be concatenated for a key rollover)."""
    return tuple(match.group(0) for match in _PEM_BLOCK.finditer(text))


def read_public_keys(value: str) -> tuple[str, ...]:
    """The public key PEM blocks configured by `value`: PEM text itself, or the path of a file containing PEM.

    Several blocks (concatenated PEMs) configure several keys, all valid at once — for a key rollover. Literal
    `\\n` sequences (PEM squeezed into one environment variable line) are turned into newlines. Raises
    `ValueError` when no PEM block is found or a block is not a usable public key.
    """
    text = value.strip()
    if "-----BEGIN" not in text:
        path = Path(text).expanduser()
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"jwt public key: {value!r} is neither PEM text nor a readable PEM file ({exc})") from None
    if "\\n" in text and "\n" not in text.strip():
        text = text.replace("\\n", "\n")
    blocks = split_pem_blocks(text)
    if not blocks:
        raise ValueError("jwt public key: no PEM block (-----BEGIN PUBLIC KEY-----) found")
    for index, block in enumerate(blocks, start=1):
        try:
            parse_public_key(block)
        except ValueError as exc:
            raise ValueError(f"jwt public key #{index}: {exc}") from None
    return blocks

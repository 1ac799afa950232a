"""Test helpers: asymmetric key pairs made with `cryptography`, RS*/ES* token signing, JWKs, a JWKS HTTP server.

`mint_token` only issues HS256 tokens; production tokens come from an identity provider, which these helpers
play in the tests.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from tests.http_stub import QuietHandler

PrivateKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey


@dataclass(frozen=True)
class KeyPair:
    """A signing key as an identity provider holds it, with its `kid` and default algorithm."""

    kid: str
    private_key: PrivateKey
    algorithm: str

    @property
    def public_pem(self) -> str:
        return (
            self.private_key.public_key()
            .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
            .decode()
        )

    @property
    def private_pem(self) -> str:
        return self.private_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode()

    def jwk(self, **extra: Any) -> dict[str, Any]:
        """The public JWK of this key, with `kid`, `use: sig` and `alg` (override or drop with `alg=None`)."""
        public = self.private_key.public_key()
        if isinstance(public, rsa.RSAPublicKey):
            data: dict[str, Any] = RSAAlgorithm.to_jwk(public, as_dict=True)
        else:
            data = ECAlgorithm.to_jwk(public, as_dict=True)
        data |= {"kid": self.kid, "use": "sig", "alg": self.algorithm}
        data |= extra
        return {key: value for key, value in data.items() if value is not None}

    def sign(
        self,
        payload: dict[str, Any],
        *,
        algorithm: str | None = None,
        kid: str | None = "default",
        headers: dict[str, Any] | None = None,
    ) -> str:
        """A token signed with this key; `kid="default"` puts this key's kid in the header, None leaves it out."""
        header = ({} if kid is None else {"kid": self.kid if kid == "default" else kid}) | (headers or {})
        return jwt.encode(payload, self.private_key, algorithm=algorithm or self.algorithm, headers=header)


def rsa_key(kid: str, bits: int = 2048) -> KeyPair:
    return KeyPair(kid, rsa.generate_private_key(public_exponent=65537, key_size=bits), "RS256")


def ec_key(kid: str, curve: ec.EllipticCurve | None = None, algorithm: str = "ES256") -> KeyPair:
    return KeyPair(kid, ec.generate_private_key(curve or ec.SECP256R1()), algorithm)


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def hmac_token(payload: dict[str, Any], secret: bytes, *, alg: str = "HS256", kid: str | None = None) -> str:
    """An HS256 token signed by hand — PyJWT itself refuses to use a PEM public key as an HMAC secret."""
    header: dict[str, Any] = {"alg": alg, "typ": "JWT"} | ({"kid": kid} if kid else {})
    signing_input = ".".join(b64url(json.dumps(part, separators=(",", ":")).encode()) for part in (header, payload))
    signature = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{b64url(signature)}"


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients that hang up early (timeouts, size limits) are part of the tests


class JwksServer:
    """A real HTTP server on 127.0.0.1 serving a JWKS body the test can change, counting the requests.

    `hold()` makes requests wait (without sleeping) until released, to test timeouts and the event loop.
    """

    def __init__(self) -> None:
        self.body = b'{"keys": []}'
        self.status = 200
        self.requests = 0
        self.request_seen = threading.Event()
        self._release = threading.Event()
        self._release.set()
        self._count_lock = threading.Lock()
        server = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                with server._count_lock:
                    server.requests += 1
                server.request_seen.set()
                server._release.wait(10)
                self.answer(server.status, "application/json", server.body)

        self._httpd = _QuietServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/.well-known/jwks.json"

    def publish(self, *keys: KeyPair | dict[str, Any]) -> None:
        """Serve these keys (key pairs become their public JWK) from now on."""
        jwks = [key.jwk() if isinstance(key, KeyPair) else key for key in keys]
        self.body = json.dumps({"keys": jwks}).encode()

    @contextmanager
    def hold(self) -> Iterator[None]:
        """Requests received inside this block wait until the block exits."""
        self._release.clear()
        self.request_seen.clear()
        try:
            yield
        finally:
            self._release.set()

    def stop(self) -> None:
        self._release.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5)


class FakeMonotonic:
    """An injectable monotonic clock that only moves when told to (no sleeping in tests)."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds

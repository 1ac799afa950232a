"""JWT verification: `JwtVerifier` turns a bearer token into a `Principal` (or the MCP SDK's `AccessToken`).

It implements `mcp.server.auth.provider.TokenVerifier`, so it plugs into the SDK's bearer-auth middleware,
which answers 401 whenever `verify_token` returns None. Exactly one key source is configured:
- a shared secret: HMAC (HS256/HS384/HS512) — dev and simple installs;
- static PEM public key(s): RSA (RS*/PS*) or EC (ES256/ES384/ES512); several keys are all valid at once, for a
  key rollover;
- a JWKS URL: the identity provider's keys, cached by `kid`, refetched on an unknown `kid` at a bounded rate
  (`tenancy.jwks`).
The allow-list defaults to HS256 with a secret and RS256 + ES256 with public keys; HMAC algorithms are refused
with public keys (algorithm confusion), `none` always. The token's header `alg` must be in the allow-list and fit
the key's type before any verification is attempted. Oversized tokens are rejected before parsing. The token
itself is never logged or echoed.

`verify_token` answers None for a refused token, as the protocol wants; inside `recorded_rejections()` it also
records why (the `AuthenticationFailed`, whose message is safe to show the caller), so the HTTP layer can say
which of expired / bad signature / wrong audience / malformed ... in its 401.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import anyio.to_thread
import jwt
from mcp.server.auth.provider import AccessToken
from pydantic import ConfigDict

from tenancy.claims import ClaimNames, principal_from_payload
from tenancy.errors import AuthenticationFailed
from tenancy.jwks import MAX_KID_LENGTH, FetchRequired, JwksKeySource, check_jwks_url
from tenancy.principal import Principal
from tenancy.public_keys import (
    ASYMMETRIC_ALGORITHMS,
    DEFAULT_PUBLIC_KEY_ALGORITHMS,
    DEFAULT_SECRET_ALGORITHMS,
    HMAC_MIN_KEY_BYTES,
    MAX_PUBLIC_KEYS,
    PublicKey,
    describe_key,
    key_fits_algorithm,
    parse_public_key,
)

VERIFIED_CACHE_SECONDS = 60.0
VERIFIED_CACHE_SIZE = 10_000
BAD_SIGNATURE = "token signature is invalid (it was signed with another secret or key than this server's)"
logger = logging.getLogger(__name__)

_rejections: ContextVar[list[AuthenticationFailed] | None] = ContextVar("hindsight_token_rejections", default=None)


@contextmanager
def recorded_rejections() -> Iterator[list[AuthenticationFailed]]:
    """The list of the `AuthenticationFailed` of every token `JwtVerifier.verify_token` refuses in this block (in
    this task): the `TokenVerifier` protocol only lets it answer None, and the 401 should still say why."""
    found: list[AuthenticationFailed] = []
    reset = _rejections.set(found)
    try:
        yield found
    finally:
        _rejections.reset(reset)


@dataclass(frozen=True, slots=True)
class JwtSettings:
    """How bearer tokens are verified. `issuer`/`audience` are only checked when set (not None).

    Configure exactly one key source: `secret` (HMAC), `public_keys` (PEM blocks, one key each) or `jwks_url`.
    An empty `secret` means "no shared secret". Empty `algorithms` means the default for the key source:
    `("HS256",)` with a secret, `("RS256", "ES256")` with public keys or a JWKS URL. Invalid combinations raise
    `ValueError` on construction, so a misconfigured gateway fails at startup, not per request.
    """

    secret: str = field(default="", repr=False)
    algorithms: tuple[str, ...] = ()
    issuer: str | None = None
    audience: str | None = "hindsight"
    leeway_seconds: int = 30
    claim_names: ClaimNames = field(default_factory=ClaimNames)
    max_token_bytes: int = 8192
    public_keys: tuple[str, ...] = ()
    jwks_url: str | None = None
    jwks_cache_seconds: float = 300
    jwks_min_refresh_seconds: float = 30
    jwks_timeout_seconds: float = 5

    def __post_init__(self) -> None:
        sources = [name for name, on in self._sources() if on]
        if len(sources) != 1:
            raise ValueError(
                "configure exactly one JWT key source: a secret, public key(s) or a JWKS URL"
                + (f" (got: {', '.join(sources)})" if sources else "")
            )
        if not self.algorithms:
            default = DEFAULT_SECRET_ALGORITHMS if self.secret else DEFAULT_PUBLIC_KEY_ALGORITHMS
            object.__setattr__(self, "algorithms", default)
        if any(alg.lower() == "none" for alg in self.algorithms):
            raise ValueError("JWT algorithm 'none' is not allowed: tokens must be signed")
        if self.secret:
            self._check_secret()
        else:
            self._check_asymmetric()
        if self.leeway_seconds < 0:
            raise ValueError("JwtSettings.leeway_seconds must not be negative")
        if self.max_token_bytes <= 0:
            raise ValueError("JwtSettings.max_token_bytes must be positive")

    def _sources(self) -> list[tuple[str, bool]]:
        return [
            ("secret", bool(self.secret)),
            ("public_keys", bool(self.public_keys)),
            ("jwks_url", self.jwks_url is not None),
        ]

    def _check_secret(self) -> None:
        for alg in self.algorithms:
            if alg not in HMAC_MIN_KEY_BYTES:
                raise ValueError(
                    f"JWT algorithm {alg!r} is not allowed with a shared secret; "
                    f"use one of {', '.join(HMAC_MIN_KEY_BYTES)}"
                )
            if len(self.secret.encode()) < HMAC_MIN_KEY_BYTES[alg]:
                raise ValueError(f"the JWT secret must be at least {HMAC_MIN_KEY_BYTES[alg]} bytes for {alg}")

    def _check_asymmetric(self) -> None:
        for alg in self.algorithms:
            if alg in HMAC_MIN_KEY_BYTES:
                raise ValueError(
                    f"JWT algorithm {alg!r} is not allowed with public keys or a JWKS URL: an HMAC algorithm would "
                    "let a token use the public key as its secret (algorithm confusion)"
                )
            if alg not in ASYMMETRIC_ALGORITHMS:
                raise ValueError(
                    f"JWT algorithm {alg!r} is not supported; use one of {', '.join(sorted(ASYMMETRIC_ALGORITHMS))}"
                )
        if len(self.public_keys) > MAX_PUBLIC_KEYS:
            raise ValueError(f"at most {MAX_PUBLIC_KEYS} JWT public keys can be configured")
        for index, pem in enumerate(self.public_keys, start=1):
            try:
                key = parse_public_key(pem)
            except ValueError as exc:
                raise ValueError(f"JWT public key #{index}: {exc}") from None
            if not any(key_fits_algorithm(key, alg) for alg in self.algorithms):
                raise ValueError(
                    f"JWT public key #{index} ({describe_key(key)}) fits none of the allowed algorithms "
                    f"{', '.join(self.algorithms)}"
                )
        if self.jwks_url is not None:
            check_jwks_url(self.jwks_url)
            if self.jwks_cache_seconds <= 0 or self.jwks_timeout_seconds <= 0 or self.jwks_min_refresh_seconds < 0:
                raise ValueError(
                    "JWKS cache and timeout seconds must be positive, the minimum refresh interval not negative"
                )


class JwtVerifier:
    """Verifies bearer JWTs against `JwtSettings`; an `mcp` `TokenVerifier`.

    `clock` (monotonic seconds) drives only the JWKS cache and its refresh rate limit; token times (`exp`, `nbf`,
    `iat`) are checked against the wall clock.
    """

    def __init__(self, settings: JwtSettings, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._settings = settings
        self._verified: dict[bytes, tuple[AccessToken, float]] = {}
        self._static_keys: tuple[PublicKey, ...] = tuple(parse_public_key(pem) for pem in settings.public_keys)
        self._jwks = (
            JwksKeySource(
                settings.jwks_url,
                cache_seconds=settings.jwks_cache_seconds,
                min_refresh_seconds=settings.jwks_min_refresh_seconds,
                timeout_seconds=settings.jwks_timeout_seconds,
                clock=clock,
            )
            if settings.jwks_url is not None
            else None
        )

    @property
    def settings(self) -> JwtSettings:
        return self._settings

    def verify(self, token: str) -> Principal:
        """The principal a valid token describes; raises `AuthenticationFailed` (with a `reason`) otherwise.

        With a JWKS URL this may block for up to about `jwks_timeout_seconds` on a fetch; async code should use
        `verify_token`, which does the fetch in a worker thread.
        """
        principal, _ = self._verify(token, may_fetch=True)
        return principal

    async def verify_token(self, token: str) -> AccessToken | None:
        """`TokenVerifier` protocol: an `AccessToken` for a valid token, None (→ HTTP 401) for any other.

        A verified token is remembered for up to `VERIFIED_CACHE_SECONDS` (never past its `exp`), so an agent's
        stream of calls pays for signature checking once a minute, not on every request."""
        digest = hashlib.sha256(token.encode()).digest() if isinstance(token, str) else b""
        cached = self._verified.get(digest)
        now = time.time()
        if cached is not None:
            access, valid_until = cached
            if now < valid_until:
                return access
            del self._verified[digest]
        verified = await self._verify_token(token)
        if verified is not None:
            if len(self._verified) >= VERIFIED_CACHE_SIZE:
                self._verified.pop(next(iter(self._verified)))  # drop the oldest entry
            expires = verified.expires_at if verified.expires_at is not None else now + VERIFIED_CACHE_SECONDS
            self._verified[digest] = (verified, min(now + VERIFIED_CACHE_SECONDS, float(expires)))
        return verified

    async def _verify_token(self, token: str) -> AccessToken | None:
        try:
            try:
                principal, payload = self._verify(token, may_fetch=False)
            except FetchRequired:
                principal, payload = await anyio.to_thread.run_sync(
                    functools.partial(self._verify, token, may_fetch=True)
                )
        except AuthenticationFailed as exc:
            logger.info("bearer token rejected: %s", exc.reason)
            recording = _rejections.get()
            if recording is not None:
                recording.append(exc)
            return None
        issuer = payload.get("iss")
        return PrincipalAccessToken(
            token=token,
            client_id=principal.subject,
            scopes=sorted(principal.scopes),
            expires_at=principal.expires_at,
            subject=principal.subject,
            claims={"iss": issuer} if isinstance(issuer, str) else None,  # the SDK binds sessions to (client, iss, sub)
            principal=principal,
        )

    def _verify(self, token: str, *, may_fetch: bool) -> tuple[Principal, dict[str, Any]]:
        settings = self._settings
        if not isinstance(token, str) or not token:
            raise AuthenticationFailed("no bearer token was presented", reason="missing_token")
        if len(token) > settings.max_token_bytes or len(token.encode()) > settings.max_token_bytes:
            raise AuthenticationFailed(
                f"bearer token is larger than {settings.max_token_bytes} bytes", reason="token_too_large"
            )
        try:
            header = jwt.get_unverified_header(token)
        except jwt.InvalidTokenError:
            raise AuthenticationFailed("bearer token is not a well-formed JWT", reason="malformed") from None
        alg = header.get("alg")
        if not isinstance(alg, str) or alg.lower() == "none" or alg not in settings.algorithms:
            raise AuthenticationFailed(
                f"token algorithm is not allowed (allowed: {', '.join(settings.algorithms)})",
                reason="algorithm_not_allowed",
            )
        keys = self._keys_for(alg, header.get("kid"), may_fetch=may_fetch)
        payload = self._decode(token, alg, keys)
        return principal_from_payload(payload, settings.claim_names), payload

    def _keys_for(self, alg: str, kid: object, *, may_fetch: bool) -> Sequence[str | PublicKey]:
        """The configured keys that may verify an `alg` token with this header `kid`, never an empty list."""
        if self._settings.secret:
            return [self._settings.secret]  # alg is an allowed HS* algorithm (checked by JwtSettings)
        if self._jwks is not None:
            if not isinstance(kid, str) or not kid or len(kid) > MAX_KID_LENGTH:
                raise AuthenticationFailed("token has no usable 'kid' header (required with JWKS)", reason="no_kid")
            candidates = [
                entry.key
                for entry in self._jwks.keys_for(kid, may_fetch=may_fetch)
                if entry.algorithm in (None, alg) and key_fits_algorithm(entry.key, alg)
            ]
        else:
            candidates = [key for key in self._static_keys if key_fits_algorithm(key, alg)]
        if not candidates:
            raise AuthenticationFailed(f"no configured key can verify a {alg} token", reason="no_matching_key")
        return candidates

    def _decode(self, token: str, alg: str, keys: Sequence[str | PublicKey]) -> dict[str, Any]:
        """Decode with the first key whose signature matches (several keys are valid during a rollover)."""
        settings = self._settings
        required = ["exp", "sub"]
        if settings.issuer is not None:
            required.append("iss")
        if settings.audience is not None:
            required.append("aud")
        for key in keys:
            try:
                payload: dict[str, Any] = jwt.decode(
                    token,
                    key=key,
                    algorithms=[alg],
                    audience=settings.audience,
                    issuer=settings.issuer,
                    leeway=settings.leeway_seconds,
                    options={
                        "require": required,
                        "verify_aud": settings.audience is not None,
                        "verify_iss": settings.issuer is not None,
                        "enforce_minimum_key_length": True,
                    },
                )
            except jwt.InvalidSignatureError:
                continue  # try the next key; the signature is checked before any claim
            except jwt.InvalidTokenError as exc:
                raise _translate(exc) from None
            return payload
        raise AuthenticationFailed(BAD_SIGNATURE, reason="bad_signature")


# PyJWT's exceptions -> (our message, reason), the first that matches, in this order (InvalidSignatureError is a
# DecodeError). PyJWT's messages never contain the token, but we use our own.
_REASONS: tuple[tuple[type[jwt.PyJWTError], str, str], ...] = (
    (jwt.ExpiredSignatureError, "token has expired", "expired"),
    (jwt.ImmatureSignatureError, "token is not valid yet (nbf/iat in the future)", "not_yet_valid"),
    (jwt.InvalidAudienceError, "token was not issued for this audience (its 'aud' claim)", "wrong_audience"),
    (jwt.InvalidIssuerError, "token was not issued by the configured issuer (its 'iss' claim)", "wrong_issuer"),
    (jwt.InvalidSignatureError, BAD_SIGNATURE, "bad_signature"),
    (jwt.InvalidAlgorithmError, "token algorithm is not allowed", "algorithm_not_allowed"),
    (jwt.InvalidKeyError, "token cannot be verified with the configured key", "bad_key"),
    (jwt.DecodeError, "bearer token is not a well-formed JWT", "malformed"),
)


def _translate(exc: jwt.InvalidTokenError) -> AuthenticationFailed:
    """Map PyJWT's exceptions to our reasons (`_REASONS`; a missing claim is named)."""
    if isinstance(exc, jwt.MissingRequiredClaimError):
        return AuthenticationFailed(f"token has no {exc.claim!r} claim", reason="missing_claim")
    for kind, message, reason in _REASONS:
        if isinstance(exc, kind):
            return AuthenticationFailed(message, reason=reason)
    return AuthenticationFailed("token has invalid registered claims", reason="invalid_claims")


class PrincipalAccessToken(AccessToken):
    """The SDK's `AccessToken` of a verified JWT, carrying its `Principal` as it was verified: parsed once, then
    read by the auth gate, the rate-limit gate, the tool boundary and the debug views as the same typed value."""

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)

    principal: Principal


def principal_from_access_token(token: AccessToken) -> Principal:
    """The `Principal` that `JwtVerifier.verify_token` attached to `token`; any other access token is refused."""
    if not isinstance(token, PrincipalAccessToken):
        raise AuthenticationFailed("the access token carries no hindsight principal", reason="no_principal")
    return token.principal

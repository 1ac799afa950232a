"""JWT verification: `JwtVerifier` turns a bearer token into a `Principal` (or the MCP SDK's `AccessToken`).

It implements `mcp.server.auth.provider.TokenVerifier`, so it plugs into the SDK's bearer-auth middleware,
which answers 401 whenever `verify_token` returns None. Supported: HMAC (HS256/HS384/HS512) with a shared
secret, from an explicit algorithm allow-list; `none` is always rejected and the token's header `alg` must be
in the allow-list before any verification is attempted. The token itself is never logged or echoed.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import jwt
from mcp.server.auth.provider import AccessToken

from tenancy.claims import ClaimNames, principal_from_payload
from tenancy.errors import AuthenticationFailed
from tenancy.principal import Principal

logger = logging.getLogger(__name__)

PRINCIPAL_CLAIM = "hindsight_principal"
# RFC 7518 §3.2: an HMAC key must be at least as long as the hash output.
HMAC_MIN_KEY_BYTES = {"HS256": 32, "HS384": 48, "HS512": 64}


@dataclass(frozen=True, slots=True)
class JwtSettings:
    """How bearer tokens are verified. `issuer`/`audience` are only checked when set (not None)."""

    secret: str = field(repr=False)
    algorithms: tuple[str, ...] = ("HS256",)
    issuer: str | None = None
    audience: str | None = "hindsight"
    leeway_seconds: int = 30
    claim_names: ClaimNames = field(default_factory=ClaimNames)
    max_token_bytes: int = 8192

    def __post_init__(self) -> None:
        if not self.algorithms:
            raise ValueError("JwtSettings.algorithms must list at least one algorithm")
        for alg in self.algorithms:
            if alg not in HMAC_MIN_KEY_BYTES:
                raise ValueError(
                    f"JWT algorithm {alg!r} is not allowed with a shared secret; "
                    f"use one of {', '.join(HMAC_MIN_KEY_BYTES)}"
                )
            if len(self.secret.encode()) < HMAC_MIN_KEY_BYTES[alg]:
                raise ValueError(f"the JWT secret must be at least {HMAC_MIN_KEY_BYTES[alg]} bytes for {alg}")
        if self.leeway_seconds < 0:
            raise ValueError("JwtSettings.leeway_seconds must not be negative")
        if self.max_token_bytes <= 0:
            raise ValueError("JwtSettings.max_token_bytes must be positive")


class JwtVerifier:
    """Verifies bearer JWTs against `JwtSettings`; an `mcp` `TokenVerifier`."""

    def __init__(self, settings: JwtSettings) -> None:
        self._settings = settings

    @property
    def settings(self) -> JwtSettings:
        return self._settings

    def verify(self, token: str) -> Principal:
        """The principal a valid token describes; raises `AuthenticationFailed` (with a `reason`) otherwise."""
        principal, _ = self._verify(token)
        return principal

    async def verify_token(self, token: str) -> AccessToken | None:
        """`TokenVerifier` protocol: an `AccessToken` for a valid token, None (→ HTTP 401) for any other."""
        try:
            principal, payload = self._verify(token)
        except AuthenticationFailed as exc:
            logger.info("bearer token rejected: %s", exc.reason)
            return None
        claims: dict[str, Any] = {PRINCIPAL_CLAIM: principal.to_claims()}
        issuer = payload.get("iss")
        if isinstance(issuer, str):
            claims["iss"] = issuer  # the SDK binds sessions to (client_id, iss, sub)
        return AccessToken(
            token=token,
            client_id=principal.subject,
            scopes=sorted(principal.scopes),
            expires_at=principal.expires_at,
            subject=principal.subject,
            claims=claims,
        )

    def _verify(self, token: str) -> tuple[Principal, dict[str, Any]]:
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
        required = ["exp", "sub"]
        if settings.issuer is not None:
            required.append("iss")
        if settings.audience is not None:
            required.append("aud")
        try:
            payload = jwt.decode(
                token,
                key=settings.secret,
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
        except jwt.InvalidTokenError as exc:
            raise _translate(exc) from None
        return principal_from_payload(payload, settings.claim_names), payload


def _translate(exc: jwt.InvalidTokenError) -> AuthenticationFailed:
    """Map PyJWT's exceptions to our reasons. PyJWT's messages never contain the token, but we use our own."""
    if isinstance(exc, jwt.ExpiredSignatureError):
        return AuthenticationFailed("token has expired", reason="expired")
    if isinstance(exc, jwt.ImmatureSignatureError):
        return AuthenticationFailed("token is not valid yet (nbf/iat in the future)", reason="not_yet_valid")
    if isinstance(exc, jwt.InvalidAudienceError):
        return AuthenticationFailed("token was not issued for this audience", reason="wrong_audience")
    if isinstance(exc, jwt.InvalidIssuerError):
        return AuthenticationFailed("token was not issued by the configured issuer", reason="wrong_issuer")
    if isinstance(exc, jwt.MissingRequiredClaimError):
        return AuthenticationFailed(f"token has no {exc.claim!r} claim", reason="missing_claim")
    if isinstance(exc, jwt.InvalidSignatureError):
        return AuthenticationFailed("token signature is invalid", reason="bad_signature")
    if isinstance(exc, jwt.InvalidAlgorithmError):
        return AuthenticationFailed("token algorithm is not allowed", reason="algorithm_not_allowed")
    if isinstance(exc, jwt.InvalidKeyError):
        return AuthenticationFailed("token cannot be verified with the configured key", reason="bad_key")
    if isinstance(exc, jwt.DecodeError):
        return AuthenticationFailed("bearer token is not a well-formed JWT", reason="malformed")
    return AuthenticationFailed("token has invalid registered claims", reason="invalid_claims")


def principal_from_access_token(token: AccessToken) -> Principal:
    """The `Principal` that `JwtVerifier.verify_token` stored in `token.claims`."""
    carried = (token.claims or {}).get(PRINCIPAL_CLAIM)
    if not isinstance(carried, dict):
        raise AuthenticationFailed("the access token carries no hindsight principal", reason="no_principal")
    return Principal.from_claims(carried)

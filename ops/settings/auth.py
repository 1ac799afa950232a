"""`AuthSettings`: how bearer tokens are verified: the HS256 secret or the public keys (PEM, JWKS), the claims
read and the limits on a token."""

from __future__ import annotations

from pydantic import Field, SecretStr, field_validator

from ops.settings.base import SettingsGroup


class AuthSettings(SettingsGroup):
    """Tokens (`HINDSIGHT_JWT_*`)."""

    jwt_secret: SecretStr | None = None
    jwt_algorithms: list[str] = Field(default_factory=lambda: ["HS256"])
    jwt_issuer: str | None = None
    jwt_audience: str | None = "hindsight"
    jwt_leeway_seconds: int = Field(30, ge=0, le=600)
    jwt_tenant_claim: str = "tenant"
    jwt_namespaces_claim: str = "namespaces"
    jwt_scope_claim: str = "scope"
    jwt_max_token_bytes: int = Field(4096, ge=256, description="Larger bearer tokens are refused unparsed.")
    jwt_public_key: str | None = Field(
        None,
        description="PEM public key text, or the path of a PEM file, for RS*/ES* tokens. Several concatenated "
        "PEM blocks are all valid at once (key rollover). Excludes jwt_secret and jwt_jwks_url.",
    )
    jwt_jwks_url: str | None = Field(
        None, description="The identity provider's JWKS URL (https) for RS*/ES* tokens with a `kid` header."
    )
    jwt_jwks_cache_seconds: int = Field(300, ge=1, description="How long fetched JWKS keys are used.")
    jwt_jwks_min_refresh_seconds: float = Field(
        30, ge=0, description="At most one JWKS fetch per this many seconds (unknown `kid`s cannot force more)."
    )
    jwt_jwks_timeout_seconds: float = Field(5, gt=0, le=60, description="Timeout of a JWKS fetch.")

    @field_validator("jwt_algorithms")
    @classmethod
    def _no_none_algorithm(cls, value: list[str]) -> list[str]:
        if not value or any(alg.lower() == "none" for alg in value):
            raise ValueError("jwt_algorithms must list real algorithms; 'none' is never accepted")
        return value

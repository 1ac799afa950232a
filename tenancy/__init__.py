"""Tenancy: verified JWT bearer tokens → `Principal` → `NamespaceScope` (docs/DESIGN.md § "Isolation by construction").

This package owns authentication (JWT verification with a shared secret, static public keys or a JWKS URL; the dev
secret; token minting), the OAuth scopes (`memory:read`, `memory:write`, `memory:admin`) and the single
construction point of `NamespaceScope`.
"""

from tenancy.claims import ClaimNames, parse_scope_claim, principal_from_payload
from tenancy.errors import AuthenticationFailed, ScopeForbidden, TenancyError
from tenancy.jwks import JwksKeySource
from tenancy.jwt_verifier import (
    JwtSettings,
    JwtVerifier,
    PrincipalAccessToken,
    principal_from_access_token,
)
from tenancy.keys import load_or_create_dev_secret
from tenancy.minting import mint_token
from tenancy.principal import SCOPE_ADMIN, SCOPE_READ, SCOPE_WRITE, Principal
from tenancy.public_keys import read_public_keys
from tenancy.scopes import scope_for

__all__ = [
    "SCOPE_ADMIN",
    "SCOPE_READ",
    "SCOPE_WRITE",
    "AuthenticationFailed",
    "ClaimNames",
    "JwksKeySource",
    "JwtSettings",
    "JwtVerifier",
    "Principal",
    "PrincipalAccessToken",
    "ScopeForbidden",
    "TenancyError",
    "load_or_create_dev_secret",
    "mint_token",
    "parse_scope_claim",
    "principal_from_access_token",
    "principal_from_payload",
    "read_public_keys",
    "scope_for",
]

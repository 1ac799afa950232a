"""`mint_token`: issue HS256 bearer tokens in the claim format of docs/CONFIGURATION.md § "Identity providers" (dev
installs, tests, `hindsight` CLI).

Inputs are validated up front, so a minted token always passes `JwtVerifier` configured with the same
secret, issuer and audience.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterable, Sequence
from typing import Any

import jwt

from memory.errors import InvalidArgument
from memory.scope import MAX_SUBJECT_LENGTH, TENANT_PATTERN, validate_namespace
from tenancy.claims import MAX_NAMESPACES_PER_GRANT, ClaimNames
from tenancy.principal import SCOPE_ADMIN, SCOPE_READ, SCOPE_WRITE

MINT_ALGORITHM = "HS256"
_MIN_SECRET_BYTES = 32  # RFC 7518 §3.2 for HS256


def mint_token(
    secret: str,
    *,
    tenant: str,
    subject: str,
    read: Sequence[str],
    write: Sequence[str],
    admin: bool = False,
    ttl_seconds: int = 86400,
    issuer: str | None = None,
    audience: str | None = "hindsight",
    scopes: Iterable[str] | None = None,
    now: int | None = None,
    claim_names: ClaimNames | None = None,
) -> str:
    """A signed HS256 JWT for `subject` in `tenant` with the given read/write namespace grants.

    `scopes` defaults to `memory:read memory:write`; `admin=True` adds `memory:admin` (to the default or to
    the explicit scopes). `now` (Unix seconds) fixes `iat`; `exp` is `now + ttl_seconds`. Each token gets a
    random `jti`. Raises `ValueError` on any malformed input.
    """
    names = claim_names or ClaimNames()
    if secret == "":
        raise ValueError(
            "no shared JWT secret is configured (the gateway verifies tokens with public keys or a JWKS URL); "
            "tokens must be issued by the identity provider"
        )
    if not isinstance(secret, str) or len(secret.encode()) < _MIN_SECRET_BYTES:
        raise ValueError(f"secret must be a string of at least {_MIN_SECRET_BYTES} bytes for HS256")
    if not isinstance(tenant, str) or not TENANT_PATTERN.fullmatch(tenant):
        raise ValueError(f"tenant {tenant!r} must match {TENANT_PATTERN.pattern}")
    if (
        not isinstance(subject, str)
        or not subject.strip()
        or len(subject) > MAX_SUBJECT_LENGTH
        or not subject.isprintable()
    ):
        raise ValueError(f"subject must be a non-empty printable string of at most {MAX_SUBJECT_LENGTH} characters")
    if isinstance(ttl_seconds, bool) or not isinstance(ttl_seconds, int) or ttl_seconds <= 0:
        raise ValueError("ttl_seconds must be a positive integer")
    if now is not None and (isinstance(now, bool) or not isinstance(now, int) or now < 0):
        raise ValueError("now must be a non-negative integer Unix timestamp")

    granted = _scopes(scopes, admin)
    issued_at = int(time.time()) if now is None else now
    payload: dict[str, Any] = {
        "sub": subject,
        "iat": issued_at,
        "exp": issued_at + ttl_seconds,
        "jti": secrets.token_urlsafe(16),
        names.tenant: tenant,
        names.namespaces: {"read": _namespaces(read, "read"), "write": _namespaces(write, "write")},
        names.scope: " ".join(granted),
    }
    if issuer is not None:
        payload["iss"] = issuer
    if audience is not None:
        payload["aud"] = audience
    return jwt.encode(payload, secret, algorithm=MINT_ALGORITHM)


def _namespaces(values: Sequence[str], which: str) -> list[str]:
    if isinstance(values, str) or not isinstance(values, Sequence):
        raise ValueError(f"{which} must be a list of namespace names, not a single string")
    if len(values) > MAX_NAMESPACES_PER_GRANT:
        raise ValueError(f"{which} lists more than {MAX_NAMESPACES_PER_GRANT} namespaces")
    checked: list[str] = []
    for value in values:
        try:
            checked.append(validate_namespace(value))
        except InvalidArgument:
            raise ValueError(
                f"{which} namespace {value!r} is malformed: it must match [a-z0-9][a-z0-9:_.-]{{0,127}}"
            ) from None
    return list(dict.fromkeys(checked))


def _scopes(scopes: Iterable[str] | None, admin: bool) -> list[str]:
    if scopes is None:
        chosen = [SCOPE_READ, SCOPE_WRITE]
    elif isinstance(scopes, str):
        raise ValueError("scopes must be a list of scope strings, not a single string")
    else:
        chosen = list(scopes)
    for scope in chosen:
        if not isinstance(scope, str) or not scope or not scope.isprintable() or " " in scope:
            raise ValueError(f"scope {scope!r} must be a non-empty string without whitespace")
    if admin:
        chosen.append(SCOPE_ADMIN)
    return list(dict.fromkeys(chosen))

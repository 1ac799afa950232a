"""Strict validation of a decoded (signature-checked) JWT payload into a `Principal`.

The claim names are configurable (`ClaimNames`); the defaults follow docs/CONFIGURATION.md § "Identity providers":
`{"tenant": "acme", "namespaces": {"read": [...], "write": [...]}, "scope": "memory:read memory:write"}`.
Every violation raises `AuthenticationFailed` with a message that names the claim, never the token.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from memory.errors import InvalidArgument
from memory.scope import MAX_SUBJECT_LENGTH, TENANT_PATTERN, validate_namespace
from tenancy.errors import AuthenticationFailed
from tenancy.principal import Principal

MAX_NAMESPACES_PER_GRANT = 256
MAX_SCOPES = 64
MAX_SCOPE_LENGTH = 128
MAX_TOKEN_ID_LENGTH = 256
_GRANT_KEYS = ("read", "write")
SCOPE_TOKEN = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")  # RFC 6749 §3.3 scope-token


@dataclass(frozen=True, slots=True)
class ClaimNames:
    """Where in the JWT payload the tenancy claims live (e.g. a namespaced `https://acme/tenant`)."""

    tenant: str = "tenant"
    namespaces: str = "namespaces"
    scope: str = "scope"


def principal_from_payload(payload: Mapping[str, object], names: ClaimNames | None = None) -> Principal:
    """Validate a decoded JWT payload and build the `Principal` it describes.

    Required: `sub` (non-empty string, at most 256 characters, no control characters) and the tenant claim.
    Optional: the namespaces claim (missing = no grants), the scope claim (missing = no scopes), `exp`, `jti`.
    Write namespaces are *not* copied into the read grants here; `NamespaceScope` treats them as readable.
    """
    names = names or ClaimNames()
    if not isinstance(payload, Mapping):
        raise AuthenticationFailed("token payload is not a JSON object", reason="invalid_claims")
    read, write = _parse_namespaces(payload.get(names.namespaces), names.namespaces)
    return Principal(
        subject=_parse_subject(payload.get("sub")),
        tenant=_parse_tenant(payload.get(names.tenant), names.tenant),
        read_namespaces=read,
        write_namespaces=write,
        scopes=parse_scope_claim(payload.get(names.scope), names.scope),
        expires_at=_parse_exp(payload.get("exp")),
        token_id=_parse_token_id(payload.get("jti")),
    )


def parse_scope_claim(value: object, claim: str = "scope") -> frozenset[str]:
    """A scope string (RFC 6749 §3.3: scope-tokens separated by ASCII spaces) or a list of scope
    tokens; missing means no scopes. Each token must be `1*( %x21 / %x23-5B / %x5D-7E )`, so a token joined to
    another by any other whitespace ("memory:read\u00a0memory:admin") is malformed and the token refused,
    never read as two scopes; grants then compare each token exactly."""
    if value is None:
        return frozenset()
    if isinstance(value, str):
        items = [item for item in value.split(" ") if item]  # several spaces in a row are tolerated
    elif isinstance(value, list):
        if not all(isinstance(item, str) for item in value):
            raise _invalid(f"claim {claim!r} must contain scope strings")
        items = list(value)
    else:
        raise _invalid(f"claim {claim!r} must be a space-separated string or a list of strings")
    if len(items) > MAX_SCOPES:
        raise _invalid(f"claim {claim!r} lists more than {MAX_SCOPES} scopes")
    if any(len(item) > MAX_SCOPE_LENGTH or not SCOPE_TOKEN.fullmatch(item) for item in items):
        raise _invalid(
            f"claim {claim!r} contains a malformed scope (RFC 6749: printable ASCII except space, '\"' and '\\', "
            "separated by spaces)"
        )
    return frozenset(items)


def _parse_subject(value: object) -> str:
    if value is None:
        raise AuthenticationFailed("token has no 'sub' claim", reason="missing_claim")
    if not isinstance(value, str) or not value.strip():
        raise _invalid("claim 'sub' must be a non-empty string")
    if len(value) > MAX_SUBJECT_LENGTH:
        raise _invalid(f"claim 'sub' is longer than {MAX_SUBJECT_LENGTH} characters")
    if not value.isprintable():
        raise _invalid("claim 'sub' contains control characters")
    return value


def _parse_tenant(value: object, claim: str) -> str:
    if value is None:
        raise AuthenticationFailed(f"token has no {claim!r} claim", reason="missing_claim")
    if not isinstance(value, str) or not TENANT_PATTERN.fullmatch(value):
        raise _invalid(f"claim {claim!r} must be a tenant id matching {TENANT_PATTERN.pattern}")
    return value


def _parse_namespaces(value: object, claim: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    if value is None:
        return (), ()
    if not isinstance(value, Mapping):
        raise _invalid(f'claim {claim!r} must be an object {{"read": [...], "write": [...]}}')
    if any(key not in _GRANT_KEYS for key in value):
        raise _invalid(f"claim {claim!r} has unknown keys (expected only 'read' and 'write')")
    read = _parse_grant(value.get("read"), f"{claim}.read")
    write = _parse_grant(value.get("write"), f"{claim}.write")
    return read, write


def _parse_grant(value: object, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _invalid(f"claim {where!r} must be a list of namespace names")
    if len(value) > MAX_NAMESPACES_PER_GRANT:
        raise _invalid(f"claim {where!r} lists more than {MAX_NAMESPACES_PER_GRANT} namespaces")
    checked: list[str] = []
    for item in value:
        try:
            checked.append(validate_namespace(item))
        except InvalidArgument as exc:
            raise _invalid(f"claim {where!r} contains a malformed namespace: {exc.message}") from None
    return tuple(dict.fromkeys(checked))


def _parse_exp(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _invalid("claim 'exp' must be a number")
    return int(value)


def _parse_token_id(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value or len(value) > MAX_TOKEN_ID_LENGTH:
        raise _invalid(f"claim 'jti' must be a non-empty string of at most {MAX_TOKEN_ID_LENGTH} characters")
    return value


def _invalid(message: str) -> AuthenticationFailed:
    return AuthenticationFailed(message, reason="invalid_claims")

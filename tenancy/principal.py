"""`Principal`: the verified caller — who it is, which tenant, which namespaces and which OAuth scopes.

A principal is produced from a verified JWT (`tenancy.claims`) and travels through the MCP SDK inside
`AccessToken.claims` as the plain JSON dict from `Principal.to_claims()`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tenancy.errors import AuthenticationFailed, ScopeForbidden

SCOPE_READ = "memory:read"
SCOPE_WRITE = "memory:write"
SCOPE_ADMIN = "memory:admin"

_IMPLIED_BY_ADMIN = frozenset({SCOPE_READ, SCOPE_WRITE})


@dataclass(frozen=True, slots=True)
class Principal:
    """A verified caller. Write namespaces are listed as granted; `NamespaceScope` makes them readable too."""

    subject: str
    tenant: str
    read_namespaces: tuple[str, ...] = ()
    write_namespaces: tuple[str, ...] = ()
    scopes: frozenset[str] = frozenset()
    expires_at: int | None = None
    token_id: str | None = None

    @property
    def is_admin(self) -> bool:
        return SCOPE_ADMIN in self.scopes

    def has_scope(self, scope: str) -> bool:
        """Whether the token grants `scope`; `memory:admin` implies `memory:read` and `memory:write`."""
        return scope in self.scopes or (scope in _IMPLIED_BY_ADMIN and self.is_admin)

    def require_scope(self, scope: str) -> None:
        """Raise `ScopeForbidden` unless the token grants `scope`."""
        if not self.has_scope(scope):
            granted = " ".join(sorted(self.scopes)) or "(none)"
            raise ScopeForbidden(
                f"this operation requires the OAuth scope {scope!r}; the token grants: {granted}",
                required_scope=scope,
            )

    def to_claims(self) -> dict[str, Any]:
        """A plain JSON-serialisable dict; `Principal.from_claims` turns it back into an equal principal."""
        return {
            "subject": self.subject,
            "tenant": self.tenant,
            "read_namespaces": list(self.read_namespaces),
            "write_namespaces": list(self.write_namespaces),
            "scopes": sorted(self.scopes),
            "expires_at": self.expires_at,
            "token_id": self.token_id,
        }

    @classmethod
    def from_claims(cls, claims: Mapping[str, Any]) -> Principal:
        """Rebuild a principal from `to_claims()` output; anything malformed raises `AuthenticationFailed`.

        Failing closed: a malformed carrier dict means the request cannot be attributed to a caller.
        """
        try:
            return cls(
                subject=_str(claims["subject"]),
                tenant=_str(claims["tenant"]),
                read_namespaces=_str_tuple(claims["read_namespaces"]),
                write_namespaces=_str_tuple(claims["write_namespaces"]),
                scopes=frozenset(_str_tuple(claims["scopes"])),
                expires_at=_optional_int(claims.get("expires_at")),
                token_id=_optional_str(claims.get("token_id")),
            )
        except (KeyError, TypeError) as exc:
            raise AuthenticationFailed("the principal carried with the request is malformed") from exc


def _str(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError("expected a string")
    return value


def _optional_str(value: object) -> str | None:
    return None if value is None else _str(value)


def _optional_int(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("expected an integer")
    return value


def _str_tuple(value: object) -> tuple[str, ...]:
    if not isinstance(value, list | tuple):
        raise TypeError("expected a list of strings")
    return tuple(_str(item) for item in value)

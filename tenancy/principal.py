"""`Principal`: the verified caller — who it is, which tenant, which namespaces and which OAuth scopes.

A principal is produced from a verified JWT (`tenancy.claims`) and travels through the MCP SDK as itself, on the
access token (`tenancy.jwt_verifier.PrincipalAccessToken`).
"""

from __future__ import annotations

from dataclasses import dataclass

from tenancy.errors import ScopeForbidden

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

"""The scope a bench stage's agent writes and recalls under: one subject of one tenant, reading and writing the
same namespaces."""

from __future__ import annotations

from collections.abc import Sequence

from memory.scope import NamespaceScope
from tenancy import SCOPE_ADMIN, SCOPE_READ, SCOPE_WRITE, Principal, scope_for


def agent_scope(tenant: str, subject: str, namespaces: Sequence[str], *, admin: bool = False) -> NamespaceScope:
    """`subject` of `tenant` reading and writing `namespaces` (and administering the tenant with `admin`)."""
    scopes = {SCOPE_READ, SCOPE_WRITE, SCOPE_ADMIN} if admin else {SCOPE_READ, SCOPE_WRITE}
    principal = Principal(
        subject=subject,
        tenant=tenant,
        read_namespaces=tuple(namespaces),
        write_namespaces=tuple(namespaces),
        scopes=frozenset(scopes),
    )
    return scope_for(principal)

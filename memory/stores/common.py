"""Scope rules every vector store applies the same way, whatever its query language.

Each store turns a `NamespaceScope` into its own tenant + namespace filter; what it filters on, and what it
refuses, is decided here so the embedded and the server stores cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Sequence

from memory.errors import NamespaceForbidden
from memory.models import Memory
from memory.scope import NamespaceScope


def checked_namespaces(scope: NamespaceScope, namespaces: Sequence[str]) -> tuple[str, ...]:
    """The namespaces a query filters on, after checking each is readable. `()` means the whole tenant, which
    only admin scopes may ask for."""
    if namespaces:
        if not scope.readable_subset(namespaces):
            raise NamespaceForbidden("namespace outside the caller's grants")
        return tuple(namespaces)
    if not scope.admin:
        raise NamespaceForbidden("an unrestricted namespace query needs an admin scope")
    return ()


def visible_namespaces(scope: NamespaceScope) -> tuple[str, ...]:
    """Every namespace a lookup by id may find a memory in (`()`: the whole tenant, for admins)."""
    return () if scope.admin else scope.all_readable


def check_writable(scope: NamespaceScope, memory: Memory) -> None:
    """Refuse a memory that is not in a writable namespace of the scope's own tenant."""
    if memory.tenant != scope.tenant or not scope.can_write(memory.namespace):
        raise NamespaceForbidden("namespace not writable with this token")

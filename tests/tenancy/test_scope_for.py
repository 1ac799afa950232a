"""scope_for: the NamespaceScope a verified principal gets."""

from __future__ import annotations

import pytest

from memory.errors import NamespaceForbidden
from tenancy import SCOPE_ADMIN, SCOPE_READ, SCOPE_WRITE, Principal, scope_for


def test_scope_carries_tenant_and_grants() -> None:
    scope = scope_for(
        Principal(
            subject="agent-7",
            tenant="acme",
            read_namespaces=("shared:support",),
            write_namespaces=("user:42",),
            scopes=frozenset({SCOPE_READ, SCOPE_WRITE}),
        )
    )
    assert scope.tenant == "acme"
    assert scope.readable == ("shared:support",)
    assert scope.writable == ("user:42",)
    assert scope.admin is False
    assert scope.can_read("user:42")  # write grants are readable (NamespaceScope's rule)
    assert not scope.can_write("shared:support")
    assert not scope.can_read("user:43")


def test_admin_scope_grants_every_namespace_of_the_tenant() -> None:
    scope = scope_for(Principal(subject="ops", tenant="acme", scopes=frozenset({SCOPE_ADMIN})))
    assert scope.admin is True
    assert scope.can_read("anything")
    assert scope.can_write("anything")
    assert scope.read_targets(None) == ()


def test_read_and_write_scopes_without_admin_are_not_admin() -> None:
    scope = scope_for(Principal(subject="a", tenant="acme", scopes=frozenset({SCOPE_READ, SCOPE_WRITE})))
    assert scope.admin is False


def test_principal_without_namespace_grants_cannot_read() -> None:
    scope = scope_for(Principal(subject="a", tenant="acme", scopes=frozenset({SCOPE_READ})))
    with pytest.raises(NamespaceForbidden):
        scope.read_targets(None)

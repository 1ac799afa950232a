"""Principal: OAuth scope checks and the JSON round-trip through AccessToken.claims."""

from __future__ import annotations

import pytest

from tenancy import SCOPE_ADMIN, SCOPE_READ, SCOPE_WRITE, Principal, ScopeForbidden


def principal(*scopes: str) -> Principal:
    return Principal(subject="agent-7", tenant="acme", scopes=frozenset(scopes))


def test_admin_implies_read_and_write() -> None:
    admin = principal(SCOPE_ADMIN)
    assert admin.has_scope(SCOPE_READ)
    assert admin.has_scope(SCOPE_WRITE)
    assert admin.has_scope(SCOPE_ADMIN)
    assert not admin.has_scope("billing:read")


def test_read_does_not_imply_write_or_admin() -> None:
    reader = principal(SCOPE_READ)
    assert reader.has_scope(SCOPE_READ)
    assert not reader.has_scope(SCOPE_WRITE)
    assert not reader.has_scope(SCOPE_ADMIN)


def test_write_does_not_imply_read() -> None:
    assert not principal(SCOPE_WRITE).has_scope(SCOPE_READ)


def test_require_scope_passes_when_granted() -> None:
    principal(SCOPE_READ, SCOPE_WRITE).require_scope(SCOPE_WRITE)
    principal(SCOPE_ADMIN).require_scope(SCOPE_WRITE)


def test_require_scope_raises_scope_forbidden_naming_the_missing_scope() -> None:
    with pytest.raises(ScopeForbidden) as info:
        principal(SCOPE_READ).require_scope(SCOPE_WRITE)
    assert info.value.code == "scope_forbidden"
    assert info.value.required_scope == SCOPE_WRITE
    assert "memory:write" in info.value.message
    assert "memory:read" in info.value.message

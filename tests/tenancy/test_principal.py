"""Principal: OAuth scope checks and the JSON round-trip through AccessToken.claims."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tenancy import SCOPE_ADMIN, SCOPE_READ, SCOPE_WRITE, AuthenticationFailed, Principal, ScopeForbidden


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


def test_claims_round_trip_through_json() -> None:
    original = Principal(
        subject="agent-7",
        tenant="acme",
        read_namespaces=("user:42", "shared:support"),
        write_namespaces=("user:42",),
        scopes=frozenset({SCOPE_READ, SCOPE_WRITE}),
        expires_at=1767225600,
        token_id="jti-1",
    )
    assert Principal.from_claims(json.loads(json.dumps(original.to_claims()))) == original


@given(
    subject=st.text(min_size=1, max_size=20),
    tenant=st.text(min_size=1, max_size=20),
    read=st.lists(st.text(max_size=10), max_size=5).map(tuple),
    write=st.lists(st.text(max_size=10), max_size=5).map(tuple),
    scopes=st.frozensets(st.text(min_size=1, max_size=15), max_size=5),
    expires_at=st.none() | st.integers(min_value=0, max_value=2**40),
    token_id=st.none() | st.text(min_size=1, max_size=20),
)
def test_any_principal_round_trips_through_its_claims(
    subject: str,
    tenant: str,
    read: tuple[str, ...],
    write: tuple[str, ...],
    scopes: frozenset[str],
    expires_at: int | None,
    token_id: str | None,
) -> None:
    original = Principal(subject, tenant, read, write, scopes, expires_at, token_id)
    assert Principal.from_claims(json.loads(json.dumps(original.to_claims()))) == original


@pytest.mark.parametrize(
    "claims",
    [
        {},
        {"subject": "a", "tenant": "t", "read_namespaces": "x", "write_namespaces": [], "scopes": []},
        {"subject": "a", "tenant": 1, "read_namespaces": [], "write_namespaces": [], "scopes": []},
        {
            "subject": "a",
            "tenant": "t",
            "read_namespaces": [],
            "write_namespaces": [],
            "scopes": [],
            "expires_at": "soon",
        },
    ],
)
def test_malformed_carried_claims_fail_closed(claims: dict[str, object]) -> None:
    with pytest.raises(AuthenticationFailed):
        Principal.from_claims(claims)

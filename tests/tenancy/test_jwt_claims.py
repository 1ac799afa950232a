"""principal_from_payload: strict validation of the tenancy claims of a decoded JWT payload."""

from __future__ import annotations

from typing import Any

import pytest

from tenancy import (
    SCOPE_ADMIN,
    SCOPE_READ,
    SCOPE_WRITE,
    AuthenticationFailed,
    ClaimNames,
    parse_scope_claim,
    principal_from_payload,
)
from tests.tenancy.conftest import overridden


def payload(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "sub": "agent-7",
        "exp": 1767225600,
        "tenant": "acme",
        "namespaces": {"read": ["user:42"], "write": ["user:42"]},
        "scope": "memory:read memory:write",
    }
    return overridden(base, overrides)


def refused(data: dict[str, Any]) -> AuthenticationFailed:
    with pytest.raises(AuthenticationFailed) as info:
        principal_from_payload(data, ClaimNames())
    return info.value


def test_design_example_payload_is_accepted() -> None:
    principal = principal_from_payload(
        {
            "iss": "https://auth.example",
            "aud": "hindsight",
            "sub": "agent-7",
            "exp": 1767225600,
            "tenant": "acme",
            "namespaces": {"read": ["user:42", "shared:support"], "write": ["user:42"]},
            "scope": "memory:read memory:write",
        },
        ClaimNames(),
    )
    assert principal.read_namespaces == ("user:42", "shared:support")
    assert principal.write_namespaces == ("user:42",)
    assert principal.expires_at == 1767225600
    assert principal.token_id is None


def test_write_namespaces_are_not_copied_into_read_grants() -> None:
    principal = principal_from_payload(payload(namespaces={"write": ["user:42"]}))
    assert principal.read_namespaces == ()
    assert principal.write_namespaces == ("user:42",)


def test_duplicate_namespaces_are_collapsed_in_order() -> None:
    principal = principal_from_payload(payload(namespaces={"read": ["b", "a", "b"]}))
    assert principal.read_namespaces == ("b", "a")


def test_missing_namespaces_claim_grants_nothing() -> None:
    principal = principal_from_payload(payload(namespaces=...))
    assert (principal.read_namespaces, principal.write_namespaces) == ((), ())


@pytest.mark.parametrize(
    "namespaces",
    [
        ["user:42"],
        "user:42",
        {"read": "user:42"},
        {"read": [42]},
        {"read": ["User:42"]},
        {"read": ["has space"]},
        {"write": [""]},
        {"write": ["x" * 129]},
        {"read": ["ok"], "admin": ["ok"]},
        {"read": [f"ns{i}" for i in range(257)]},
    ],
    ids=[
        "list",
        "string",
        "read-not-a-list",
        "non-string",
        "uppercase",
        "space",
        "empty",
        "too-long",
        "unknown-key",
        "too-many",
    ],
)
def test_malformed_namespaces_claim_is_rejected(namespaces: object) -> None:
    error = refused(payload(namespaces=namespaces))
    assert error.reason == "invalid_claims"
    assert "namespaces" in error.message


def test_missing_tenant_claim_is_rejected() -> None:
    assert refused(payload(tenant=...)).reason == "missing_claim"


@pytest.mark.parametrize("tenant", ["", "-acme", "ac me", 42, ["acme"], "a" * 129])
def test_malformed_tenant_claim_is_rejected(tenant: object) -> None:
    assert refused(payload(tenant=tenant)).reason == "invalid_claims"


@pytest.mark.parametrize("sub", ["", "   ", 7, "a" * 257, "agent\n7"])
def test_malformed_subject_is_rejected(sub: object) -> None:
    assert refused(payload(sub=sub)).reason == "invalid_claims"


def test_subject_of_256_characters_is_accepted() -> None:
    assert principal_from_payload(payload(sub="a" * 256)).subject == "a" * 256


def test_scope_string_is_split_on_spaces() -> None:
    assert parse_scope_claim("memory:read  memory:write openid") == frozenset({SCOPE_READ, SCOPE_WRITE, "openid"})


def test_scope_list_is_accepted() -> None:
    assert parse_scope_claim([SCOPE_ADMIN]) == frozenset({SCOPE_ADMIN})


def test_missing_or_empty_scope_grants_no_scopes() -> None:
    assert parse_scope_claim(None) == frozenset()
    assert parse_scope_claim("") == frozenset()
    assert principal_from_payload(payload(scope=...)).scopes == frozenset()


@pytest.mark.parametrize("scope", [42, {"memory:read": True}, ["memory:read", 1], ["memory:read write"], [""]])
def test_malformed_scope_claim_is_rejected(scope: object) -> None:
    assert refused(payload(scope=scope)).reason == "invalid_claims"


def test_custom_scope_claim_name_is_used() -> None:
    data = payload(scope=..., scp="memory:read")
    assert principal_from_payload(data, ClaimNames(scope="scp")).scopes == frozenset({SCOPE_READ})


def test_rejection_messages_do_not_echo_claim_values() -> None:
    secret_looking = "eyJhbGciOiJIUzI1NiJ9-SECRET"
    for data in (payload(tenant=secret_looking + " "), payload(namespaces={"read": [secret_looking]})):
        assert secret_looking not in refused(data).message


@pytest.mark.parametrize("jti", ["", 5, "j" * 257])
def test_malformed_token_id_is_rejected(jti: object) -> None:
    assert refused(payload(jti=jti)).reason == "invalid_claims"

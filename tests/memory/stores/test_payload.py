"""The payload layout (`memory.stores.payload`): compact (no null, no empty list or object stored), and read
tolerantly (a field left out, or the null an earlier version stored, reads as None or empty)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from memory.clock import to_timestamp
from memory.models import Memory, MemoryKind, Source
from memory.stores.payload import UndecodablePayload, from_payload, status_of, to_payload
from tests.memory.conftest import START, make_memory

BARE = make_memory("The user likes tea", tenant="acme")
# every field set, each to a value no other field of its type has (decoding builds a `Memory` by position)
FULL = make_memory(
    "The user likes green tea",
    tenant="acme",
    kind=MemoryKind.SEMANTIC,
    importance=0.7,
    updated_at=START + timedelta(minutes=30),
    last_accessed_at=START + timedelta(hours=1),
    access_count=3,
    expires_at=START + timedelta(days=30),
    deleted_at=START + timedelta(days=2),
    delete_reason="asked to forget",
    supersedes=["019b0000-0000-7000-8000-000000000001"],
    superseded_by="019b0000-0000-7000-8000-000000000002",
    origin_id="019b0000-0000-7000-8000-000000000003",
    session_id="s-1",
    source=Source(subject="agent-1", request_id="r-1", tool="remember"),
    tags=["drinks", "home"],
    metadata={"speaker": "Ana", "nested": {"empty": None}},
    attributes=["user|pref:tea"],
    follows="019b0000-0000-7000-8000-000000000004",
    archived_at=START + timedelta(days=3),
    archive_reason="idle",
    stored_at=START + timedelta(minutes=5),
)


def earlier_layout(memory: Memory) -> dict[str, Any]:
    """The payload as versions before issue #33 stored it: every field, null or empty when unset."""
    return {
        "tenant": memory.tenant,
        "namespace": memory.namespace,
        "kind": memory.kind.value,
        "content": memory.content,
        "importance": memory.importance,
        "created_at": to_timestamp(memory.created_at),
        "updated_at": to_timestamp(memory.updated_at),
        "last_accessed_at": to_timestamp(memory.last_accessed_at),
        "access_count": memory.access_count,
        "expires_at": to_timestamp(memory.expires_at),
        "deleted_at": to_timestamp(memory.deleted_at),
        "delete_reason": memory.delete_reason,
        "supersedes": list(memory.supersedes),
        "superseded_by": memory.superseded_by,
        "origin_id": memory.origin_id,
        "session_id": memory.session_id,
        "source": {
            "subject": memory.source.subject,
            "request_id": memory.source.request_id,
            "tool": memory.source.tool,
        },
        "tags": list(memory.tags),
        "metadata": memory.metadata,
        "embedding_model": memory.embedding_model,
        "content_hash": memory.content_hash,
        "status": status_of(memory),
        "attributes": list(memory.attributes),
        "follows": memory.follows,
        "archived_at": to_timestamp(memory.archived_at),
        "archive_reason": memory.archive_reason,
        "stored_at": to_timestamp(memory.stored_at),
    }


def test_a_payload_stores_no_null_and_no_empty_list_or_object() -> None:
    payload = to_payload(BARE)

    def values(value: Any) -> list[Any]:
        return [value, *(v for item in value.values() for v in values(item))] if isinstance(value, dict) else [value]

    assert all(v is not None and v != [] and v != {} for item in payload.values() for v in values(item))
    assert payload["source"] == {"subject": "agent-1"}
    assert {"deleted_at", "tags", "metadata", "supersedes", "follows", "stored_at"}.isdisjoint(payload)
    assert len(str(payload)) < 0.75 * len(str(earlier_layout(BARE)))


@pytest.mark.parametrize("memory", [BARE, FULL], ids=["bare", "full"])
def test_a_memory_reads_back_whole_from_its_payload_and_from_the_payload_an_earlier_version_stored(
    memory: Memory,
) -> None:
    assert from_payload(memory.id, to_payload(memory)) == memory
    assert from_payload(memory.id, earlier_layout(memory)) == memory


def test_a_full_payload_keeps_nulls_inside_metadata_as_given() -> None:
    assert to_payload(FULL)["metadata"] == {"speaker": "Ana", "nested": {"empty": None}}


@pytest.mark.parametrize("field", ["tenant", "namespace", "kind", "content", "importance", "created_at", "updated_at"])
def test_a_payload_without_a_field_every_memory_has_is_undecodable(field: str) -> None:
    payload = to_payload(BARE)
    del payload[field]

    with pytest.raises(UndecodablePayload, match=field):
        from_payload(BARE.id, payload)


@pytest.mark.parametrize("field", ["tenant", "namespace", "content"])
@pytest.mark.parametrize("value", [7, ["text"], {"text": "x"}], ids=["number", "list", "object"])
def test_a_payload_whose_tenant_namespace_or_content_is_not_a_string_is_undecodable(field: str, value: Any) -> None:
    with pytest.raises(UndecodablePayload, match=f"{field} is not a string"):
        from_payload(BARE.id, {**to_payload(BARE), field: value})


def test_an_importance_stored_as_an_integer_reads_as_that_number_and_one_not_finite_or_true_is_undecodable() -> None:
    decoded = from_payload(BARE.id, {**to_payload(BARE), "importance": 1})

    assert decoded.importance == 1.0
    assert type(decoded.importance) is float
    for value in (float("nan"), float("inf"), True, "high"):
        with pytest.raises(UndecodablePayload):
            from_payload(BARE.id, {**to_payload(BARE), "importance": value})


def test_a_memory_created_and_updated_at_the_same_moment_reads_both_as_it() -> None:
    payload = to_payload(BARE)
    decoded = from_payload(BARE.id, payload)

    assert payload["updated_at"] == payload["created_at"]
    assert decoded.created_at == decoded.updated_at == BARE.created_at


@pytest.mark.parametrize("updated_at", [None, "later", float("nan")], ids=["null", "a word", "nan"])
def test_a_payload_whose_updated_at_is_not_a_time_is_undecodable_even_when_created_at_is(updated_at: Any) -> None:
    with pytest.raises(UndecodablePayload):
        from_payload(BARE.id, {**to_payload(BARE), "updated_at": updated_at})

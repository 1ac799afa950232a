"""How a `Memory` is laid out as a Qdrant payload, shared by every Qdrant-backed store.

Timestamps are stored as Unix seconds (floats) so range filters are cheap; `status` is a keyword derived from
`deleted_at` and `superseded_by` ("active", "deleted", "superseded") so the hot recall filter is one keyword match.
"""

from __future__ import annotations

from typing import Any

from memory.clock import from_timestamp, to_timestamp
from memory.models import Memory, MemoryKind, Source

STATUS_ACTIVE = "active"
STATUS_DELETED = "deleted"
STATUS_SUPERSEDED = "superseded"

# Payload fields that get an index; the tenant index is the multi-tenant partition key.
KEYWORD_FIELDS = ("namespace", "status", "kind", "tags", "session_id", "content_hash", "origin_id", "attributes")
FLOAT_FIELDS = ("created_at", "expires_at")
TENANT_FIELD = "tenant"


def recallable_statuses(include_superseded: bool) -> list[str]:
    """The statuses a recall may return: live memories, and superseded ones when asked for."""
    return [STATUS_ACTIVE, STATUS_SUPERSEDED] if include_superseded else [STATUS_ACTIVE]


def status_of(memory: Memory) -> str:
    if memory.deleted_at is not None:
        return STATUS_DELETED
    if memory.superseded_by is not None:
        return STATUS_SUPERSEDED
    return STATUS_ACTIVE


def to_payload(memory: Memory) -> dict[str, Any]:
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
    }


def _required_time(payload: dict[str, Any], key: str) -> Any:
    value = from_timestamp(payload[key])
    if value is None:
        raise ValueError(f"stored memory lacks {key}")
    return value


def from_payload(memory_id: object, payload: dict[str, Any]) -> Memory:
    source = payload.get("source") or {}
    return Memory(
        id=str(memory_id),
        tenant=payload["tenant"],
        namespace=payload["namespace"],
        kind=MemoryKind(payload["kind"]),
        content=payload["content"],
        importance=float(payload["importance"]),
        created_at=_required_time(payload, "created_at"),
        updated_at=_required_time(payload, "updated_at"),
        last_accessed_at=from_timestamp(payload.get("last_accessed_at")),
        access_count=int(payload.get("access_count") or 0),
        expires_at=from_timestamp(payload.get("expires_at")),
        deleted_at=from_timestamp(payload.get("deleted_at")),
        delete_reason=payload.get("delete_reason"),
        supersedes=list(payload.get("supersedes") or []),
        superseded_by=payload.get("superseded_by"),
        origin_id=payload.get("origin_id"),
        session_id=payload.get("session_id"),
        source=Source(
            subject=str(source.get("subject", "")),
            request_id=source.get("request_id"),
            tool=source.get("tool"),
        ),
        tags=list(payload.get("tags") or []),
        metadata=dict(payload.get("metadata") or {}),
        embedding_model=str(payload.get("embedding_model", "")),
        content_hash=str(payload.get("content_hash", "")),
        attributes=list(payload.get("attributes") or []),
        follows=payload.get("follows"),
    )

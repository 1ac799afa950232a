"""How a `Memory` is laid out as a Qdrant payload, shared by every Qdrant-backed store.

Timestamps are stored as Unix seconds (floats) so range filters are cheap; `status` is a keyword derived from
`deleted_at` and `superseded_by` ("active", "deleted", "superseded") so the hot recall filter is one keyword match.
Decoding checks every field it reads: a payload it cannot use (an older version's, or corrupt) is reported and
skipped by `decode`, never fatal to the read that met it.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from memory.clock import to_timestamp
from memory.models import Memory, MemoryKind, Source

logger = logging.getLogger("hindsight.store")

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


class UndecodablePayload(ValueError):
    """A stored payload that does not describe a `Memory` this version can use (written by an older version, or
    corrupt: a missing field, a wrong type, a time outside what `datetime` holds)."""


# Stored times must decode with a year to spare on either side of what `datetime` holds, so the engine's date
# arithmetic (days to months) never overflows. New writes are bounded far tighter (`memory.values`).
_EARLIEST_TIMESTAMP = datetime(2, 1, 1, tzinfo=UTC).timestamp()
_LATEST_TIMESTAMP = datetime(9998, 12, 31, tzinfo=UTC).timestamp()
_skipped = 0


def _time(payload: dict[str, Any], key: str) -> datetime | None:
    value = payload.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UndecodablePayload(f"{key} is a {type(value).__name__}, not a timestamp")
    if not _EARLIEST_TIMESTAMP <= value <= _LATEST_TIMESTAMP:  # also false for NaN
        raise UndecodablePayload(f"{key} {value!r} is outside the years datetime holds")
    return datetime.fromtimestamp(value, UTC)


def _required_time(payload: dict[str, Any], key: str) -> datetime:
    value = _time(payload, key)
    if value is None:
        raise UndecodablePayload(f"stored memory lacks {key}")
    return value


def _text(payload: Mapping[str, Any], key: str) -> str:
    value = payload.get(key)
    if not isinstance(value, str):
        raise UndecodablePayload(f"{key} is {'missing' if value is None else type(value).__name__}, not a string")
    return value


def _optional_text(payload: Mapping[str, Any], key: str) -> str | None:
    value = payload.get(key)
    return None if value is None else _text(payload, key)


def _texts(payload: dict[str, Any], key: str) -> list[str]:
    value = payload.get(key) or []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise UndecodablePayload(f"{key} is not a list of strings")
    return list(value)


def from_payload(memory_id: object, payload: dict[str, Any]) -> Memory:
    """The `Memory` a payload describes; `UndecodablePayload` when it describes none this version can use."""
    try:
        kind = MemoryKind(_text(payload, "kind"))
    except ValueError:
        raise UndecodablePayload(f"kind {payload.get('kind')!r} is not a memory kind") from None
    importance = payload.get("importance")
    if isinstance(importance, bool) or not isinstance(importance, int | float) or not math.isfinite(importance):
        raise UndecodablePayload(f"importance {importance!r} is not a finite number")
    access_count = payload.get("access_count") or 0
    if isinstance(access_count, bool) or not isinstance(access_count, int):
        raise UndecodablePayload(f"access_count {access_count!r} is not a whole number")
    source = payload.get("source") or {}
    metadata = payload.get("metadata") or {}
    if not isinstance(source, dict) or not isinstance(metadata, dict):
        raise UndecodablePayload("source and metadata must be objects")
    return Memory(
        id=str(memory_id),
        tenant=_text(payload, "tenant"),
        namespace=_text(payload, "namespace"),
        kind=kind,
        content=_text(payload, "content"),
        importance=float(importance),
        created_at=_required_time(payload, "created_at"),
        updated_at=_required_time(payload, "updated_at"),
        last_accessed_at=_time(payload, "last_accessed_at"),
        access_count=access_count,
        expires_at=_time(payload, "expires_at"),
        deleted_at=_time(payload, "deleted_at"),
        delete_reason=_optional_text(payload, "delete_reason"),
        supersedes=_texts(payload, "supersedes"),
        superseded_by=_optional_text(payload, "superseded_by"),
        origin_id=_optional_text(payload, "origin_id"),
        session_id=_optional_text(payload, "session_id"),
        source=Source(
            subject=str(source.get("subject", "")),
            request_id=_optional_text(source, "request_id"),
            tool=_optional_text(source, "tool"),
        ),
        tags=_texts(payload, "tags"),
        metadata=dict(metadata),
        embedding_model=str(payload.get("embedding_model", "")),
        content_hash=str(payload.get("content_hash", "")),
        attributes=_texts(payload, "attributes"),
        follows=_optional_text(payload, "follows"),
    )


def decode(memory_id: object, payload: dict[str, Any] | None) -> Memory | None:
    """The `Memory` of a stored point, or None when its payload cannot be decoded: that is logged with the id and
    the reason, and counted (`skipped_payloads`), so one bad point never fails a list, recall, export or get."""
    global _skipped
    try:
        return from_payload(memory_id, payload or {})
    except UndecodablePayload as exc:
        _skipped += 1
        logger.warning("skipped stored memory %s: its payload cannot be decoded: %s", memory_id, exc)
        return None


def decode_all(records: Iterable[Any]) -> list[Memory]:
    """The decodable memories of stored points (objects with `id` and `payload`), skipping the others."""
    return [memory for record in records if (memory := decode(record.id, record.payload)) is not None]


def skipped_payloads() -> int:
    """How many stored payloads this process skipped as undecodable."""
    return _skipped

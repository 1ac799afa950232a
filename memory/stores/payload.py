"""How a `Memory` is laid out as a Qdrant payload, shared by every Qdrant-backed store.

Timestamps are stored as Unix seconds (floats) so range filters are cheap; `status` is a keyword derived from
`deleted_at`, `superseded_by` and `archived_at` ("active", "deleted", "superseded", "archived") so the hot recall
filter is one keyword match.
Decoding checks every field it reads: a payload it cannot use (an older version's, or corrupt) is reported and
skipped by `decode`, never fatal to the read that met it.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from memory.clock import to_timestamp
from memory.models import Memory, MemoryKind, Source

logger = logging.getLogger("hindsight.store")

STATUS_ACTIVE = "active"
STATUS_DELETED = "deleted"
STATUS_SUPERSEDED = "superseded"
STATUS_ARCHIVED = "archived"  # kept whole, without a dense vector (`memory.archive`)

# Payload fields that get an index; the tenant index is the multi-tenant partition key.
KEYWORD_FIELDS = (
    "namespace",
    "status",
    "kind",
    "tags",
    "session_id",
    "content_hash",
    "origin_id",
    "attributes",
    "source.tool",  # BM25 statistics leave out consolidated memories (`memory.stores.common.IDF_LEAVES_OUT`)
)
FLOAT_FIELDS = ("created_at", "expires_at")
TENANT_FIELD = "tenant"


def recallable_statuses(include_superseded: bool, include_archived: bool = False) -> list[str]:
    """The statuses a recall may return: live memories, and superseded or archived ones when asked for."""
    statuses = [STATUS_ACTIVE]
    if include_superseded:
        statuses.append(STATUS_SUPERSEDED)
    if include_archived:
        statuses.append(STATUS_ARCHIVED)
    return statuses


def status_of(memory: Memory) -> str:
    if memory.deleted_at is not None:
        return STATUS_DELETED
    if memory.superseded_by is not None:
        return STATUS_SUPERSEDED
    if memory.archived_at is not None:
        return STATUS_ARCHIVED
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
        "archived_at": to_timestamp(memory.archived_at),
        "archive_reason": memory.archive_reason,
        "stored_at": to_timestamp(memory.stored_at),
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
    if not _EARLIEST_TIMESTAMP <= value <= _LATEST_TIMESTAMP:  # also false for NaN; a str raises TypeError
        raise UndecodablePayload(f"{key} {value!r} is outside the years datetime holds")
    return datetime.fromtimestamp(value, UTC)


def _required_time(payload: dict[str, Any], key: str) -> datetime:
    value = _time(payload, key)
    if value is None:
        raise UndecodablePayload(f"stored memory lacks {key}")
    return value


_TEXT_FIELDS = ("tenant", "namespace", "content")
_OPTIONAL_TEXT_FIELDS = ("delete_reason", "superseded_by", "origin_id", "session_id", "follows", "archive_reason")
_LIST_FIELDS = ("supersedes", "tags", "attributes")


def _check_types(payload: dict[str, Any]) -> None:
    """The types `Memory` relies on and that the conversions below would not catch (one pass, on the hot path
    of every read: a few `type()` checks, no per-item walk)."""
    for key in _TEXT_FIELDS:
        if type(payload.get(key)) is not str:
            raise UndecodablePayload(f"{key} is not a string")
    for key in _OPTIONAL_TEXT_FIELDS:
        if (value := payload.get(key)) is not None and type(value) is not str:
            raise UndecodablePayload(f"{key} is not a string")
    for key in _LIST_FIELDS:
        if (value := payload.get(key)) is not None and type(value) is not list:
            raise UndecodablePayload(f"{key} is not a list")
    for key in ("source", "metadata"):
        if (value := payload.get(key)) is not None and type(value) is not dict:
            raise UndecodablePayload(f"{key} is not an object")
    if type(payload.get("importance")) is bool:
        raise UndecodablePayload("importance is not a number")


def from_payload(memory_id: object, payload: dict[str, Any]) -> Memory:
    """The `Memory` a payload describes; `UndecodablePayload` when it describes none this version can use."""
    _check_types(payload)
    try:
        importance = float(payload["importance"])
        if not math.isfinite(importance):
            raise ValueError("importance is not finite")
        source = payload.get("source") or {}
        return Memory(
            id=str(memory_id),
            tenant=payload["tenant"],
            namespace=payload["namespace"],
            kind=MemoryKind(payload["kind"]),
            content=payload["content"],
            importance=importance,
            created_at=_required_time(payload, "created_at"),
            updated_at=_required_time(payload, "updated_at"),
            last_accessed_at=_time(payload, "last_accessed_at"),
            access_count=int(payload.get("access_count") or 0),
            expires_at=_time(payload, "expires_at"),
            deleted_at=_time(payload, "deleted_at"),
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
            archived_at=_time(payload, "archived_at"),
            archive_reason=payload.get("archive_reason"),
            stored_at=_time(payload, "stored_at"),
        )
    except UndecodablePayload:
        raise
    except KeyError as exc:
        raise UndecodablePayload(f"stored memory lacks {exc.args[0]}") from None
    except (TypeError, ValueError, OverflowError, OSError) as exc:  # a wrong type or value in a conversion
        raise UndecodablePayload(f"{type(exc).__name__}: {exc}") from None


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

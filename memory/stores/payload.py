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
    """The stored payload of a memory: the fields it has, none null and no list or object empty (the engine parses
    a payload on every search that returns it: 839 bytes became 571 this way, issue #33). A field left out reads
    back as None or empty (`from_payload`), as the nulls older versions stored still do. The stores write a whole
    payload (an upsert, an overwrite), never merge one into the stored one, so a field left out cannot keep an
    old value (a restored memory's `deleted_at`)."""
    source = {"subject": memory.source.subject}
    if memory.source.request_id is not None:
        source["request_id"] = memory.source.request_id
    if memory.source.tool is not None:
        source["tool"] = memory.source.tool
    payload = {
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
        "source": source,
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
    return {key: value for key, value in payload.items() if value is not None and value != [] and value != {}}


class UndecodablePayload(ValueError):
    """A stored payload that does not describe a `Memory` this version can use (written by an older version, or
    corrupt: a missing field, a wrong type, a time outside what `datetime` holds)."""


# Stored times must decode with a year to spare on either side of what `datetime` holds, so the engine's date
# arithmetic (days to months) never overflows. New writes are bounded far tighter (`memory.values`).
_EARLIEST_TIMESTAMP = datetime(2, 1, 1, tzinfo=UTC).timestamp()
_LATEST_TIMESTAMP = datetime(9998, 12, 31, tzinfo=UTC).timestamp()
_skipped = 0


_KINDS = {kind.value: kind for kind in MemoryKind}


def _time(value: Any, key: str) -> datetime | None:
    if value is None:
        return None
    if not _EARLIEST_TIMESTAMP <= value <= _LATEST_TIMESTAMP:  # also false for NaN; a str raises TypeError
        raise UndecodablePayload(f"{key} {value!r} is outside the years datetime holds")
    return datetime.fromtimestamp(value, UTC)


def _required_time(value: Any, key: str) -> datetime:
    if (at := _time(value, key)) is None:
        raise UndecodablePayload(f"stored memory lacks {key}")
    return at


def _text(value: Any, key: str) -> str:
    if type(value) is not str:
        raise UndecodablePayload(f"{key} is not a string")
    return value


def _optional_text(value: Any, key: str) -> str | None:
    return None if value is None else _text(value, key)


def _list(value: Any, key: str) -> list[Any]:
    if value is None:
        return []
    if type(value) is not list:
        raise UndecodablePayload(f"{key} is not a list")
    return list(value)


def _object(value: Any, key: str) -> dict[str, Any]:
    if value is None:
        return {}
    if type(value) is not dict:
        raise UndecodablePayload(f"{key} is not an object")
    return value


def _importance(value: Any) -> float:
    if type(value) is bool:
        raise UndecodablePayload("importance is not a number")
    importance = float(value)
    if not math.isfinite(importance):
        raise ValueError("importance is not finite")
    return importance


def from_payload(memory_id: object, payload: dict[str, Any]) -> Memory:
    """The `Memory` a payload describes; `UndecodablePayload` when it describes none this version can use. A field
    missing or null reads as None or empty (lists, `metadata`, `source`'s own fields), except those every memory
    has. Each field is read once, its type checked by a `type()` test (this runs for every candidate of a recall)."""
    get = payload.get
    try:
        source = _object(get("source"), "source")
        kind = _KINDS.get(payload["kind"])
        if kind is None:
            raise UndecodablePayload(f"kind {payload['kind']!r} is unknown")
        return Memory(
            id=str(memory_id),
            tenant=_text(get("tenant"), "tenant"),
            namespace=_text(get("namespace"), "namespace"),
            kind=kind,
            content=_text(get("content"), "content"),
            importance=_importance(payload["importance"]),
            created_at=_required_time(get("created_at"), "created_at"),
            updated_at=_required_time(get("updated_at"), "updated_at"),
            last_accessed_at=_time(get("last_accessed_at"), "last_accessed_at"),
            access_count=int(get("access_count") or 0),
            expires_at=_time(get("expires_at"), "expires_at"),
            deleted_at=_time(get("deleted_at"), "deleted_at"),
            delete_reason=_optional_text(get("delete_reason"), "delete_reason"),
            supersedes=_list(get("supersedes"), "supersedes"),
            superseded_by=_optional_text(get("superseded_by"), "superseded_by"),
            origin_id=_optional_text(get("origin_id"), "origin_id"),
            session_id=_optional_text(get("session_id"), "session_id"),
            source=Source(
                subject=str(source.get("subject", "")), request_id=source.get("request_id"), tool=source.get("tool")
            ),
            tags=_list(get("tags"), "tags"),
            metadata=dict(_object(get("metadata"), "metadata")),
            embedding_model=str(get("embedding_model", "")),
            content_hash=str(get("content_hash", "")),
            attributes=_list(get("attributes"), "attributes"),
            follows=_optional_text(get("follows"), "follows"),
            archived_at=_time(get("archived_at"), "archived_at"),
            archive_reason=_optional_text(get("archive_reason"), "archive_reason"),
            stored_at=_time(get("stored_at"), "stored_at"),
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

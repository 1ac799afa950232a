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
STATUS_ARCHIVED = "archived"  # kept whole, without a dense vector (`memory.lifecycle.archive`)

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
    if memory.source.importer is not None:
        source["importer"] = memory.source.importer
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
    has. Each field is read once, its type checked by a `type()` test, and a field most payloads leave out costs a
    lookup and no call (this runs for every candidate of a recall: 9.4 -> 4.5 us a payload, issue #33)."""
    get = payload.get
    try:
        source = get("source")
        if source is None:
            source = {}
        elif type(source) is not dict:
            raise UndecodablePayload("source is not an object")
        kind = _KINDS.get(payload["kind"])
        if kind is None:
            raise UndecodablePayload(f"kind {payload['kind']!r} is unknown")
        tenant: Any = get("tenant")
        namespace: Any = get("namespace")
        content: Any = get("content")
        if type(tenant) is not str or type(namespace) is not str or type(content) is not str:
            for value, key in ((tenant, "tenant"), (namespace, "namespace"), (content, "content")):
                _text(value, key)  # the first that is not a string raises
        importance = payload["importance"]
        if type(importance) is not float or not math.isfinite(importance):
            importance = _importance(importance)
        created, updated = get("created_at"), get("updated_at")
        created_at = _required_time(created, "created_at")
        # most memories were never updated: the same moment, converted once
        updated_at = created_at if updated == created else _required_time(updated, "updated_at")
        metadata = get("metadata")
        # positional, in `Memory`'s field order (by keyword its generated __init__ takes 2.6 us, positional 0.7 us);
        # tests/memory/stores/test_payload.py reads back a memory with every field set to a distinct value
        return Memory(
            str(memory_id),
            tenant,
            namespace,
            kind,
            content,
            importance,
            created_at,
            updated_at,
            None if (at := get("last_accessed_at")) is None else _time(at, "last_accessed_at"),
            int(get("access_count") or 0),
            None if (at := get("expires_at")) is None else _time(at, "expires_at"),
            None if (at := get("deleted_at")) is None else _time(at, "deleted_at"),
            [] if (items := get("supersedes")) is None else _list(items, "supersedes"),
            None if (text := get("superseded_by")) is None else _text(text, "superseded_by"),
            None if (text := get("origin_id")) is None else _text(text, "origin_id"),
            None if (text := get("session_id")) is None else _text(text, "session_id"),
            Source(
                str(source.get("subject", "")), source.get("request_id"), source.get("tool"), source.get("importer")
            ),
            [] if (items := get("tags")) is None else _list(items, "tags"),
            {} if metadata is None else dict(_object(metadata, "metadata")),
            str(get("embedding_model", "")),
            str(get("content_hash", "")),
            None if (text := get("delete_reason")) is None else _text(text, "delete_reason"),
            [] if (items := get("attributes")) is None else _list(items, "attributes"),
            None if (text := get("follows")) is None else _text(text, "follows"),
            None if (at := get("archived_at")) is None else _time(at, "archived_at"),
            None if (text := get("archive_reason")) is None else _text(text, "archive_reason"),
            None if (at := get("stored_at")) is None else _time(at, "stored_at"),
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

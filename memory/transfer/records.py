"""Imports of exported memory records (`export_memories` / `hindsight export` lines): what a record may hold, and
each record checked and turned into a write before the first is written (a bad record at index 5 must not leave
the first five imported). A record keeps the author it names (`source.subject`), with the importer beside it; one
exported as forgotten or archived is stored so, with its reason."""

from __future__ import annotations

from typing import Any

from memory.errors import InvalidArgument
from memory.models import WriteStatus
from memory.requests import WriteRequest
from memory.scope import MAX_SUBJECT_LENGTH, NamespaceScope
from memory.service import MemoryService
from memory.validation import (
    EngineLimits,
    check_content,
    check_importance,
    check_json_object,
    check_kind,
    check_session_id,
    check_tags,
    parse_instant,
)
from memory.values import check_text

# The fields of an exported record (the gateway's `memory_json`), and those of them that are times
RECORD_FIELDS = frozenset(
    {
        "id", "namespace", "kind", "content", "importance", "tags", "metadata", "session_id", "follows",
        "created_at", "updated_at", "last_accessed_at", "access_count", "expires_at", "deleted_at", "origin_id",
        "supersedes", "superseded_by", "source", "archived_at", "archive_reason", "stored_at",
        "delete_reason",
    }
)  # fmt: skip
TIME_FIELDS = (
    "created_at", "updated_at", "last_accessed_at", "expires_at", "deleted_at", "archived_at", "stored_at",
)  # fmt: skip
MAX_IMPORT_RECORDS = 500  # records per import call


MAX_REASON_CHARS = 500


def check_reason(value: object, applies: bool, field: str, default: str) -> str | None:
    """The reason an exported record was archived or forgotten with (`field`; none for a record that is neither,
    `default` for one exported without a reason)."""
    if not applies:
        return None
    if value is None:
        return default
    if not isinstance(value, str) or len(value) > MAX_REASON_CHARS:
        raise InvalidArgument(f"{field} must be a string of at most {MAX_REASON_CHARS} characters")
    return check_text(value, field)


def check_author(value: object, importer: str) -> str:
    """The author an exported record names (`source.subject`), kept beside its importer; the importer when the
    record names none."""
    if value is None:
        return importer
    subject = value.get("subject") if isinstance(value, dict) else value
    if not isinstance(subject, str) or not subject.strip() or len(subject) > MAX_SUBJECT_LENGTH:
        raise InvalidArgument(f"source.subject must be a non-empty string of at most {MAX_SUBJECT_LENGTH} characters")
    return check_text(subject, "source.subject")


def check_records(
    records: list[dict[str, Any]], importer: str, namespace: str, limits: EngineLimits
) -> list[WriteRequest]:
    """Check every record before any is written (a bad record at index 5 must not leave the first five
    imported): only the fields an export writes, each of the right type, every time within 1970-2200 UTC."""
    if len(records) > MAX_IMPORT_RECORDS:
        raise InvalidArgument(f"import at most {MAX_IMPORT_RECORDS} records per call")
    checked: list[WriteRequest] = []
    for index, record in enumerate(records):
        where = f"records[{index}]"
        if not isinstance(record, dict):
            raise InvalidArgument(f"{where} must be an object with a 'content' string")
        if unknown := sorted(set(record) - RECORD_FIELDS):
            raise InvalidArgument(f"{where} has unknown fields: {', '.join(unknown)}")
        try:
            times = {field: parse_instant(record.get(field), f"{where}.{field}") for field in TIME_FIELDS}
            request = WriteRequest(
                content=check_content(record.get("content"), limits),
                subject=check_author(record.get("source"), importer),
                importer=importer,
                namespace=namespace,
                kind=check_kind(record.get("kind", "episodic")).value,
                importance=check_importance(record.get("importance")),
                tags=check_tags(record.get("tags"), limits),
                session_id=check_session_id(record.get("session_id")),
                occurred_at=times["created_at"],
                metadata=check_json_object(record.get("metadata"), limits.max_metadata_bytes, "metadata"),
                tool="import_memories",
                skip_deleted_repeats=True,
                imported=True,
                deleted_at=times["deleted_at"],  # a record exported as forgotten is stored forgotten, in one step
                delete_reason=check_reason(
                    record.get("delete_reason"), times["deleted_at"] is not None, "delete_reason", "imported as deleted"
                ),
                archived_at=times["archived_at"],  # and one exported as archived is stored archived
                archive_reason=check_reason(
                    record.get("archive_reason"),
                    times["archived_at"] is not None,
                    "archive_reason",
                    "imported as archived",
                ),
            )
        except InvalidArgument as exc:
            message = exc.message if exc.message.startswith(where) else f"{where}: {exc.message}"
            raise InvalidArgument(message) from None
        checked.append(request)
    return checked


async def import_records(
    service: MemoryService, scope: NamespaceScope, importer: str, namespace: str, records: list[dict[str, Any]]
) -> tuple[int, int]:
    """Write exported records into `namespace` through the normal write path, imported by `importer`; answers how
    many were imported and how many skipped (repeats of what is stored)."""
    imported, skipped = 0, 0
    for request in check_records(records, importer, namespace, service.limits):
        outcome = await service.write(scope, request)
        if outcome.status is WriteStatus.CREATED:
            imported += 1
        else:
            skipped += 1
    return imported, skipped

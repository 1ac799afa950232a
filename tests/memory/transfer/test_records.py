"""Imports of exported records (`memory.transfer`): every record checked before the first is written, the author a
record names kept beside its importer, a forgotten record stored forgotten with its reason. Real engine."""

from __future__ import annotations

from typing import Any

import pytest

from memory.errors import InvalidArgument
from memory.requests import ListRequest
from memory.service import MemoryService
from memory.transfer import MAX_IMPORT_RECORDS, import_records
from tests.memory.conftest import scope

pytestmark = pytest.mark.anyio


async def test_a_bad_record_anywhere_imports_nothing(service: MemoryService, acme: str) -> None:
    admin = scope(acme, admin=True)
    records = [{"content": "The boat is called Marlin"}, {"content": "Fine too"}, {"content": "x", "colour": "red"}]
    with pytest.raises(InvalidArgument, match=r"records\[2\] has unknown fields: colour"):
        await import_records(service, admin, "ops", "user:1", records)
    with pytest.raises(InvalidArgument, match=f"at most {MAX_IMPORT_RECORDS}"):
        await import_records(service, admin, "ops", "user:1", [{"content": "a"}] * (MAX_IMPORT_RECORDS + 1))
    listed = await service.list(admin, ListRequest(namespace="user:1", include_deleted=True))
    assert listed.memories == []


async def test_a_record_keeps_its_author_beside_the_importer_and_its_forgetting_with_the_reason(
    service: MemoryService, acme: str
) -> None:
    admin = scope(acme, admin=True)
    records: list[dict[str, Any]] = [
        {"content": "Alice keeps bees on the roof", "source": {"subject": "alice", "request_id": None}},
        {"content": "The old locker code", "deleted_at": "2026-01-02T10:00:00Z", "delete_reason": "asked to"},
    ]
    assert await import_records(service, admin, "ops", "user:1", records) == (2, 0)
    assert await import_records(service, admin, "ops", "user:1", records) == (0, 2)  # repeats are skipped
    listed = await service.list(admin, ListRequest(namespace="user:1", include_deleted=True))
    by_content = {m.content: m for m in listed.memories}
    bees, locker = by_content["Alice keeps bees on the roof"], by_content["The old locker code"]
    assert (bees.source.subject, bees.source.importer) == ("alice", "ops")
    assert (locker.source.subject, locker.source.importer) == ("ops", "ops")
    assert locker.deleted_at is not None and locker.delete_reason == "asked to"

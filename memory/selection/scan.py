"""The tenant's memories read in id order for a `Selection`, at most `SCAN_LIMIT` of them per call: listing the
selected memories a page at a time, and forgetting them (a soft delete with a reason, undone by `restore`)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from memory.cursors import decode_cursor, encode_cursor
from memory.errors import InvalidArgument, NamespaceForbidden
from memory.models import Memory
from memory.ports import ListQuery
from memory.scope import NamespaceScope
from memory.selection.criteria import Selection
from memory.service import MemoryService

SCAN_LIMIT = 2_000  # memories read per call at most, selected or not: a call's cost is bounded by this
PAGE = 200
MAX_SELECTED = 500  # memories answered or forgotten per call at most
MAX_REASON_CHARS = 500


@dataclass(frozen=True, slots=True)
class SelectedPage:
    memories: list[Memory]
    next_cursor: str | None  # None: the whole tenant has been read
    scanned: int


@dataclass(slots=True)
class ForgetReport:
    forgotten: Counter[str] = field(default_factory=Counter)  # namespace -> memories forgotten now (copies too)
    already: int = 0  # selected memories that were forgotten before this call
    next_cursor: str | None = None
    scanned: int = 0


def _check(scope: NamespaceScope, limit: int) -> None:
    if not scope.admin:
        raise NamespaceForbidden("selecting memories across namespaces needs the memory:admin scope")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_SELECTED:
        raise InvalidArgument(f"limit must be from 1 to {MAX_SELECTED}")


async def _selected(
    service: MemoryService,
    scope: NamespaceScope,
    selection: Selection,
    cursor: str | None,
    limit: int,
    scan_limit: int,
) -> tuple[list[Memory], str | None, int]:
    """Up to `limit` selected memories from where `cursor` points, reading at most `scan_limit`; the cursor of the
    first memory not read (None at the end) and how many were read."""
    after, found, scanned = decode_cursor(cursor), [], 0
    while True:
        size = min(PAGE, scan_limit - scanned)
        page, next_id = await service.store.list(scope, ListQuery((), None, True, size, after))
        for index, memory in enumerate(page):
            scanned += 1
            if selection.matches(memory):
                found.append(memory)
            if len(found) == limit or scanned == scan_limit:
                rest = page[index + 1 :]
                return found, encode_cursor(rest[0].id if rest else next_id), scanned
        if next_id is None:
            return found, None, scanned
        after = next_id


async def select_page(
    service: MemoryService,
    scope: NamespaceScope,
    selection: Selection,
    cursor: str | None = None,
    limit: int = 100,
    scan_limit: int = SCAN_LIMIT,
) -> SelectedPage:
    """The selected memories (forgotten and archived ones too) from `cursor` on, in id order. A page may hold
    fewer than `limit` and still have a next cursor: the call read `SCAN_LIMIT` memories."""
    _check(scope, limit)
    found, next_cursor, scanned = await _selected(service, scope, selection, cursor, limit, scan_limit)
    return SelectedPage(found, next_cursor, scanned)


async def forget_selected(
    service: MemoryService,
    scope: NamespaceScope,
    selection: Selection,
    admin: str,
    cursor: str | None = None,
    limit: int = MAX_SELECTED,
    scan_limit: int = SCAN_LIMIT,
) -> ForgetReport:
    """Forget the selected memories from `cursor` on (each with its linked copies in other namespaces), with the
    reason naming the admin and the selection; each stays listable and `restore` brings it back. Call again with
    `next_cursor` until it is None: a call forgets at most `limit` and reads at most `SCAN_LIMIT`."""
    _check(scope, limit)
    found, next_cursor, scanned = await _selected(service, scope, selection, cursor, limit, scan_limit)
    reason = f"forgotten by admin {admin}: {selection.describe()}"[:MAX_REASON_CHARS]
    report = ForgetReport(next_cursor=next_cursor, scanned=scanned)
    done: set[str] = set()
    for memory in found:
        if memory.id in done:
            continue
        if memory.deleted_at is not None:
            report.already += 1
            continue
        copies = [c for c in await service.store.copies_of(scope, memory.id) if c.deleted_at is None]
        await service.forget(scope, memory.id, reason)
        for item in (memory, *copies):
            report.forgotten[item.namespace] += 1
            done.add(item.id)
    return report

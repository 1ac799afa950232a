"""Exact repeats (DESIGN §3, step 2): what a write answers when its text is already stored in its namespace.

The stored memories with the write's content hash are read in one `VectorStore.find_by_hashes` call (a batch
reads those of all its items at once); `repeat_of` decides from them alone, as `find_by_hash` would have found
them: the first live memory (in id order) is the repeat; else, for a write that skips only live repeats, the
first memory of any status is this very request's own memory stored superseded (an old statement arriving late:
answered as its first attempt) or, archived, brought back from the archive instead of stored again. A plan said
again once its day has passed is a new plan. `needs_store` says whether answering the repeat writes anything
(links of an interrupted write to complete, or an archived memory to revive); `answer` is the answer once done.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from memory import linking
from memory.hidden import is_passed_plan
from memory.models import Memory, WriteOutcome, WriteStatus
from memory.requests import WriteRequest
from memory.stores.payload import STATUS_ACTIVE, status_of

COMPLETED = "completed an interrupted earlier attempt of this request"
REVIVED = "repeats an archived memory: brought back from the archive"


@dataclass(frozen=True, slots=True)
class Repeat:
    """A stored memory the write repeats: `existing` to answer with (its links completed first), or `archived`
    to bring back from the archive and answer with."""

    existing: Memory | None = None
    archived: Memory | None = None


def expired(memory: Memory, now: datetime) -> bool:
    """Whether a store's `now` filter leaves `memory` out (expiry at or before `now`)."""
    return memory.expires_at is not None and memory.expires_at.timestamp() <= now.timestamp()


def repeat_of(matches: Iterable[Memory], memory: Memory, request: WriteRequest, now: datetime) -> Repeat | None:
    """The repeat of `memory` among `matches` (stored memories of its namespace with its content hash, in id
    order, any status), or None when the write is not a repeat; see the module docstring."""
    candidates = [m for m in matches if m.content_hash == memory.content_hash and not expired(m, now)]
    first = candidates[0] if candidates else None
    if request.skip_deleted_repeats:
        existing = first
    else:
        existing = next((m for m in candidates if status_of(m) == STATUS_ACTIVE), None)
        if existing is None and first is not None:
            if memory.source.request_id is not None and first.source == memory.source:
                existing = first  # this request's own memory, stored superseded
            elif first.archived_at is not None and first.deleted_at is None and first.superseded_by is None:
                return Repeat(archived=first)
    if existing is None or (is_passed_plan(existing, now) and existing.source != memory.source):
        return None
    return Repeat(existing=existing)


def needs_store(repeat: Repeat) -> bool:
    """Whether answering the repeat writes to the store (`memory.linking.complete_links` has work, or a revival)."""
    existing = repeat.existing
    return existing is None or bool(linking.intent_of(existing)) or existing.superseded_by is not None


def answer(existing: Memory, memory: Memory, superseded: list[str]) -> WriteOutcome:
    """The answer to a write of `memory` that repeats `existing`, once its links are complete: the first attempt's
    answer when it is this very request (same subject, tool and request id), else a skip."""
    if memory.source.request_id is not None and existing.source == memory.source:
        conflict_note = linking.pipeline_notes(existing).get("conflict")
        updated = isinstance(conflict_note, dict) and conflict_note.get("action") == "updated"
        status = WriteStatus.UPDATED if updated else WriteStatus.CREATED
        return WriteOutcome(status, existing, superseded=superseded, reason=COMPLETED)
    return WriteOutcome(WriteStatus.SKIPPED, existing, reason="duplicate of an existing memory")

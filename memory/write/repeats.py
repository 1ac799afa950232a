"""Exact repeats (docs/DESIGN.md § "The write path", step 2): what a write answers when its text is already stored in
its namespace.

The stored memories with the write's content hash are read in one `VectorStore.find_by_hashes` call (a batch
reads those of all its items at once); `repeat_of` decides from them alone. First, whatever the write's flags
(`force` included): a memory this very request stored (same subject, tool and `request_id` in its `source`, which
the store wrote in the same atomic batch as the memory; any status, expired or not) is its earlier attempt, to
complete and answer as the first attempt would have been: a retried request id is applied exactly once. The
request's arguments pin its content (the gateway refuses the same id with other arguments), so the content hash
finds it. A forced write looks no further. Otherwise, as `find_by_hash` would have found them: the first live
memory (in id order) is the repeat; else, for a write that skips only live repeats, the first memory of any
status, archived, is brought back from the archive instead of stored again. A plan said again once its day has
passed is a new plan. `needs_store` says whether answering the repeat writes anything (links of an interrupted
write to complete, or an archived memory to revive); `answer` is the answer once done.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from memory.lifecycle.hidden import is_passed_plan
from memory.models import Memory, WriteOutcome, WriteStatus
from memory.requests import WriteRequest
from memory.stores.payload import STATUS_ACTIVE, status_of
from memory.write import linking

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


def looks_up(request: WriteRequest) -> bool:
    """Whether a write looks for a stored repeat before storing: every write but a forced one, and a forced one
    that carries a request id (for its own earlier attempt only)."""
    return not request.force or request.request_id is not None


def is_own(stored: Memory, memory: Memory) -> bool:
    """Whether `stored` is what this very request (same subject, tool and request id) stored of `memory`."""
    return memory.source.request_id is not None and stored.source == memory.source


def repeat_of(matches: Iterable[Memory], memory: Memory, request: WriteRequest, now: datetime) -> Repeat | None:
    """The repeat of `memory` among `matches` (stored memories of its namespace with its content hash, in id
    order, any status, expired or not), or None when the write is not a repeat; see the module docstring."""
    same = [m for m in matches if m.content_hash == memory.content_hash]
    own = next((m for m in same if is_own(m, memory)), None)
    if own is not None:
        return Repeat(existing=own)  # this request's earlier attempt: completed and answered, never stored twice
    if request.force:
        return None
    candidates = [m for m in same if not expired(m, now)]
    first = candidates[0] if candidates else None
    if request.skip_deleted_repeats:
        existing = first
    else:
        existing = next((m for m in candidates if status_of(m) == STATUS_ACTIVE), None)
        if existing is None and first is not None and _revivable(first):
            return Repeat(archived=first)
    if existing is None or (is_passed_plan(existing, now) and existing.source != memory.source):
        return None
    return Repeat(existing=existing)


def _revivable(memory: Memory) -> bool:
    """Archived by maintenance, and neither forgotten nor replaced: a repeat brings it back."""
    return memory.archived_at is not None and memory.deleted_at is None and memory.superseded_by is None


def needs_store(repeat: Repeat) -> bool:
    """Whether answering the repeat writes to the store (`memory.write.linking.complete_links` has work, or a
    revival)."""
    existing = repeat.existing
    return existing is None or bool(linking.intent_of(existing)) or existing.superseded_by is not None


def answer(existing: Memory, memory: Memory, superseded: list[str]) -> WriteOutcome:
    """The answer to a write of `memory` that repeats `existing`, once its links are complete: the first attempt's
    answer when it is this very request (same subject, tool and request id), else a skip."""
    if is_own(existing, memory):
        conflict_note = linking.pipeline_notes(existing).get("conflict")
        updated = isinstance(conflict_note, dict) and conflict_note.get("action") == "updated"
        status = WriteStatus.UPDATED if updated else WriteStatus.CREATED
        return WriteOutcome(status, existing, superseded=superseded, reason=COMPLETED)
    return WriteOutcome(WriteStatus.SKIPPED, existing, reason="duplicate of an existing memory")

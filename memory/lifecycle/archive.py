"""The archive: where maintenance moves memories that are old and rarely used, or that a namespace over its
capacity cannot keep live, instead of deleting them.

An archived memory keeps its content, metadata, provenance (source, `source_event_ids`, origin) and keyword
vector, and loses its dense vector (the stores keep it out of the dense index: `VectorStore`). Default recall
never returns it and it no longer counts against capacity; `recall_memory(include_archived=true)` finds it by its
keywords (marked `archived`), `list_memories(hidden="archived")` lists it, export and import carry it (an imported
archived record is stored archived), and `restore_memory` embeds it again and puts it back in the index.

A memory is archived as `idle` when nothing created, updated or recalled it for `ArchivePolicy.after_days` and it
was recalled at most `max_access_count` times (`memory.lifecycle.forgetting.archive_idle`), or for `capacity` by
eviction (`memory.lifecycle.forgetting.evict`). Archiving is per memory: a shared copy goes by the use of its own
namespace, never with its origin. Maintenance never deletes an archived memory; only `purge_namespace` does.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from memory.models import Memory

IDLE_REASON = "idle"  # old and rarely used
CAPACITY_REASON = "capacity"  # evicted: its namespace was over capacity


@dataclass(frozen=True, slots=True)
class ArchivePolicy:
    after_days: float = 90.0  # not created, updated or recalled for this long (0: never archive as idle)
    max_access_count: int = 3  # and recalled at most this many times in all

    @property
    def enabled(self) -> bool:
        return self.after_days > 0


def is_live(memory: Memory) -> bool:
    """Neither forgotten, superseded nor archived: what recall returns by default, and all that may be archived."""
    return memory.deleted_at is None and memory.superseded_by is None and memory.archived_at is None


def last_used(memory: Memory) -> datetime:
    """When the memory was last stored, written or recalled. A memory imported with the time it happened
    (`occurred_at`, its `created_at`, years ago) counts from when the gateway took it in (`stored_at`): history
    imported today is not idle."""
    times = [memory.created_at, memory.updated_at]
    for when in (memory.stored_at, memory.last_accessed_at):
        if when is not None:
            times.append(when)
    return max(times)


def is_idle(memory: Memory, now: datetime, policy: ArchivePolicy) -> bool:
    """Old and rarely used: the policy's idle period has passed since its last use, and it was seldom recalled."""
    return (
        policy.enabled
        and last_used(memory) <= now - timedelta(days=policy.after_days)
        and memory.access_count <= policy.max_access_count
    )


def archived_copy(memory: Memory, reason: str, now: datetime) -> Memory:
    return replace(memory, archived_at=now, archive_reason=reason)


def restored_copy(memory: Memory, now: datetime, embedding_model: str) -> Memory:
    """The memory back from the archive. Bringing it back is a use of it (`last_accessed_at`), so the next
    maintenance pass does not archive it again at once; its access count is left as it was."""
    return replace(memory, archived_at=None, archive_reason=None, last_accessed_at=now, embedding_model=embedding_model)

"""A memory's versions over time: the supersession chains a newer statement makes ("billing uses MySQL" replaced by
"we migrated billing to PostgreSQL"). A memory is valid from its `created_at` (when it happened: `occurred_at`, else
when written) until its successor's `created_at`.

- `current_versions`: the version a recall answers for a superseded match: the live end of its chain, or, as of an
  instant, the version valid then (`memory.recall.steps`);
- `history`: every version of one memory's chain, oldest first (`list_memories(history_of=...)`).
"""

from memory.versions.chains import MAX_SUPERSESSION_HOPS, Versions, current_versions
from memory.versions.history import MAX_HISTORY, history

__all__ = ["MAX_HISTORY", "MAX_SUPERSESSION_HOPS", "Versions", "current_versions", "history"]

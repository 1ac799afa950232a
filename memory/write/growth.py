"""Growth and conflicts (issue #18.3): what each write added, told to an observer (the gateway counts them as
`hindsight_new_memories_total{kind}` and `hindsight_memories_superseded_total`).

Every write of the engine passes `MemoryService.write` (the `write_memory` tool, the memories extracted from
turns and session events, consolidation summaries, imports), so the counts are the store's growth whatever wrote
it. A write created a memory when its status is `created` and it stored something (an exact repeat, a chit-chat
skip and an in-place update of a near-duplicate create none; shared copies of one write count as one). It
superseded as many memories as it marked replaced, plus one when its own statement arrived already replaced by a
newer one (the same count as `hindsight_memories_hidden_total{reason="superseded"}`, `memory.lifecycle.hidden`). Their
ratio is the conflict rate: a high one points at a conflict detector that replaces too eagerly.
"""

from __future__ import annotations

from collections.abc import Callable

from memory.models import WriteOutcome, WriteStatus

# (tenant, the kind of the memory it created or None, how many memories it superseded)
WriteObserver = Callable[[str, str | None, int], None]


def ignore_writes(tenant: str, created: str | None, superseded: int) -> None:
    """The observer of an engine nobody counts for."""


def created_kind(outcome: WriteOutcome) -> str | None:
    """The kind of the memory the write created, or None when it created none."""
    if outcome.status is WriteStatus.CREATED and outcome.stored:
        return outcome.memory.kind.value
    return None


def superseded_count(outcome: WriteOutcome) -> int:
    """How many memories the write marked superseded (its own, stored as history, included)."""
    if not outcome.stored:
        return 0
    return len(outcome.superseded) + (outcome.memory.superseded_by is not None)


def tell_write_growth(tenant: str, outcome: WriteOutcome, observe: WriteObserver) -> None:
    """Tell `observe` what one write of `tenant` added, if it added anything."""
    created, superseded = created_kind(outcome), superseded_count(outcome)
    if created is not None or superseded:
        observe(tenant, created, superseded)

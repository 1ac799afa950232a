"""Memories the engine hides or demotes, and why: the hidden state of a stored memory (for
`list_memories(hidden=...)`), the hides each write and each expiry pass makes (told to an observer: the gateway
counts them as `hindsight_memories_hidden_total{reason}`), and plans whose day has passed.

A write hides something when it skips its text as chit-chat (nothing stored: `skipped`), updates a near-duplicate
in place (the older wording is replaced, kept in `metadata._pipeline.conflict.previous_content`: `merged`), or
marks older memories superseded (`superseded`, one per memory, a statement stored already superseded by a newer
one included). Maintenance hides a memory whose `ttl_seconds` ran out (`expired`), and moves one that is old and
rarely used, or that its namespace has no room for, to the archive (`archived`, `memory.lifecycle.archive`). An exact
repeat hides nothing: the same text is stored already. Every stored hidden memory stays listable in its state and
restorable; a skipped write stored nothing and is visible only in its answer, the audit log and the counter.

A plan read from the text ("I have a meeting tomorrow", `memory.pipeline.expiry`) is never hidden: its notes
record the day it is about (`_pipeline.expiry.until`), and once that has passed recall keeps it as history: it
marks it (`passed_plan`) and, if configured (`ScoringWeights.passed_plan` < 1; off by default), lowers its
relevance for a question about the present ("where does she work now?"); `list_memories(hidden="passed")` lists
them. Measured on text written blind to the rules, the plan reading was right between one time in three and five
times in six when it fired (bench/FINDINGS.md): not sure enough to hide or lower anything by default.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

from memory.errors import InvalidArgument
from memory.models import Memory, WriteOutcome, WriteStatus
from memory.ports import ListQuery, VectorStore
from memory.scope import NamespaceScope
from memory.write.linking import pipeline_notes

HIDE_REASONS = ("skipped", "merged", "superseded", "expired", "archived")
HIDDEN_STATES = ("expired", "superseded", "merged", "forgotten", "passed", "archived")
EXPIRED_REASON = "expired"  # the delete reason maintenance gives a passed plan
SCAN_PAGES = 20  # store pages one `list_hidden` call reads at most

HideObserver = Callable[[str, int], None]  # (reason, how many)


def ignore_hides(reason: str, count: int) -> None:
    """The observer of an engine nobody counts for."""


def check_hidden_state(value: object) -> str | None:
    if value is None:
        return None
    if value not in HIDDEN_STATES:
        raise InvalidArgument(f"hidden must be one of: {', '.join(HIDDEN_STATES)}")
    return str(value)


def plan_until(memory: Memory) -> datetime | None:
    """The end of the day a plan read from the memory's text is about (`_pipeline.expiry.until`), or None."""
    expiry = pipeline_notes(memory).get("expiry")
    until = expiry.get("until") if isinstance(expiry, dict) else None
    try:
        parsed = datetime.fromisoformat(until) if isinstance(until, str) else None
    except ValueError:
        return None
    # only what a write could have noted: aware, and inside the years every comparison can hold
    return parsed if parsed is not None and parsed.tzinfo is not None and 1970 <= parsed.year <= 2201 else None


def is_passed_plan(memory: Memory, now: datetime) -> bool:
    until = plan_until(memory)
    return until is not None and until <= now


def is_in_state(memory: Memory, state: str, now: datetime) -> bool:
    """Whether `memory` is in `state`: expired (its ttl ran out, or forgotten as expired), superseded, merged
    (updated in place by a near-duplicate: its earlier wording is in its notes), forgotten (otherwise), a passed
    plan (demoted in recall, not hidden), or archived (by maintenance, with its `archive_reason`)."""
    if state == "passed":
        return is_passed_plan(memory, now)
    if state == "archived":
        return memory.archived_at is not None
    expired = memory.expires_at is not None and memory.expires_at <= now
    if state == "expired":
        return expired or memory.delete_reason == EXPIRED_REASON
    if state == "superseded":
        return memory.superseded_by is not None
    if state == "merged":
        conflict = pipeline_notes(memory).get("conflict")
        return isinstance(conflict, dict) and conflict.get("action") == "updated"
    return memory.deleted_at is not None and memory.delete_reason != EXPIRED_REASON


def tell_write_hides(outcome: WriteOutcome, observe: HideObserver) -> None:
    """Tell `observe` what one write hid (see the module docstring)."""
    if outcome.status is WriteStatus.SKIPPED and not outcome.stored:
        observe("skipped", 1)
    if outcome.status is WriteStatus.UPDATED:
        observe("merged", 1)
    superseded = len(outcome.superseded) + (outcome.memory.superseded_by is not None)
    if superseded and outcome.stored:
        observe("superseded", superseded)


async def list_hidden(
    store: VectorStore, scope: NamespaceScope, query: ListQuery, state: str, now: datetime
) -> tuple[list[Memory], str | None]:
    """Up to `query.limit` memories hidden in `state`, in creation order, and the id to go on after: at most
    `SCAN_PAGES` store pages are read per call, so a long run of other memories answers a short page (or none)
    with a cursor to go on from."""
    found: list[Memory] = []
    after = query.after
    for _ in range(SCAN_PAGES):
        page, after = await store.list(
            scope, replace(query, include_deleted=True, limit=query.limit - len(found), after=after)
        )
        found += [m for m in page if is_in_state(m, state, now)]
        if after is None or len(found) >= query.limit:
            break
    return found, after

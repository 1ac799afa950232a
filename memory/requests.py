"""The engine's request objects: what a caller asks for, before validation."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class WriteRequest:
    content: str
    subject: str
    namespace: str | None = None
    kind: str = "episodic"
    importance: float | None = None
    tags: Sequence[str] | None = None
    ttl_seconds: int | None = None
    session_id: str | None = None
    occurred_at: datetime | None = None
    share_to: Sequence[str] | None = None
    metadata: dict[str, Any] | None = None
    force: bool = False
    request_id: str | None = None
    tool: str = "write_memory"
    skip_deleted_repeats: bool = False  # imports: a repeat of a forgotten memory is skipped, not re-created
    # imports of exported records: they passed the write pipeline once, so no density filter and no update of a
    # near-duplicate in place (exact repeats are still skipped, contradicted memories still superseded)
    imported: bool = False
    importer: str | None = None  # imports: the admin subject importing (`subject` is the author the record names)
    # imports of a record exported as forgotten: stored forgotten in the same step (never live in between)
    deleted_at: datetime | None = None
    delete_reason: str | None = None
    # imports of a record exported as archived: stored archived (out of the dense index) in the same step
    archived_at: datetime | None = None
    archive_reason: str | None = None


@dataclass(frozen=True, slots=True)
class RecallRequest:
    query: str
    namespaces: Sequence[str] | None = None
    top_k: int | None = None
    kinds: Sequence[str] | None = None
    tags: Sequence[str] | None = None
    session_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    token_budget: int | None = None
    explain: bool = False
    include_superseded: bool = False  # also memories a newer one superseded (never deleted or expired ones)
    include_archived: bool = False  # also archived memories (`memory.lifecycle.archive`), found by their keywords
    as_of: datetime | None = None  # what was current at this instant: the versions valid then (`memory.recall.steps`)


@dataclass(frozen=True, slots=True)
class ListRequest:
    namespace: str | None = None
    kind: str | None = None
    include_deleted: bool = False
    limit: int | None = None
    cursor: str | None = None
    hidden: str | None = None  # only memories hidden in this state (`memory.lifecycle.hidden.HIDDEN_STATES`)
    history_of: str | None = None  # every version of this memory's supersession chain instead (`memory.versions`)


@dataclass(frozen=True, slots=True)
class TurnRequest:
    session_id: str
    role: str
    content: str
    subject: str
    occurred_at: datetime | None = None
    namespace: str | None = None
    request_id: str | None = None


@dataclass(frozen=True, slots=True)
class StateUpdate:
    session_id: str
    state: dict[str, Any] = field(default_factory=dict)
    merge: bool = True
    ttl_seconds: int | None = None
    namespace: str | None = None
    subject: str | None = None  # the token subject making the update: it joins the session's writers

"""`RecallLog`: the contract of the recall log store, its entry and their JSON encoding.

Rules every implementation follows:

- Scope: the tenant always comes from the scope. Any scope of a tenant may append (the gateway appends for the
  caller of a recall); only an admin scope may read (`NamespaceForbidden` otherwise), and only its own tenant's.
- Bounds: at most `max_entries` entries per tenant (appending past it drops the oldest) and none older than
  `max_age_seconds` on the injected clock: older entries are dropped when the tenant's log is appended to or
  read, and are never returned.
- Order: `entries` answers newest first, filtered by `session_id` and `subject` when given, at most `limit`.
- Erasure: only an admin scope erases (`NamespaceForbidden` otherwise), only from its own tenant's log, and only
  the entries `base.erasable` picks (empty collections pick nothing); the answer counts the live entries removed.
- Errors: an unreachable backend raises `BackendUnavailable`.

`InProcessRecallLog` and `RedisRecallLog` are built on `RecallLogBase` (memory/recall_log/base.py), which holds
these checks and filters once.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from memory.scope import NamespaceScope

DEFAULT_MAX_ENTRIES = 1000
DEFAULT_MAX_AGE_SECONDS = 7 * 86_400


@dataclass(frozen=True, slots=True)
class LoggedHit:
    """One returned memory: its id, namespace, final score and the parts of it (as `explain` shows them)."""

    id: str
    namespace: str
    score: float
    parts: dict[str, Any]


@dataclass(frozen=True, slots=True)
class RecallLogEntry:
    """One recall: when, who, the query, the arguments that shaped it (namespaces, top_k, kinds, tags,
    session_id, since, until, format, order, ...; unset ones left out) and what it returned, in answer order."""

    at: datetime
    subject: str
    query: str
    arguments: dict[str, Any] = field(default_factory=dict)
    hits: tuple[LoggedHit, ...] = ()

    @property
    def session_id(self) -> str | None:
        value = self.arguments.get("session_id")
        return value if isinstance(value, str) else None


class RecallLog(Protocol):
    async def append(self, scope: NamespaceScope, entry: RecallLogEntry) -> None:
        """Add one entry to the scope's tenant log, dropping what falls outside the bounds."""
        ...

    async def entries(
        self,
        scope: NamespaceScope,
        *,
        limit: int,
        session_id: str | None = None,
        subject: str | None = None,
    ) -> list[RecallLogEntry]:
        """Up to `limit` live entries of the admin scope's tenant, newest first, filtered when asked."""
        ...

    async def erase(
        self,
        scope: NamespaceScope,
        *,
        namespaces: Collection[str] = (),
        subjects: Collection[str] = (),
        memory_ids: Collection[str] = (),
    ) -> int:
        """Remove every entry of the admin scope's tenant that was asked by one of `subjects`, named one of
        `namespaces` in its arguments or hit one (or a memory with an id of `memory_ids`); returns how many."""
        ...

    async def close(self) -> None: ...


def encode_entry(entry: RecallLogEntry) -> str:
    return json.dumps(
        {
            "at": entry.at.isoformat(),
            "subject": entry.subject,
            "query": entry.query,
            "arguments": entry.arguments,
            "hits": [{"id": h.id, "namespace": h.namespace, "score": h.score, "parts": h.parts} for h in entry.hits],
        },
        ensure_ascii=False,
        separators=(",", ":"),
    )


def decode_entry(text: str) -> RecallLogEntry:
    data = json.loads(text)
    return RecallLogEntry(
        at=datetime.fromisoformat(data["at"]),
        subject=data["subject"],
        query=data["query"],
        arguments=data["arguments"],
        hits=tuple(LoggedHit(h["id"], h["namespace"], h["score"], h["parts"]) for h in data["hits"]),
    )

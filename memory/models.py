"""The engine's data: a stored `Memory`, the kinds, write and recall results, and working-memory state."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any


class MemoryKind(StrEnum):
    EPISODIC = "episodic"
    SEMANTIC = "semantic"


class WriteStatus(StrEnum):
    CREATED = "created"
    UPDATED = "updated"
    SKIPPED = "skipped"


@dataclass(frozen=True, slots=True)
class Source:
    """Provenance: who wrote a memory and with which request."""

    subject: str
    request_id: str | None = None
    tool: str | None = None


@dataclass(slots=True)
class Memory:
    """One stored memory, with every field of DESIGN §4."""

    id: str
    tenant: str
    namespace: str
    kind: MemoryKind
    content: str
    importance: float
    created_at: datetime
    updated_at: datetime
    last_accessed_at: datetime | None
    access_count: int
    expires_at: datetime | None
    deleted_at: datetime | None
    supersedes: list[str]
    superseded_by: str | None
    origin_id: str | None
    session_id: str | None
    source: Source
    tags: list[str]
    metadata: dict[str, Any]
    embedding_model: str
    content_hash: str
    delete_reason: str | None = None

    @property
    def is_deleted(self) -> bool:
        return self.deleted_at is not None


@dataclass(frozen=True, slots=True)
class ScoreParts:
    """The parts of a recall score: `score = a·similarity + b·recency + c·importance + d·access_frequency`."""

    similarity: float
    recency: float
    importance: float
    access_frequency: float
    score: float


@dataclass(frozen=True, slots=True)
class RecallHit:
    memory: Memory
    scores: ScoreParts


@dataclass(frozen=True, slots=True)
class WriteOutcome:
    status: WriteStatus
    memory: Memory
    superseded: list[str] = field(default_factory=list)
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class MemoryPage:
    memories: list[Memory]
    next_cursor: str | None


@dataclass(frozen=True, slots=True)
class Turn:
    role: str
    content: str
    occurred_at: datetime


@dataclass(frozen=True, slots=True)
class WorkingMemory:
    """A session's state object and its recent turns."""

    session_id: str
    namespace: str
    state: dict[str, Any]
    turns: list[Turn]
    expires_at: datetime

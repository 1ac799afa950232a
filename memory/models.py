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


# `Source.tool` of a memory extracted from an agent's events (memory.agent.extraction): a statement derived from the
# conversation, not one of its turns, so a session's next turn never follows it (VectorStore.latest_in_session)
EXTRACTED = "extract"
# `Source.tool` of a semantic memory consolidation wrote (memory.consolidation): a generalisation of its
# `metadata.sources`, indexed for keywords by the terms it shares with them (memory.text.keyword_document)
CONSOLIDATED = "consolidate"


@dataclass(frozen=True, slots=True)
class Source:
    """Provenance: who wrote a memory and with which request; for an imported record, `subject` is the author its
    export named and `importer` the admin subject that imported it."""

    subject: str
    request_id: str | None = None
    tool: str | None = None
    importer: str | None = None


@dataclass(slots=True)
class Memory:
    """One stored memory, with every field of the memory model
    (docs/MEMORY.md § "How memories are written and recalled")."""

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
    # the attributes the content gives a value to, e.g. "user|lives_in", "user|pref:tea" (memory.pipeline.claims):
    # how a later write finds the memories it may supersede, however dissimilar their wording
    attributes: list[str] = field(default_factory=list)
    # the memory written just before this one in the same session and namespace (a conversation's previous turn):
    # recall lets a match on one turn lift the turn that answers it (memory.recall.ranking.conversation_relevance)
    follows: str | None = None
    # archived by maintenance (`memory.lifecycle.archive`): kept whole but out of the dense index and out of default
    # recall
    archived_at: datetime | None = None
    archive_reason: str | None = None
    # when this store took the memory in (`created_at` is when it happened: an imported turn's `occurred_at`);
    # None for memories stored before the field existed. The archive counts idleness from it
    # (`memory.lifecycle.archive`)
    stored_at: datetime | None = None

    @property
    def is_deleted(self) -> bool:
        return self.deleted_at is not None

    @property
    def is_archived(self) -> bool:
        return self.archived_at is not None


@dataclass(frozen=True, slots=True)
class ScoreParts:
    """The parts of a recall score: `score = a·similarity + b·recency + c·importance + d·access_frequency`.

    `similarity` is the candidate's relevance to the query in [0, 1], relative to the best candidate of the
    same recall (memory.recall.ranking: dense cosine and BM25 fused, lifted by conversation context);
    `dense_similarity` is its own cosine and `keyword` its raw BM25 score (0: no query term); `cues` names the
    text cues that moved its relevance ("speaker", "when", "answers_question", "ends_asking": memory.recall.ranking)."""

    similarity: float
    recency: float
    importance: float
    access_frequency: float
    score: float
    dense_similarity: float | None = None
    keyword: float | None = None
    cues: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RecallHit:
    memory: Memory
    scores: ScoreParts
    via: str | None = None  # the superseded memory the query matched, when this hit is the one that replaced it
    # when a newer memory replaced this one (its successor's `created_at`): the end of the time it was valid,
    # known for a superseded memory a recall answers (`as_of`, `include_superseded`); it was valid from `created_at`
    valid_to: datetime | None = None
    # who wrote it (`source.subject`), set where the answer names it: for a reader other than its writer
    author: str | None = None


@dataclass(frozen=True, slots=True)
class WriteOutcome:
    """What a write did. `memory` is the stored memory (created or updated), the existing one an exact repeat
    was skipped for, or, when `stored` is False (low-information content skipped), the memory that would have
    been written; its id then names nothing. `superseded` lists the ids of older memories this one replaced."""

    status: WriteStatus
    memory: Memory
    superseded: list[str] = field(default_factory=list)
    reason: str | None = None
    stored: bool = True

    @property
    def id(self) -> str | None:
        """The id of the memory the write resolved to, or None when nothing was stored or matched."""
        return self.memory.id if self.stored else None


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

"""How memories and sessions look on the wire: JSON-ready dicts for the tools' structured results."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memory.linking import pipeline_notes
from memory.models import Memory, RecallHit, WorkingMemory, WriteOutcome

# The fields of an exported record (`memory_json`), and those of them that are times
RECORD_FIELDS = frozenset(
    {
        "id", "namespace", "kind", "content", "importance", "tags", "metadata", "session_id", "follows",
        "created_at", "updated_at", "last_accessed_at", "access_count", "expires_at", "deleted_at", "origin_id",
        "supersedes", "superseded_by", "source",
    }
)  # fmt: skip
TIME_FIELDS = ("created_at", "updated_at", "last_accessed_at", "expires_at", "deleted_at")


def iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat().replace("+00:00", "Z")


def memory_json(memory: Memory) -> dict[str, Any]:
    return {
        "id": memory.id,
        "namespace": memory.namespace,
        "kind": memory.kind.value,
        "content": memory.content,
        "importance": memory.importance,
        "tags": memory.tags,
        "metadata": memory.metadata,
        "session_id": memory.session_id,
        "follows": memory.follows,  # the previous memory of its session in its namespace, if any
        "created_at": iso(memory.created_at),
        "updated_at": iso(memory.updated_at),
        "last_accessed_at": iso(memory.last_accessed_at),
        "access_count": memory.access_count,
        "expires_at": iso(memory.expires_at),
        "deleted_at": iso(memory.deleted_at),
        "origin_id": memory.origin_id,
        "supersedes": memory.supersedes,
        "superseded_by": memory.superseded_by,
        "source": {"subject": memory.source.subject, "request_id": memory.source.request_id},
    }


def hit_json(hit: RecallHit, explain: bool) -> dict[str, Any]:
    body = memory_json(hit.memory)
    body["score"] = round(hit.scores.score, 6)
    if hit.via is not None:
        body["via"] = hit.via  # the query matched this superseded memory; this hit is what replaced it
    if "passed_plan" in hit.scores.cues:
        body["passed_plan"] = True  # a plan whose day has passed: history, not the present
    if explain:
        parts = hit.scores
        body["scores"] = {
            "similarity": round(parts.similarity, 6),
            "recency": round(parts.recency, 6),
            "importance": round(parts.importance, 6),
            "access_frequency": round(parts.access_frequency, 6),
        }
        if parts.dense_similarity is not None:
            body["scores"]["dense_similarity"] = round(parts.dense_similarity, 6)
        if parts.keyword is not None:
            body["scores"]["keyword"] = round(parts.keyword, 6)
        body["scores"]["cues"] = list(parts.cues)
    return body


def write_explanation(outcome: WriteOutcome) -> dict[str, Any]:
    """What each step of the write pipeline decided for one write (`explain` on `write_memory`): its notes from
    `metadata._pipeline` (density, expiry with its rule and phrase, importance with its source, conflicts with
    their reasons, steps skipped for the CPU budget), and what they set."""
    memory = outcome.memory
    return {
        "stored": outcome.stored,
        "reason": outcome.reason,
        "importance": memory.importance,
        "expires_at": iso(memory.expires_at),
        "superseded": outcome.superseded,
        "pipeline": pipeline_notes(memory),
    }


def session_json(session: WorkingMemory) -> dict[str, Any]:
    return {
        "session_id": session.session_id,
        "namespace": session.namespace,
        "state": session.state,
        "turns": [{"role": t.role, "content": t.content, "occurred_at": iso(t.occurred_at)} for t in session.turns],
        "expires_at": iso(session.expires_at),
    }

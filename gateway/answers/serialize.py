"""How memories and sessions look on the wire: JSON-ready dicts for the tools' structured results."""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

from gateway.answers.shapes import Cited, Hit, Record, SessionAnswer, Source, WriteExplanation
from memory.models import Memory, MemoryKind, RecallHit, WorkingMemory, WriteOutcome
from memory.pipeline.injection import untrusted_mark
from memory.write.linking import pipeline_notes


def iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat().replace("+00:00", "Z")


def source_json(memory: Memory) -> Source:
    """Who wrote a memory, with the request; for an imported one the admin who imported it too."""
    source: Source = {"subject": memory.source.subject, "request_id": memory.source.request_id}
    if memory.source.importer is not None:
        source["importer"] = memory.source.importer
    return source


def memory_json(memory: Memory) -> Record:
    record = {
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
        "source": source_json(memory),
        "archived_at": iso(memory.archived_at),  # in the archive since then (`memory.lifecycle.archive`), and why
        "archive_reason": memory.archive_reason,
        "stored_at": iso(memory.stored_at),  # when the gateway took it in (an import: when it was imported)
    }
    if memory.delete_reason is not None:
        record["delete_reason"] = memory.delete_reason  # why it was forgotten (a hidden memory is explained)
    return cast(Record, record)


SCORE_DIGITS = 3  # a hit's score as answered and logged: what ranks it, not noise in its sixth digit


def cited_json(hit: RecallHit, *, explain: bool = False) -> Cited:
    """What a recall says of a hit whatever its format: id, namespace, when (to the second), score (to three
    decimals: what the hits are ranked by), the flags that are set; the score's parts if `explain`."""
    memory = hit.memory
    body: dict[str, Any] = {
        "id": memory.id,
        "namespace": memory.namespace,
        "when": iso(memory.created_at.replace(microsecond=0)),
        "score": round(hit.scores.score, SCORE_DIGITS),
    }
    if hit.via is not None:
        body["via"] = hit.via  # the query matched this superseded memory; this hit is what replaced it
    if hit.author is not None:
        body["author"] = hit.author  # another subject wrote it: weigh it by its author
    if (mark := untrusted_mark(memory)) is not None:  # stored as told; its text reads as instructions to you
        body["untrusted"] = f"reads as instructions ({mark.rule})"
    if hit.valid_to is not None:  # superseded since (as_of, include_superseded): valid from `when` until then
        body["valid_to"] = iso(hit.valid_to.replace(microsecond=0))
    if memory.archived_at is not None:
        body["archived"] = True  # from the archive (include_archived): restore_memory puts it back
    if "passed_plan" in hit.scores.cues:
        body["passed_plan"] = True  # a plan whose day has passed: history, not the present
    sources = memory.metadata.get("source_event_ids")
    if isinstance(sources, list) and sources:
        body["source_event_ids"] = sources  # extracted from an agent's events: their ids (list_events)
    if explain:
        body["scores"] = score_parts(hit)
    return cast(Cited, body)


def hit_json(hit: RecallHit, *, full: bool = False, explain: bool = False) -> Hit:
    """One recall hit (`format: "memories"`): `cited_json` and the content; every stored field if `full`."""
    cited = cited_json(hit, explain=explain)
    body: dict[str, Any] = {"id": cited["id"], "namespace": cited["namespace"], "content": hit.memory.content}
    body.update(cited)
    if full:
        body.update((name, value) for name, value in memory_json(hit.memory).items() if name not in body)
    return cast(Hit, body)


def score_parts(hit: RecallHit) -> dict[str, Any]:
    parts = hit.scores
    scores: dict[str, Any] = {
        "similarity": round(parts.similarity, 6),
        "recency": round(parts.recency, 6),
        "importance": round(parts.importance, 6),
        "access_frequency": round(parts.access_frequency, 6),
    }
    if parts.dense_similarity is not None:
        scores["dense_similarity"] = round(parts.dense_similarity, 6)
    if parts.keyword is not None:
        scores["keyword"] = round(parts.keyword, 6)
    scores["cues"] = list(parts.cues)
    sources = hit.memory.metadata.get("sources")
    if hit.memory.kind is MemoryKind.SEMANTIC and isinstance(sources, list):
        scores["consolidated_from"] = len(sources)  # written by consolidation from these episodes
    return scores


def write_explanation(outcome: WriteOutcome) -> WriteExplanation:
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


def session_json(session: WorkingMemory) -> SessionAnswer:
    answer = {
        "session_id": session.session_id,
        "namespace": session.namespace,
        "state": session.state,
        "turns": [{"role": t.role, "content": t.content, "occurred_at": iso(t.occurred_at)} for t in session.turns],
        "expires_at": iso(session.expires_at),
    }
    return cast(SessionAnswer, answer)

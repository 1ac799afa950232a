"""Drafts: a write request checked and read by the text rules, before anything is stored
(docs/DESIGN.md § "The write path", steps 1-5).

`new_draft` checks the request and builds the memory it would store (reads nothing); `analysis_job` is the text
rules' work for a worker thread under a CPU budget; `drafted` applies what they found (expiry note, importance by
the rules or the optional LLM, attribute claims) or answers the skip of a memory with too little information;
`embedding_work` and `take_vectors` give the draft its vectors: the text as read (`memory.recall.cues.attributed`), a
dialogue turn in the context of the turn it follows, and a keyword vector holding its day. Single writes
(`memory.write.writer`) and batches (`memory.write.batch`) draft the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from memory.embedders.sparse import Bm25Encoder
from memory.errors import InvalidArgument
from memory.ids import content_hash, new_memory_id
from memory.models import Memory, Source, WriteOutcome, WriteStatus
from memory.pipeline import PipelineSettings, claims, turns
from memory.pipeline.analysis import WriteAnalysis, analyse_write
from memory.pipeline.rating import rate_importance
from memory.ports import ImportanceRater, SparseVector
from memory.recall.cues import attributed, speaker_of
from memory.requests import WriteRequest
from memory.scope import NamespaceScope
from memory.text.keyword_document import keyword_vector
from memory.validation import (
    EngineLimits,
    check_content,
    check_importance,
    check_json_object,
    check_kind,
    check_positive_seconds,
    check_request_id,
    check_session_id,
    check_tags,
)
from memory.values import check_instant
from memory.write import linking

DEFAULT_IMPORTANCE = 0.5


@dataclass(slots=True)
class Draft:
    """A memory ready to store: what the request asked, what the pipeline found, and its vectors."""

    memory: Memory
    request: WriteRequest
    share_to: list[str]
    tags: list[str]
    metadata: dict[str, Any]
    claims: list[claims.Claim]
    notes: dict[str, Any] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    previous: Memory | None = None
    own: Sequence[float] = ()  # what the memory says alone (conflicts are looked up by it)
    vector: Sequence[float] = ()  # what is stored: a dialogue turn in its conversation
    sparse: SparseVector = field(default_factory=lambda: SparseVector((), ()))
    ttl: int | None = None  # the request's checked ttl_seconds
    given_importance: float | None = None  # the request's checked importance (None: the rules or the LLM rate it)
    now: datetime | None = None  # when the write began (an explicit ttl runs from then)

    @property
    def keep_as_is(self) -> bool:
        return self.request.force or self.request.imported


def new_draft(
    scope: NamespaceScope, request: WriteRequest, limits: EngineLimits, now: datetime, model_id: str
) -> Draft:
    """The request checked (`InvalidArgument`, `NamespaceForbidden`) and the memory it would store, before the
    text pipeline; reads nothing."""
    content = check_content(request.content, limits)
    kind = check_kind(request.kind)
    importance = check_importance(request.importance)
    tags = check_tags(request.tags, limits)
    ttl = check_positive_seconds(request.ttl_seconds, limits, "ttl_seconds")
    session_id = check_session_id(request.session_id)
    metadata = check_json_object(request.metadata, limits.max_metadata_bytes, "metadata")
    request_id = check_request_id(request.request_id)
    namespace = scope.write_target(request.namespace)
    share_to = [scope.write_target(ns) for ns in (request.share_to or [])]
    share_to = [ns for ns in dict.fromkeys(share_to) if ns != namespace]
    created = request.occurred_at or now
    if created.tzinfo is None:
        raise InvalidArgument("occurred_at must carry a timezone")
    created = check_instant(created, "occurred_at")  # however the request was built: readable back
    if request.deleted_at is not None:
        check_instant(request.deleted_at, "deleted_at")
    if request.archived_at is not None:
        check_instant(request.archived_at, "archived_at")
    memory = Memory(
        id=new_memory_id(int(created.timestamp() * 1000)),
        tenant=scope.tenant,
        namespace=namespace,
        kind=kind,
        content=content,
        importance=DEFAULT_IMPORTANCE if importance is None else importance,
        created_at=created,
        updated_at=created,
        last_accessed_at=None,
        access_count=0,
        expires_at=None,
        deleted_at=request.deleted_at if request.imported else None,
        delete_reason=request.delete_reason if request.imported else None,
        archived_at=request.archived_at if request.imported else None,  # stored archived: no dense vector
        archive_reason=request.archive_reason if request.imported else None,
        stored_at=now,
        supersedes=[],
        superseded_by=None,
        origin_id=None,
        session_id=session_id,
        source=Source(
            subject=request.subject,
            request_id=request_id,
            tool=request.tool,
            importer=request.importer if request.imported else None,
        ),
        tags=tags,
        metadata=metadata,
        embedding_model=model_id,
        content_hash=content_hash(attributed(content, metadata)),  # two speakers' same words are two memories
    )
    return Draft(memory, request, share_to, tags, metadata, [], ttl=ttl, given_importance=importance, now=now)


def analysis_job(draft: Draft, settings: PipelineSettings) -> Callable[[], WriteAnalysis]:
    """The text rules of a draft, to run in a worker thread under a CPU budget (memory.pipeline.analysis):
    hostile text never holds the event loop, and a step the budget does not allow is skipped and recorded."""
    memory = draft.memory
    return partial(
        analyse_write,
        memory.content,
        memory.created_at,
        with_density=settings.density_filter and not draft.keep_as_is,
        with_expiry=settings.time_bound_expiry and draft.ttl is None,
        with_importance=draft.given_importance is None and settings.importance_rules,
        speaker=speaker_of(memory.content, draft.metadata),
    )


async def drafted(
    draft: Draft, analysis: WriteAnalysis, settings: PipelineSettings, rater: ImportanceRater | None, now: datetime
) -> Draft | WriteOutcome:
    """The draft with what the text rules found (expiry, importance, claims), or the skip of a memory with too
    little information. Reads nothing from the store (`previous` is the caller's). `now` stands in for a draft
    that does not record when its write began."""
    notes, memory, metadata, ttl = draft.notes, draft.memory, draft.metadata, draft.ttl
    content, now = memory.content, draft.now or now
    wants_rules = draft.given_importance is None and settings.importance_rules
    if (analysed := analysis.notes()) is not None:
        notes["analysis"] = analysed

    # 2. time-bound facts: an explicit ttl wins, else the text's day, relative to the turn's own time
    if ttl is not None:
        memory.expires_at = now + timedelta(seconds=ttl)
        notes["expiry"] = {"rule": "ttl_seconds"}
    elif (bound := analysis.expiry) is not None:  # a plan: kept, demoted in recall once its day has passed
        until = bound.expires_at + timedelta(days=settings.time_bound_grace_days)
        notes["expiry"] = {
            "rule": bound.rule,
            "phrase": bound.phrase,
            "day": bound.day.isoformat(),
            "until": until.isoformat(),
        }
        draft.reasons.append(f"time_bound: {bound.phrase!r}, a plan until {until.isoformat()}")

    if (untrusted := analysis.untrusted) is not None:  # stored as told, marked for whoever reads it
        notes["untrusted"] = untrusted.note()
        draft.reasons.append(f"untrusted: reads as instructions to its reader ({untrusted.reason})")

    verdict = analysis.density
    low_information = verdict is not None and verdict.low_information  # skipped by step 1 below: no LLM call

    # 3. importance: explicit, else the LLM (when configured, within a deadline), else rules
    if wants_rules:
        rated = await rate_importance(
            content,
            rules=analysis.importance,
            rater=None if low_information else rater,
            timeout_seconds=settings.importance_llm_timeout_seconds,
        )
        memory.importance = rated.value
        notes["importance"] = rated.notes

    draft.claims = list(analysis.claims)
    memory.attributes = sorted(c.attribute for c in draft.claims)
    memory.metadata = linking.with_notes(metadata, notes)

    # 1. density filter (after the cheap checks above so the skipped memory shows what it would have been)
    if verdict is not None and verdict.low_information:
        return WriteOutcome(WriteStatus.SKIPPED, memory, reason=verdict.reason, stored=False)
    return draft


def embedding_work(
    draft: Draft, settings: PipelineSettings, keywords: Bm25Encoder
) -> tuple[list[str], Callable[[], SparseVector]]:
    """What embedding a draft computes: the texts to embed, the text as read (`memory.recall.cues.attributed`) and its
    turn context if any, and the job (for a worker thread) of its keyword vector, which holds its day."""
    memory, previous = draft.memory, draft.previous
    content = attributed(memory.content, memory.metadata)
    before = attributed(previous.content, previous.metadata) if previous is not None else None
    context_text = turns.dialogue_context(content, before, settings.turn_context_weight)
    job = partial(keyword_vector, keywords, memory, content, before, settings.turn_context_keyword_weight)
    return ([content] if context_text is None else [content, context_text]), job


def take_vectors(
    draft: Draft, vectors: Sequence[Sequence[float]], sparse: SparseVector, settings: PipelineSettings
) -> None:
    """Give a draft the vectors of its `embedding_work` texts (in that order) and its keyword vector."""
    own, *context = vectors
    draft.own = own
    draft.vector = turns.in_context(own, context[0], settings.turn_context_weight) if context else own
    draft.sparse = sparse

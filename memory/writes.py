"""`MemoryWriter`: the write path of DESIGN §4, from a checked request to stored memories and their links.

Steps: validate; skip an exact repeat (completing it first if an earlier attempt was interrupted); the text
pipeline (density filter, expiry of time-bound facts, importance by rules or an optional LLM, attribute claims);
embed (a dialogue turn in the context of the turn before it); then, holding the namespace's write lock,
re-check the repeat, detect conflicts, and store the memory and its shared copies in one batch carrying their
intent before marking what they supersede (`memory.linking`). Concurrent writes of one namespace therefore
leave one live memory per content and one current value per attribute, and a retry of an interrupted write
completes it. Text is read as `memory.cues` reads it: "Name: text" when the speaker is given only in
`metadata.speaker` (claims, vectors), the keyword document holding the day it happened; content stays as written.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from functools import partial
from typing import Any

import anyio.to_thread

from memory import linking
from memory.archive import restored_copy
from memory.clock import Clock
from memory.cues import attributed, date_words, speaker_of
from memory.embedders.sparse import Bm25Encoder
from memory.errors import InvalidArgument
from memory.hidden import is_passed_plan
from memory.ids import content_hash, new_memory_id
from memory.models import Memory, Source, WriteOutcome, WriteStatus
from memory.pipeline import PipelineSettings, claims, conflict, turns
from memory.pipeline.analysis import WriteAnalysis, analyse_write
from memory.pipeline.budget import CpuBudget
from memory.pipeline.rating import rate_importance
from memory.pipeline.text import has_cjk
from memory.ports import Embedder, ImportanceRater, NamespaceLocks, RecallFilter, SparseVector, VectorStore
from memory.requests import WriteRequest
from memory.scope import NamespaceScope
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

DEFAULT_IMPORTANCE = 0.5
CONFLICT_CPU_SECONDS = 0.05  # thread CPU time the conflict rules may spend on one write's candidates
COMPLETED = "completed an interrupted earlier attempt of this request"
REVIVED = "repeats an archived memory: brought back from the archive"


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


class MemoryWriter:
    def __init__(
        self,
        store: VectorStore,
        embedder: Embedder,
        clock: Clock,
        limits: EngineLimits,
        pipeline: PipelineSettings,
        keywords: Bm25Encoder,
        locks: NamespaceLocks,
        importance_rater: ImportanceRater | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.clock = clock
        self.limits = limits
        self.pipeline = pipeline
        self.keywords = keywords
        self.locks = locks
        self.importance_rater = importance_rater

    async def write(self, scope: NamespaceScope, request: WriteRequest) -> WriteOutcome:
        draft = await self._draft(scope, request)
        if isinstance(draft, WriteOutcome):
            return draft
        await self._embed(draft)
        return await self.commit(scope, draft)

    async def commit(self, scope: NamespaceScope, draft: Draft) -> WriteOutcome:
        """Under the namespace's write lock: the repeat checked again, the vectors redone if another turn of the
        session landed since they were computed, then conflicts and the store (`_store`)."""
        request, namespace = draft.request, draft.memory.namespace
        async with self.locks.hold(scope.tenant, namespace):
            if not request.force and (repeat := await self._repeat(scope, draft.memory, request)) is not None:
                return repeat
            latest = await self._previous_memory(scope, namespace, draft.memory.session_id)
            if _id(latest) != _id(draft.previous):  # another turn of the session landed meanwhile
                draft.previous = latest
                await self._embed(draft)
            return await self._store(scope, draft)

    # -- before the lock: checks and the text pipeline --------------------------------------------------------
    async def _draft(self, scope: NamespaceScope, request: WriteRequest) -> Draft | WriteOutcome:
        draft = self.new_draft(scope, request)
        memory = draft.memory
        if not request.force and (repeat := await self._repeat(scope, memory, request)) is not None:
            return repeat
        drafted = await self.drafted(draft, await anyio.to_thread.run_sync(self.analysis_job(draft)))
        if isinstance(drafted, Draft):
            drafted.previous = await self._previous_memory(scope, memory.namespace, memory.session_id)
        return drafted

    def new_draft(self, scope: NamespaceScope, request: WriteRequest) -> Draft:
        """The request checked (`InvalidArgument`, `NamespaceForbidden`) and the memory it would store, before the
        text pipeline; reads nothing."""
        limits = self.limits
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
        now = self.clock.now()
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
            source=Source(subject=request.subject, request_id=request_id, tool=request.tool),
            tags=tags,
            metadata=metadata,
            embedding_model=self.embedder.model_id,
            content_hash=content_hash(attributed(content, metadata)),  # two speakers' same words are two memories
        )
        return Draft(memory, request, share_to, tags, metadata, [], ttl=ttl, given_importance=importance, now=now)

    def analysis_job(self, draft: Draft) -> Callable[[], WriteAnalysis]:
        """The text rules of a draft, to run in a worker thread under a CPU budget (memory.pipeline.analysis):
        hostile text never holds the event loop, and a step the budget does not allow is skipped and recorded."""
        settings, memory = self.pipeline, draft.memory
        return partial(
            analyse_write,
            memory.content,
            memory.created_at,
            with_density=settings.density_filter and not draft.keep_as_is,
            with_expiry=settings.time_bound_expiry and draft.ttl is None,
            with_importance=draft.given_importance is None and settings.importance_rules,
            speaker=speaker_of(memory.content, draft.metadata),
        )

    async def drafted(self, draft: Draft, analysis: WriteAnalysis) -> Draft | WriteOutcome:
        """The draft with what the text rules found (expiry, importance, claims), or the skip of a memory with
        too little information. Reads nothing from the store (`previous` is the caller's)."""
        settings, notes, memory, metadata, ttl = self.pipeline, draft.notes, draft.memory, draft.metadata, draft.ttl
        content, now = memory.content, draft.now or self.clock.now()
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

        verdict = analysis.density
        low_information = verdict is not None and verdict.low_information  # skipped by step 1 below: no LLM call

        # 3. importance: explicit, else the LLM (when configured, within a deadline), else rules
        if wants_rules:
            rated = await rate_importance(
                content,
                rules=analysis.importance,
                rater=None if low_information else self.importance_rater,
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

    async def vectors_of(self, scope: NamespaceScope, memory: Memory) -> tuple[Sequence[float], SparseVector]:
        """A stored memory's vectors computed again as its write computed them (in the context of the turn it
        follows): how a memory brought back from the archive is put back in the index."""
        previous = await self.store.get(scope, memory.follows) if memory.follows is not None else None
        request = WriteRequest(content=memory.content, subject=memory.source.subject)
        draft = Draft(memory, request, [], memory.tags, memory.metadata, [], previous=previous)
        await self._embed(draft)
        return draft.vector, draft.sparse

    async def _embed(self, draft: Draft) -> None:
        texts, keywords = self.embedding_work(draft)
        vectors = await self.embedder.embed_documents(texts)
        self.take_vectors(draft, vectors, await anyio.to_thread.run_sync(keywords))

    def embedding_work(self, draft: Draft) -> tuple[list[str], Callable[[], SparseVector]]:
        """What `_embed` computes for a draft: the texts to embed, the text as read (`memory.cues.attributed`) and
        its turn context if any, and the job (for a worker thread) of its keyword vector, which holds its day."""
        settings, memory, previous = self.pipeline, draft.memory, draft.previous
        content = attributed(memory.content, memory.metadata)
        before = attributed(previous.content, previous.metadata) if previous is not None else None
        context_text = turns.dialogue_context(content, before, settings.turn_context_weight)
        keywords = f"{content}\n{date_words(memory.created_at, chinese=has_cjk(content))}"
        job = partial(turns.keyword_vector, self.keywords, keywords, before, settings.turn_context_keyword_weight)
        return ([content] if context_text is None else [content, context_text]), job

    def take_vectors(self, draft: Draft, vectors: Sequence[Sequence[float]], sparse: SparseVector) -> None:
        """Give a draft the vectors of its `embedding_work` texts (in that order) and its keyword vector."""
        own, *context = vectors
        draft.own = own
        draft.vector = turns.in_context(own, context[0], self.pipeline.turn_context_weight) if context else own
        draft.sparse = sparse

    async def repeat(self, scope: NamespaceScope, memory: Memory, request: WriteRequest) -> WriteOutcome | None:
        """`_repeat`, for a batch's item that the text rules skipped (`memory.batch_writes`)."""
        return await self._repeat(scope, memory, request)

    async def _repeat(self, scope: NamespaceScope, memory: Memory, request: WriteRequest) -> WriteOutcome | None:
        """An exact repeat of `memory` already stored: completed if its write was interrupted, and answered as
        the first attempt when it is this very request (same subject, tool and request id), else skipped."""
        now = self.clock.now()
        digest, namespace = memory.content_hash, memory.namespace
        live_only = not request.skip_deleted_repeats
        existing = await self.store.find_by_hash(scope, namespace, digest, live_only=live_only, now=now)
        if existing is None and live_only:
            # this request's own memory may be stored superseded (an old statement arriving late), or the text
            # may be an archived memory's
            found = await self.store.find_by_hash(scope, namespace, digest, live_only=False, now=now)
            if found is not None and memory.source.request_id is not None and found.source == memory.source:
                existing = found
            elif found is not None:
                return await self._revived(scope, found, now)
        if existing is None or (is_passed_plan(existing, now) and existing.source != memory.source):
            return None  # a plan said again once its day has passed is a new plan
        superseded = await linking.complete_links(self.store, scope, existing, now)
        if memory.source.request_id is not None and existing.source == memory.source:
            conflict_note = linking.pipeline_notes(existing).get("conflict")
            updated = isinstance(conflict_note, dict) and conflict_note.get("action") == "updated"
            status = WriteStatus.UPDATED if updated else WriteStatus.CREATED
            return WriteOutcome(status, existing, superseded=superseded, reason=COMPLETED)
        return WriteOutcome(WriteStatus.SKIPPED, existing, reason="duplicate of an existing memory")

    async def _revived(self, scope: NamespaceScope, found: Memory, now: datetime) -> WriteOutcome | None:
        """A repeat of a memory maintenance archived (and nobody forgot or replaced) brings that memory back
        instead of storing a second copy beside it: said again, it is in use. None for any other hidden memory
        (a forgotten or superseded text said again is a new memory)."""
        if found.archived_at is None or found.deleted_at is not None or found.superseded_by is not None:
            return None
        revived = restored_copy(found, now, self.embedder.model_id)
        dense, sparse = await self.vectors_of(scope, revived)
        await self.store.upsert(scope, [(revived, dense, sparse)])
        return WriteOutcome(WriteStatus.SKIPPED, revived, reason=REVIVED)

    # -- under the lock: conflicts, then one batch and its links ----------------------------------------------
    async def _store(self, scope: NamespaceScope, draft: Draft) -> WriteOutcome:
        memory, notes, reasons = draft.memory, draft.notes, draft.reasons
        now = self.clock.now()
        decision = conflict.ConflictDecision()
        if self.pipeline.conflict_detection and not draft.request.force:  # force: stored as is, nothing changes
            candidates = await self._conflict_candidates(scope, memory, draft.own, now)
            decision = await anyio.to_thread.run_sync(
                lambda: conflict.decide(
                    memory.content,
                    memory.created_at,
                    candidates,
                    self.pipeline,
                    draft.claims,
                    CpuBudget(CONFLICT_CPU_SECONDS),
                    subject=memory.source.subject,
                    metadata=memory.metadata,
                )
            )
            if decision.unexamined:  # the CPU budget ran out: those candidates are left as they are
                notes["analysis"] = {**notes.get("analysis", {}), "conflict_unexamined": decision.unexamined}
            if draft.keep_as_is and decision.update is not None:  # imported: always a new memory
                decision = conflict.ConflictDecision(supersede=decision.supersede)
            if decision.superseded_by is not None:  # an old statement arriving late: stored as history
                newer = decision.superseded_by
                memory.superseded_by = newer.memory.id
                notes["superseded"] = {"by": newer.memory.id, "reason": newer.reason, "at": now.isoformat()}
                reasons.insert(0, f"superseded on arrival by {newer.memory.id}: {newer.reason}")
        targets = decision.supersede
        old_copies = await linking.target_copies(self.store, scope, targets) if targets else {}
        why = linking.copy_reasons(targets, old_copies)
        if targets:
            notes[linking.INTENT] = linking.intent_entries([t.memory for t in targets], why)
        memory.metadata = linking.with_notes(draft.metadata, notes)

        if decision.update is not None:
            stored, copies = await self._updated(scope, draft, decision, old_copies, why)
            reasons.insert(0, f"near_duplicate of {stored.id} (similarity {decision.update_similarity:.3f}): updated")
            status = WriteStatus.UPDATED
        else:
            stored = memory
            stored.supersedes = [t.memory.id for t in targets]
            stored.follows = _id(draft.previous)
            copies = [
                linking.new_copy(
                    stored,
                    ns,
                    tags=draft.tags,
                    metadata=draft.metadata,
                    follows=_id(await self._previous_memory(scope, ns, stored.session_id)),
                    supersedes=old_copies.get(ns, []),
                    reasons=why,
                )
                for ns in draft.share_to
            ]
            status = WriteStatus.CREATED
        items = [(m, draft.vector, draft.sparse) for m in (stored, *copies)]
        superseded = await linking.store_with_links(self.store, scope, items, now)
        if superseded:
            reasons.insert(0, "supersedes " + "; ".join(f"{t.memory.id}: {t.reason}" for t in targets))
        return WriteOutcome(status, stored, superseded=superseded, reason="; ".join(reasons) or None)

    async def _updated(
        self,
        scope: NamespaceScope,
        draft: Draft,
        decision: conflict.ConflictDecision,
        old_copies: dict[str, list[Memory]],
        why: dict[str, str],
    ) -> tuple[Memory, list[Memory]]:
        """A near-duplicate given the new wording in place (same id), its copies brought along, and new copies
        for namespaces it was not shared to yet; nothing private reaches a copy (`memory.linking`)."""
        old, new = decision.update, draft.memory
        assert old is not None
        similarity = decision.update_similarity or 0.0
        notes = linking.pipeline_notes(new)
        notes["conflict"] = {
            "action": "updated",
            "similarity": round(similarity, 4),
            "previous_content": old.content[:500],
            "previous_source": {"subject": old.source.subject, "request_id": old.source.request_id},
        }
        explicit = draft.request.importance is not None
        updated = replace(
            old,
            content=new.content,
            content_hash=new.content_hash,
            updated_at=max(old.updated_at, new.created_at),
            importance=new.importance if explicit else max(old.importance, new.importance),
            expires_at=new.expires_at,
            tags=list(dict.fromkeys([*old.tags, *new.tags])),
            metadata=linking.with_notes({**old.metadata, **draft.metadata}, notes),
            source=new.source,
            session_id=new.session_id or old.session_id,
            attributes=new.attributes,
            embedding_model=new.embedding_model,
            supersedes=list(dict.fromkeys([*old.supersedes, *(t.memory.id for t in decision.supersede)])),
        )
        if old.origin_id is not None:  # a copy met in its own namespace: only it changes
            return updated, []
        copies = [
            linking.updated_copy(
                c,
                updated,
                tags=draft.tags,
                metadata=draft.metadata,
                similarity=similarity,
                supersedes=old_copies.get(c.namespace, []),
                reasons=why,
            )
            for c in await self.store.copies_of(scope, old.id)
        ]
        present = {c.namespace for c in copies}
        for ns in draft.share_to:
            if ns not in present and ns != old.namespace:
                follows = _id(await self._previous_memory(scope, ns, updated.session_id))
                fresh = replace(updated, metadata=new.metadata, tags=draft.tags)
                copies.append(
                    linking.new_copy(
                        fresh,
                        ns,
                        tags=draft.tags,
                        metadata=draft.metadata,
                        follows=follows,
                        supersedes=old_copies.get(ns, []),
                        reasons=why,
                    )
                )
        return updated, copies

    async def _conflict_candidates(
        self, scope: NamespaceScope, memory: Memory, vector: Sequence[float], now: datetime
    ) -> list[tuple[Memory, float]]:
        """Live memories of the namespace and kind nearest to the new one, and those stating its attributes."""
        limit = self.pipeline.conflict_candidates
        nearest = RecallFilter(now=now, kinds=(memory.kind,))
        found = await self.store.search(scope, (memory.namespace,), vector, limit, nearest)
        if memory.attributes:
            same = RecallFilter(now=now, kinds=(memory.kind,), attributes=tuple(memory.attributes))
            found += await self.store.search(scope, (memory.namespace,), vector, limit, same)
        return [(c.memory, c.similarity) for c in found]

    async def _previous_memory(self, scope: NamespaceScope, namespace: str, session_id: str | None) -> Memory | None:
        """The memory written last in that session and namespace (what a new one follows), if any."""
        if session_id is None:
            return None
        return await self.store.latest_in_session(scope, namespace, session_id)


def _id(memory: Memory | None) -> str | None:
    return memory.id if memory is not None else None

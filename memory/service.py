"""`MemoryService`: the engine's episodic and semantic memory operations, each under a `NamespaceScope`.

Write: validate, skip exact repeats, then the write pipeline of DESIGN §4 (`memory.pipeline`): density filter,
expiry of time-bound facts, importance (rules, or an optional LLM within a deadline), conflict detection (update a
near-duplicate in place or supersede contradicted memories), then embed (dense, a dialogue turn in the context of
the turn before it; BM25 sparse, a dialogue turn's with the previous turn's words at a small weight) and store,
with linked copies for `share_to` and provenance.
Recall: one scoped hybrid search (dense + keyword candidates) over every target namespace, a keyword-only search
with pseudo-relevance feedback (`memory.feedback`), the scores fused into a relevance lifted by cues read from
the text (`memory.cues`: the speaker the query names, a time for a "when" query) and by conversation context
(`memory.ranking`), then the multi-signal rescoring with the tenant's weights (`memory.recall`), one hit
per origin, a token budget, and access counts bumped off the request path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import anyio

from memory.access import AccessRecorder
from memory.clock import Clock
from memory.cues import query_cues
from memory.cursors import decode_cursor, encode_cursor
from memory.embedders.sparse import Bm25Encoder
from memory.errors import InvalidArgument, NamespaceForbidden, NotFound
from memory.feedback import feedback_query, with_feedback
from memory.ids import content_hash, new_memory_id, parse_memory_id
from memory.models import Memory, MemoryKind, MemoryPage, RecallHit, Source, WriteOutcome, WriteStatus
from memory.pipeline import PIPELINE_KEY, PipelineSettings, claims, conflict, density, expiry, for_embedder, turns
from memory.pipeline.rating import rate_importance
from memory.ports import Embedder, ImportanceRater, ListQuery, RecallFilter, SparseVector, VectorStore
from memory.ranking import select_hits
from memory.recall import recall_filter, scored_hits, without_foreign_origins
from memory.requests import ListRequest, RecallRequest, WriteRequest
from memory.scope import NamespaceScope, validate_namespace
from memory.scoring import ScoringWeights
from memory.validation import (
    EngineLimits,
    check_content,
    check_importance,
    check_json_object,
    check_kind,
    check_limit,
    check_positive_seconds,
    check_request_id,
    check_session_id,
    check_tags,
    check_top_k,
)

DEFAULT_IMPORTANCE = 0.5
CANDIDATE_FACTOR = 2


class MemoryService:
    def __init__(
        self,
        store: VectorStore,
        embedder: Embedder,
        clock: Clock,
        limits: EngineLimits | None = None,
        weights: ScoringWeights | None = None,
        pipeline: PipelineSettings | None = None,
        tenant_weights: Mapping[str, ScoringWeights] | None = None,
        hybrid: bool = True,
        importance_rater: ImportanceRater | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.clock = clock
        self.limits = limits or EngineLimits()
        self.weights = weights or ScoringWeights()
        self.tenant_weights = dict(tenant_weights or {})  # per-tenant overrides of `weights`
        self.pipeline = pipeline or for_embedder(embedder.model_id)
        self.hybrid = hybrid  # recall with dense + keyword candidates (False: dense only, for comparisons)
        self.importance_rater = importance_rater  # the optional LLM of write step 3 (rules without it)
        self.keywords = Bm25Encoder()
        self.access = AccessRecorder(store, clock)

    def weights_for(self, tenant: str) -> ScoringWeights:
        """The recall scoring weights of one tenant: its own if configured, else the defaults."""
        return self.tenant_weights.get(tenant, self.weights)

    # -- background work -------------------------------------------------------------------------------------
    def attach_task_group(self, task_group: anyio.abc.TaskGroup | None) -> None:
        """Record access counts in this task group (the app's lifespan); without one they are applied inline."""
        self.access.attach_task_group(task_group)

    async def drain(self) -> None:
        """Wait until every noted access-count update has been applied."""
        await self.access.drain()

    # -- write -----------------------------------------------------------------------------------------------
    async def write(self, scope: NamespaceScope, request: WriteRequest) -> WriteOutcome:
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

        digest = content_hash(content)
        if not request.force:
            existing = await self.store.find_by_hash(
                scope, namespace, digest, live_only=not request.skip_deleted_repeats, now=self.clock.now()
            )
            if existing is not None:
                return WriteOutcome(WriteStatus.SKIPPED, existing, reason="duplicate of an existing memory")

        now = self.clock.now()
        created = request.occurred_at or now
        if created.tzinfo is None:
            raise InvalidArgument("occurred_at must carry a timezone")
        settings = self.pipeline
        notes: dict[str, Any] = {}
        reasons: list[str] = []

        # 2. time-bound facts: an explicit ttl wins, else the text's day, relative to the turn's own time
        expires: datetime | None = None
        if ttl is not None:
            expires = now + timedelta(seconds=ttl)
            notes["expiry"] = {"rule": "ttl_seconds"}
        elif settings.time_bound_expiry and (bound := expiry.find_expiry(content, created)) is not None:
            expires = bound.expires_at + timedelta(days=settings.time_bound_grace_days)
            notes["expiry"] = {"rule": bound.rule, "phrase": bound.phrase, "day": bound.day.isoformat()}
            reasons.append(f"time_bound: {bound.phrase!r} expires at {expires.isoformat()}")

        keep_as_is = request.force or request.imported
        verdict = density.assess(content) if settings.density_filter and not keep_as_is else None
        low_information = verdict is not None and verdict.low_information  # skipped by step 1 below: no LLM call

        # 3. importance: explicit, else the LLM (when configured, within a deadline), else rules
        if importance is None and settings.importance_rules:
            rated = await rate_importance(
                content,
                time_bound="expiry" in notes and ttl is None,
                rater=None if low_information else self.importance_rater,
                timeout_seconds=settings.importance_llm_timeout_seconds,
            )
            importance = rated.value
            notes["importance"] = rated.notes
        elif importance is None:
            importance = DEFAULT_IMPORTANCE

        stated = claims.extract(content)
        memory = Memory(
            id=new_memory_id(int(created.timestamp() * 1000)),
            tenant=scope.tenant,
            namespace=namespace,
            kind=kind,
            content=content,
            importance=importance,
            created_at=created,
            updated_at=created,
            last_accessed_at=None,
            access_count=0,
            expires_at=expires,
            deleted_at=None,
            supersedes=[],
            superseded_by=None,
            origin_id=None,
            session_id=session_id,
            source=Source(subject=request.subject, request_id=request_id, tool=request.tool),
            tags=tags,
            metadata={**metadata, PIPELINE_KEY: notes} if notes else metadata,
            embedding_model=self.embedder.model_id,
            content_hash=digest,
            attributes=sorted(c.attribute for c in stated),
        )

        # 1. density filter (after the cheap checks above so the skipped memory shows what it would have been)
        if verdict is not None and verdict.low_information:
            return WriteOutcome(WriteStatus.SKIPPED, memory, reason=verdict.reason, stored=False)

        previous = await self._previous_memory(scope, namespace, session_id)
        before = previous.content if previous is not None else None
        context_text = turns.dialogue_context(content, before, settings.turn_context_weight)
        own, *context = await self.embedder.embed_documents(
            [content] if context_text is None else [content, context_text]
        )
        # stored: the turn in its conversation; conflicts are looked up by what this memory says on its own
        vector = turns.in_context(own, context[0], settings.turn_context_weight) if context else own
        sparse = turns.keyword_vector(self.keywords, content, before, settings.turn_context_keyword_weight)

        # 4. conflicts with what the namespace already holds
        decision = conflict.ConflictDecision()
        if settings.conflict_detection:
            candidates = await self._conflict_candidates(scope, memory, own, now)
            decision = conflict.decide(content, created, candidates, settings, stated)
            if keep_as_is and decision.update is not None:  # forced or imported: always a new memory
                decision = conflict.ConflictDecision(supersede=decision.supersede)
            if decision.superseded_by is not None:  # an old statement arriving late: stored as history
                newer = decision.superseded_by
                memory.superseded_by = newer.memory.id
                notes["superseded"] = {"by": newer.memory.id, "reason": newer.reason, "at": now.isoformat()}
                memory.metadata = {**memory.metadata, PIPELINE_KEY: notes}
                reasons.insert(0, f"superseded on arrival by {newer.memory.id}: {newer.reason}")

        # 5. store
        if decision.update is not None:
            stored = await self._update_in_place(
                scope, decision, memory, vector, sparse, share_to, explicit_importance=request.importance is not None
            )
            reasons.insert(0, f"near_duplicate of {stored.id} (similarity {decision.update_similarity:.3f}): updated")
            status = WriteStatus.UPDATED
        else:
            stored = memory
            stored.supersedes = [s.memory.id for s in decision.supersede]
            stored.follows = previous.id if previous is not None else None
            copies = []
            for ns in share_to:
                last = await self._previous_memory(scope, ns, session_id)
                copy_id = new_memory_id(int(created.timestamp() * 1000))
                follows = last.id if last is not None else None
                copies.append(replace(stored, id=copy_id, namespace=ns, origin_id=stored.id, follows=follows))
            await self.store.upsert(scope, [(m, vector, sparse) for m in (stored, *copies)])
            status = WriteStatus.CREATED
            if decision.superseded_by is not None:
                current = decision.superseded_by.memory
                current.supersedes = [*current.supersedes, stored.id]
                await self.store.update(scope, current)
        superseded = await self._supersede(scope, stored, decision.supersede, now)
        if superseded:
            why = "; ".join(f"{s.memory.id}: {s.reason}" for s in decision.supersede)
            reasons.insert(0, f"supersedes {why}")
        return WriteOutcome(status, stored, superseded=superseded, reason="; ".join(reasons) or None)

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

    async def _update_in_place(
        self,
        scope: NamespaceScope,
        decision: conflict.ConflictDecision,
        new: Memory,
        vector: Sequence[float],
        sparse: SparseVector,
        share_to: list[str],
        *,
        explicit_importance: bool,
    ) -> Memory:
        """Replace a near-duplicate's content and vectors (same id), and those of its shared copies."""
        old = decision.update
        assert old is not None
        notes = dict(new.metadata.get(PIPELINE_KEY) or {})
        notes["conflict"] = {
            "action": "updated",
            "similarity": round(decision.update_similarity or 0.0, 4),
            "previous_content": old.content[:500],
            "previous_source": {"subject": old.source.subject, "request_id": old.source.request_id},
        }
        changes: dict[str, Any] = {
            "content": new.content,
            "content_hash": new.content_hash,
            "updated_at": max(old.updated_at, new.created_at),
            "importance": new.importance if explicit_importance else max(old.importance, new.importance),
            "expires_at": new.expires_at,
            "tags": list(dict.fromkeys([*old.tags, *new.tags])),
            "metadata": {**old.metadata, **new.metadata, PIPELINE_KEY: notes},
            "source": new.source,
            "session_id": new.session_id or old.session_id,
            "attributes": new.attributes,
            "embedding_model": new.embedding_model,
            "supersedes": list(dict.fromkeys([*old.supersedes, *(s.memory.id for s in decision.supersede)])),
        }
        updated = replace(old, **changes)
        copies = [replace(c, **changes) for c in await self._with_copies(scope, old) if c.id != old.id]
        if old.origin_id is None:
            present = {c.namespace for c in copies}
            copies += [
                replace(
                    updated, id=new_memory_id(int(new.created_at.timestamp() * 1000)), namespace=ns, origin_id=old.id
                )
                for ns in share_to
                if ns not in present and ns != old.namespace
            ]
        await self.store.upsert(scope, [(m, vector, sparse) for m in (updated, *copies)])
        return updated

    async def _supersede(
        self, scope: NamespaceScope, new: Memory, replaced: list[conflict.Superseded], now: datetime
    ) -> list[str]:
        """Mark older memories (and their shared copies) superseded by `new`: kept, but no longer recalled."""
        ids: list[str] = []
        for item in replaced:
            for old in await self._with_copies(scope, item.memory):
                if old.superseded_by is not None or old.deleted_at is not None:
                    continue
                old.superseded_by = new.id
                notes = dict(old.metadata.get(PIPELINE_KEY) or {})
                notes["superseded"] = {"by": new.id, "reason": item.reason, "at": now.isoformat()}
                old.metadata = {**old.metadata, PIPELINE_KEY: notes}
                await self.store.update(scope, old)
            ids.append(item.memory.id)
        return ids

    # -- recall ----------------------------------------------------------------------------------------------
    async def recall(self, scope: NamespaceScope, request: RecallRequest) -> list[RecallHit]:
        query = check_content(request.query, self.limits, field="query")
        top_k = check_top_k(request.top_k, self.limits)
        namespaces = self._namespaces(scope, request.namespaces)
        flt = recall_filter(request, self.limits, self.clock.now())
        vector = await self.embedder.embed_query(query)
        sparse = self.keywords.query(query) if self.hybrid else None
        # superseded memories are searched too: one that matches is answered by the memory that replaced it
        wide = replace(flt, include_superseded=True)
        limit = top_k * CANDIDATE_FACTOR
        candidates = await self.store.search(scope, namespaces, vector, limit, wide, sparse)
        weights = self.weights_for(scope.tenant)
        expanded = feedback_query(sparse, candidates, weights.feedback) if sparse is not None else None
        if expanded is not None:
            held = {c.memory.id: c for c in candidates}  # only new hits are read from the store
            second = await self.store.search(
                scope, namespaces, vector, limit, wide, expanded, by_meaning=False, known=held
            )
            candidates = with_feedback(candidates, second)
        hits = await scored_hits(self.store, scope, candidates, namespaces, flt, weights, query_cues(query))
        chosen = select_hits(hits, top_k, request.token_budget)
        await self.access.record(scope, [h.memory.id for h in chosen])
        shown = await without_foreign_origins(self.store, scope, [h.memory for h in chosen])
        return [replace(hit, memory=memory) for hit, memory in zip(chosen, shown, strict=True)]

    def _namespaces(self, scope: NamespaceScope, requested: Sequence[str] | None) -> tuple[str, ...]:
        if requested is not None and len(requested) > self.limits.max_namespaces_per_call:
            raise InvalidArgument(f"at most {self.limits.max_namespaces_per_call} namespaces per call")
        return scope.read_targets(requested)

    # -- forget / restore / get / list -----------------------------------------------------------------------
    async def get(self, scope: NamespaceScope, memory_id: str) -> Memory:
        canonical = parse_memory_id(memory_id)
        if canonical is None:
            raise InvalidArgument("id must be a memory id (a UUID string)")
        if not scope.admin and not scope.all_readable:  # no grant at all: nothing is visible, say so uniformly
            raise NotFound("no memory with that id is visible to this token")
        memory = await self.store.get(scope, canonical)
        if memory is None:
            raise NotFound("no memory with that id is visible to this token")
        return memory

    async def _get_writable(self, scope: NamespaceScope, memory_id: str) -> Memory:
        memory = await self.get(scope, memory_id)
        if not scope.can_write(memory.namespace):
            raise NamespaceForbidden("this token may read but not change memories in that namespace")
        return memory

    async def _with_copies(self, scope: NamespaceScope, memory: Memory) -> list[Memory]:
        """An origin and its linked copies in writable namespaces (a copy alone when a copy is named)."""
        if memory.origin_id is not None:
            return [memory]
        return [memory, *await self.store.copies_of(scope, memory.id)]

    async def forget(self, scope: NamespaceScope, memory_id: str, reason: str | None = None) -> Memory:
        """Soft-delete a memory; forgetting an origin also forgets its shared copies."""
        if reason is not None and (not isinstance(reason, str) or len(reason) > 500):
            raise InvalidArgument("reason must be a string of at most 500 characters")
        memory = await self._get_writable(scope, memory_id)
        now = self.clock.now()
        for item in await self._with_copies(scope, memory):
            if item.deleted_at is None:
                item.deleted_at = now
                item.delete_reason = reason
                await self.store.update(scope, item)
        return memory

    async def restore(self, scope: NamespaceScope, memory_id: str) -> Memory:
        """Undo `forget`, for the memory and (for an origin) its shared copies."""
        memory = await self._get_writable(scope, memory_id)
        for item in await self._with_copies(scope, memory):
            if item.deleted_at is not None:
                item.deleted_at = None
                item.delete_reason = None
                await self.store.update(scope, item)
        return memory

    async def purge(self, scope: NamespaceScope, namespace: str) -> int:
        """Hard-delete a whole namespace: the only hard delete there is, for admin scopes only."""
        if not scope.admin:
            raise NamespaceForbidden("purging a namespace needs the memory:admin scope")
        return await self.store.purge(scope, validate_namespace(namespace))

    async def list(self, scope: NamespaceScope, request: ListRequest) -> MemoryPage:
        namespaces = scope.read_targets(None if request.namespace is None else [request.namespace])
        kind: MemoryKind | None = None if request.kind is None else check_kind(request.kind)
        limit = check_limit(request.limit, self.limits)
        after = decode_cursor(request.cursor)
        memories, next_id = await self.store.list(
            scope, ListQuery(namespaces, kind, bool(request.include_deleted), limit, after)
        )
        return MemoryPage(await without_foreign_origins(self.store, scope, memories), encode_cursor(next_id))

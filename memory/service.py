"""`MemoryService`: the engine's episodic and semantic memory operations, each under a `NamespaceScope`.

Write: `memory.write.writer` (validate, skip exact repeats, the write pipeline of docs/DESIGN.md § "The write path",
embed, then under the namespace's write lock conflict detection and one batch with linked copies, completed by
`memory.write.linking`). Forget and restore take the same lock, so an origin and its copies never disagree. Archive
moves one memory out of the dense index (`memory.lifecycle.archive`); restore brings it back, embedded again.
Recall: two scoped searches over every target namespace (by meaning, then by keywords expanded by what the first
found: pseudo-relevance feedback, `memory.recall.steps.searched`), the scores fused into a relevance lifted by cues read
from the text (`memory.recall.cues`: the speaker the query names, a time for a "when" query) and by conversation context
(`memory.recall.ranking`), then the multi-signal rescoring with the tenant's weights (`memory.recall.steps`), one hit
per origin, a token budget, and access counts bumped off the request path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import anyio

from memory.clock import Clock
from memory.cursors import decode_cursor, encode_cursor
from memory.embedders.sparse import Bm25Encoder
from memory.errors import InvalidArgument, NamespaceForbidden, NotFound
from memory.ids import parse_memory_id
from memory.lifecycle.archive import archived_copy, is_live, restored_copy
from memory.lifecycle.hidden import HideObserver, check_hidden_state, ignore_hides, list_hidden, tell_write_hides
from memory.lifecycle.visibility import as_seen_by
from memory.locking import InProcessNamespaceLocks
from memory.models import Memory, MemoryKind, MemoryPage, RecallHit, WriteOutcome
from memory.pipeline import PipelineSettings, for_embedder
from memory.pipeline.analysis import analysed_query
from memory.ports import Embedder, ImportanceRater, ListQuery, NamespaceLocks, VectorStore
from memory.recall.access import AccessRecorder
from memory.recall.ranking import select_hits
from memory.recall.scoring import ScoringWeights
from memory.recall.steps import recall_filter, scored_hits, searched
from memory.requests import ListRequest, RecallRequest, WriteRequest
from memory.scope import NamespaceScope, validate_namespace
from memory.validation import (
    EngineLimits,
    check_kind,
    check_limit,
    check_query,
    recall_depth,
)
from memory.values import check_text
from memory.versions import history
from memory.write.batch import BatchResult, write_batch
from memory.write.growth import WriteObserver, ignore_writes, tell_write_growth
from memory.write.linking import superseded_copy
from memory.write.writer import MemoryWriter

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
        locks: NamespaceLocks | None = None,
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
        self.on_hidden: HideObserver = (
            ignore_hides  # told of each hide (`memory.lifecycle.hidden`); the gateway counts them
        )
        self.on_written: WriteObserver = (
            ignore_writes  # told what each write added (`memory.write.growth`); counted too
        )
        self.locks: NamespaceLocks = locks or InProcessNamespaceLocks()
        self.writer = MemoryWriter(
            store, embedder, clock, self.limits, self.pipeline, self.keywords, self.locks, importance_rater
        )

    def weights_for(self, tenant: str) -> ScoringWeights:
        """The recall scoring weights of one tenant: its own if configured, else the defaults."""
        return self.tenant_weights.get(tenant, self.weights)

    def use_calibration(
        self, weights: ScoringWeights, tenant_weights: Mapping[str, ScoringWeights], pipeline: PipelineSettings
    ) -> None:
        """The recall weights and write pipeline calibrated for a new embedder, after a re-embedding switched
        the store and embedder this service holds (`memory.reembed.migration`)."""
        self.weights = weights
        self.tenant_weights = dict(tenant_weights)
        self.pipeline = pipeline
        self.writer.pipeline = pipeline

    # -- background work -------------------------------------------------------------------------------------
    def attach_task_group(self, task_group: anyio.abc.TaskGroup | None) -> None:
        """Record access counts in this task group (the app's lifespan); without one they are applied inline."""
        self.access.attach_task_group(task_group)

    async def drain(self) -> None:
        """Wait until every noted access-count update has been applied."""
        await self.access.drain()

    # -- write -----------------------------------------------------------------------------------------------
    async def write(self, scope: NamespaceScope, request: WriteRequest) -> WriteOutcome:
        """Store one memory through the write pipeline (`memory.write.writer`)."""
        outcome = await self.writer.write(scope, request)
        tell_write_hides(outcome, self.on_hidden)
        tell_write_growth(scope.tenant, outcome, self.on_written)
        return outcome

    async def write_many(self, scope: NamespaceScope, requests: Sequence[WriteRequest]) -> list[BatchResult]:
        """Store memories in order with the outcomes of writing them one by one, sharing the embedding and the
        text rules (`memory.write.batch`); one outcome, or the engine error of that item, per request."""
        results = await write_batch(self.writer, scope, requests, self.limits.max_batch_items)
        for result in results:
            if isinstance(result, WriteOutcome):
                tell_write_hides(result, self.on_hidden)
                tell_write_growth(scope.tenant, result, self.on_written)
        return results

    # -- recall ----------------------------------------------------------------------------------------------
    async def recall(self, scope: NamespaceScope, request: RecallRequest) -> list[RecallHit]:
        query = check_query(request.query, self.limits)
        top_k = recall_depth(request.top_k, request.token_budget, self.limits)
        namespaces = self._namespaces(scope, request.namespaces)
        flt = recall_filter(request, self.limits, self.clock.now())
        vector = await self.embedder.embed_query(query)
        # keywords and cues under a CPU budget (a skipped step: dense-only, neutral cues)
        analysis = await analysed_query(query, self.keywords if self.hybrid else None)
        sparse = analysis.keywords
        # superseded memories are searched too: one that matches is answered by the memory that replaced it
        wide = replace(flt, include_superseded=True)
        limit = max(top_k * CANDIDATE_FACTOR, self.limits.recall_candidates)
        weights = self.weights_for(scope.tenant)
        candidates = await searched(self.store, scope, namespaces, vector, sparse, limit, wide, weights, analysis.cues)
        hits = await scored_hits(self.store, scope, candidates, namespaces, flt, weights, analysis.cues)
        least = min(top_k, self.limits.default_top_k)  # what a text cut to the budget left out is `omitted`
        chosen = select_hits(hits, top_k, request.token_budget, least=least)
        await self.access.record(scope, [h.memory.id for h in chosen])
        shown = await as_seen_by(self.store, scope, [h.memory for h in chosen])
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
        if reason is not None:
            check_text(reason, "reason")
        memory = await self._get_writable(scope, memory_id)
        async with self.locks.hold(scope.tenant, memory.namespace):
            memory = await self._get_writable(scope, memory_id)  # as it is now that no write of it runs
            now = self.clock.now()
            for item in reversed(await self._with_copies(scope, memory)):  # copies first, the origin last
                if item.deleted_at is None:
                    item.deleted_at = now
                    item.delete_reason = reason
                    await self.store.update(scope, item)
        return memory

    async def supersede(self, scope: NamespaceScope, memory_id: str, by: str, reason: str) -> Memory:
        """Mark a memory superseded by another of the same namespace (a re-extraction replacing its earlier
        facts), with the reason; it stays listable as hidden (`superseded`)."""
        successor = await self._get_writable(scope, by)
        memory = await self._get_writable(scope, memory_id)
        if successor.namespace != memory.namespace:
            raise InvalidArgument("a memory can only be superseded by one of its own namespace")
        async with self.locks.hold(scope.tenant, memory.namespace):
            memory = await self._get_writable(scope, memory_id)
            if memory.superseded_by is None and memory.deleted_at is None:
                memory = superseded_copy(memory, by, reason, self.clock.now())
                await self.store.update(scope, memory)
        return memory

    async def archive(self, scope: NamespaceScope, memory_id: str, reason: str) -> Memory:
        """Move a live memory to the archive (`memory.lifecycle.archive`): kept whole, out of the dense index and of
        default recall. Only this memory: a shared copy and its origin are each archived by their own namespace's
        use."""
        memory = await self._get_writable(scope, memory_id)
        async with self.locks.hold(scope.tenant, memory.namespace):
            memory = await self._get_writable(scope, memory_id)
            if is_live(memory):
                memory = archived_copy(memory, reason, self.clock.now())
                await self.store.update(scope, memory)
        return memory

    async def restore(self, scope: NamespaceScope, memory_id: str) -> Memory:
        """Undo `forget`, for the memory and (for an origin) its shared copies; and bring the memory back from the
        archive: its vectors computed again, in the index and recalled by default once more."""
        memory = await self._get_writable(scope, memory_id)
        async with self.locks.hold(scope.tenant, memory.namespace):
            memory = await self._get_writable(scope, memory_id)
            for item in reversed(await self._with_copies(scope, memory)):
                if item.deleted_at is not None:
                    item.deleted_at = None
                    item.delete_reason = None
                    await self.store.update(scope, item)
            if memory.archived_at is not None:
                memory = restored_copy(memory, self.clock.now(), self.embedder.model_id)
                dense, sparse = await self.writer.vectors_of(scope, memory)
                await self.store.upsert(scope, [(memory, dense, sparse)])
        return memory

    async def purge(self, scope: NamespaceScope, namespace: str) -> int:
        """Hard-delete a whole namespace: the only hard delete there is, for admin scopes only."""
        if not scope.admin:
            raise NamespaceForbidden("purging a namespace needs the memory:admin scope")
        return await self.store.purge(scope, validate_namespace(namespace))

    async def list(self, scope: NamespaceScope, request: ListRequest) -> MemoryPage:
        if request.history_of is not None:
            if request.cursor is not None or request.hidden is not None:
                raise InvalidArgument("history_of lists one memory's versions: no cursor or hidden with it")
            memory = await self.get(scope, request.history_of)
            versions = await history(self.store, scope, memory, include_deleted=bool(request.include_deleted))
            return MemoryPage(await as_seen_by(self.store, scope, versions), None)
        namespaces = scope.read_targets(None if request.namespace is None else [request.namespace])
        kind: MemoryKind | None = None if request.kind is None else check_kind(request.kind)
        limit = check_limit(request.limit, self.limits)
        after = decode_cursor(request.cursor)
        hidden = check_hidden_state(request.hidden)
        if hidden is None:
            memories, next_id = await self.store.list(
                scope, ListQuery(namespaces, kind, bool(request.include_deleted), limit, after)
            )
        else:
            query = ListQuery(namespaces, kind, True, limit, after)
            memories, next_id = await list_hidden(self.store, scope, query, hidden, self.clock.now())
        return MemoryPage(await as_seen_by(self.store, scope, memories), encode_cursor(next_id))

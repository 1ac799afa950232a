"""`MemoryWriter`: the write path of docs/DESIGN.md § "The write path", from a checked request to stored memories and
their links.

Steps: validate; skip an exact repeat (completing it first if an earlier attempt was interrupted,
`memory.write.repeats`; a forced write with a request id looks for its own earlier attempt only); the text pipeline
(density filter, expiry of time-bound facts, importance by rules or an optional LLM, attribute claims:
`memory.write.drafts`); embed (a dialogue turn in the context of the turn before it);
then, holding the namespace's write lock, re-check the repeat, detect conflicts, and store the memory and its
shared copies in one batch carrying their intent before marking what they supersede (`memory.write.storing`,
`memory.write.linking`). Concurrent writes of one namespace therefore leave one live memory per content and one current
value per attribute, and a retry of an interrupted write completes it. Text is read as `memory.recall.cues` reads it:
"Name: text" when the speaker is given only in `metadata.speaker` (claims, vectors), the keyword document holding
the day it happened; content stays as written. A batch (`memory.write.batch`) drafts and commits through the
same steps.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from memory import cpu_meter
from memory.clock import Clock
from memory.embedders.sparse import Bm25Encoder
from memory.lifecycle.archive import restored_copy
from memory.models import Memory, WriteOutcome, WriteStatus
from memory.pipeline import PipelineSettings, conflict
from memory.pipeline.analysis import WriteAnalysis
from memory.ports import Embedder, ImportanceRater, NamespaceLocks, SparseVector, VectorStore
from memory.requests import WriteRequest
from memory.scope import NamespaceScope
from memory.validation import EngineLimits
from memory.write import drafts, linking, repeats, storing
from memory.write.drafts import DEFAULT_IMPORTANCE, Draft
from memory.write.repeats import COMPLETED, REVIVED, Repeat

__all__ = ["COMPLETED", "DEFAULT_IMPORTANCE", "REVIVED", "Draft", "MemoryWriter"]


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
        await self.embed(draft)
        return await self.commit(scope, draft)

    async def commit(self, scope: NamespaceScope, draft: Draft) -> WriteOutcome:
        """`commit_locked` under the namespace's write lock."""
        async with self.locks.hold(scope.tenant, draft.memory.namespace):
            return await self.commit_locked(scope, draft)

    async def commit_locked(self, scope: NamespaceScope, draft: Draft) -> WriteOutcome:
        """With the namespace's write lock held: the repeat checked again, the vectors redone if another turn of
        the session landed since they were computed, then conflicts and the store (`memory.write.storing`)."""
        request, namespace = draft.request, draft.memory.namespace
        if repeats.looks_up(request) and (repeat := await self.repeat(scope, draft.memory, request)) is not None:
            return repeat
        latest = await self.latest(scope, namespace, draft.memory.session_id)
        if _id(latest) != _id(draft.previous):  # another turn of the session landed meanwhile
            draft.previous = latest
            await self.embed(draft)
        return await self._store(scope, draft)

    # -- before the lock: checks and the text pipeline --------------------------------------------------------
    async def _draft(self, scope: NamespaceScope, request: WriteRequest) -> Draft | WriteOutcome:
        draft = self.new_draft(scope, request)
        memory = draft.memory
        if repeats.looks_up(request) and (repeat := await self.repeat(scope, memory, request)) is not None:
            return repeat
        drafted = await self.drafted(draft, await cpu_meter.run_sync(self.analysis_job(draft)))
        if isinstance(drafted, Draft):
            drafted.previous = await self.latest(scope, memory.namespace, memory.session_id)
        return drafted

    def new_draft(self, scope: NamespaceScope, request: WriteRequest) -> Draft:
        """`memory.write.drafts.new_draft` with this writer's limits, clock and model."""
        return drafts.new_draft(scope, request, self.limits, self.clock.now(), self.embedder.model_id)

    def analysis_job(self, draft: Draft) -> Callable[[], WriteAnalysis]:
        return drafts.analysis_job(draft, self.pipeline)

    async def drafted(self, draft: Draft, analysis: WriteAnalysis) -> Draft | WriteOutcome:
        return await drafts.drafted(draft, analysis, self.pipeline, self.importance_rater, self.clock.now())

    def embedding_work(self, draft: Draft) -> tuple[list[str], Callable[[], SparseVector]]:
        return drafts.embedding_work(draft, self.pipeline, self.keywords)

    def take_vectors(self, draft: Draft, vectors: Sequence[Sequence[float]], sparse: SparseVector) -> None:
        drafts.take_vectors(draft, vectors, sparse, self.pipeline)

    async def embed(self, draft: Draft) -> None:
        """The draft's vectors (`memory.write.drafts.embedding_work`), the keyword vector in a worker thread."""
        texts, keywords = self.embedding_work(draft)
        vectors = await self.embedder.embed_documents(texts)
        self.take_vectors(draft, vectors, await cpu_meter.run_sync(keywords))

    async def vectors_of(self, scope: NamespaceScope, memory: Memory) -> tuple[Sequence[float], SparseVector]:
        """A stored memory's vectors computed again as its write computed them (in the context of the turn it
        follows): how a memory brought back from the archive is put back in the index."""
        previous = await self.store.get(scope, memory.follows) if memory.follows is not None else None
        request = WriteRequest(content=memory.content, subject=memory.source.subject)
        draft = Draft(memory, request, [], memory.tags, memory.metadata, [], previous=previous)
        await self.embed(draft)
        return draft.vector, draft.sparse

    # -- exact repeats (memory.write.repeats) -----------------------------------------------------------------------
    async def repeat(self, scope: NamespaceScope, memory: Memory, request: WriteRequest) -> WriteOutcome | None:
        """An exact repeat of `memory` already stored: completed if its write was interrupted, and answered as
        the first attempt when it is this very request (same subject, tool and request id, whatever its flags),
        else skipped. Expired memories are read too: `repeats.repeat_of` leaves them out but this request's own."""
        now = self.clock.now()
        matches = await self.store.find_by_hashes(scope, memory.namespace, [memory.content_hash])
        found = repeats.repeat_of(matches, memory, request, now)
        return await self.answer_repeat(scope, found, memory, now) if found is not None else None

    async def answer_repeat(self, scope: NamespaceScope, found: Repeat, memory: Memory, now: datetime) -> WriteOutcome:
        """Complete and answer a repeat: an archived memory is brought back (`_revived`); a stored one has its
        links completed (`memory.write.linking.complete_links`) and is answered (`memory.write.repeats.answer`)."""
        if found.archived is not None:
            return await self._revived(scope, found.archived, now)
        existing = found.existing
        assert existing is not None
        superseded = await linking.complete_links(self.store, scope, existing, now)
        return repeats.answer(existing, memory, superseded)

    async def _revived(self, scope: NamespaceScope, found: Memory, now: datetime) -> WriteOutcome:
        """A repeat of a memory maintenance archived (and nobody forgot or replaced) brings that memory back
        instead of storing a second copy beside it: said again, it is in use."""
        revived = restored_copy(found, now, self.embedder.model_id)
        dense, sparse = await self.vectors_of(scope, revived)
        await self.store.upsert(scope, [(revived, dense, sparse)])
        return WriteOutcome(WriteStatus.SKIPPED, revived, reason=REVIVED)

    # -- under the lock: conflicts, then one batch and its links (memory.write.storing) -----------------------------
    async def _store(self, scope: NamespaceScope, draft: Draft) -> WriteOutcome:
        memory, settings = draft.memory, self.pipeline
        now = self.clock.now()
        decision = conflict.ConflictDecision()
        if settings.conflict_detection and not draft.request.force:  # force: stored as is, nothing changes
            candidates = await storing.conflict_candidates(
                self.store, scope, memory, draft.own, now, settings.conflict_candidates
            )
            decision = await cpu_meter.run_sync(lambda: storing.decide(draft, candidates, settings))
            decision = storing.settle(draft, decision, now)
        return await storing.store_decided(self.store, scope, draft, decision, now)

    async def latest(self, scope: NamespaceScope, namespace: str, session_id: str | None) -> Memory | None:
        """The memory written last in that session and namespace (what a new one follows), if any."""
        if session_id is None:
            return None
        return await self.store.latest_in_session(scope, namespace, session_id)


def _id(memory: Memory | None) -> str | None:
    return memory.id if memory is not None else None

"""`Reembedding`: copies every memory of every tenant from the active index into a new one built for another
embedder, then keeps it in step with the changes recorded meanwhile (`memory.stores.switchable.Changes`), then
checks both agree. Switching is the caller's (`memory.reembed.migration`).

What is copied: every memory whatever its status (live, forgotten, superseded, expired, archived), with its id and
every payload field unchanged except `embedding_model`, which names the model of the new vector. Vectors are
rebuilt from the stored content as the write path builds them (`memory.write.drafts.embedding_work`): the text as
read (`memory.recall.cues.attributed`), a dialogue turn mixed with the previous turn of its session (the last turn met
earlier in id order, which is time order; a bounded cache of the latest turn per session), and the keyword
vector with the memory's day in words. Pages of `BATCH` memories, one embedder call per page (the embedders run
in worker threads, the keyword vectors are computed in one too), so memory stays bounded.

A catch-up pass replays recorded purges and deletes first, then re-reads each changed id from the old index: a
memory gone from it was purged or deleted (already replayed); one whose text is unchanged gets its payload only
(its new vectors stay); any other is re-embedded. Verification streams both indexes tenant by tenant and compares,
per namespace, the count and a digest of every memory's id and state.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field, replace

import anyio.to_thread

from memory.embedders.sparse import Bm25Encoder
from memory.models import EXTRACTED, Memory
from memory.pipeline import PipelineSettings, turns
from memory.ports import Embedder, ListQuery, SparseVector, UpsertItem, VectorStore
from memory.recall.cues import attributed
from memory.scope import NamespaceScope
from memory.stores.switchable import Changes
from memory.text.keyword_document import keyword_vector

BATCH = 64  # memories per page read, embedder call and upsert
SESSION_CACHE = 50_000  # sessions whose latest turn is remembered for turn context
ScopeOf = Callable[[str], NamespaceScope]  # a tenant's admin scope (built by tenancy/, passed in by the gateway)


@dataclass
class Progress:
    copied: int = 0  # memories copied by the first pass
    caught_up: int = 0  # changes applied by catch-up passes
    passes: int = 0
    tenants: int = 0


@dataclass(frozen=True, slots=True)
class NamespaceCheck:
    tenant: str
    namespace: str
    old: int
    new: int
    same: bool  # same ids and states (not only the same count)


@dataclass
class Verification:
    namespaces: list[NamespaceCheck] = field(default_factory=list)

    @property
    def mismatches(self) -> list[NamespaceCheck]:
        return [check for check in self.namespaces if not check.same]

    @property
    def total(self) -> int:
        return sum(check.old for check in self.namespaces)


@dataclass(eq=False)
class Reembedding:
    source: VectorStore
    target: VectorStore
    embedder: Embedder
    pipeline: PipelineSettings
    scope_of: ScopeOf
    keywords: Bm25Encoder = field(default_factory=Bm25Encoder)
    progress: Progress = field(default_factory=Progress, init=False)
    # session (tenant, namespace, session id) -> (id, text) of its latest turn met
    _latest: OrderedDict[tuple[str, str, str], tuple[str, str]] = field(default_factory=OrderedDict, init=False)

    # -- vectors ---------------------------------------------------------------------------------------------
    async def items(self, memories: Sequence[Memory]) -> list[UpsertItem]:
        """The memories stamped with the new model, with vectors built as the write path builds them."""
        settings = self.pipeline
        texts = [attributed(m.content, m.metadata) for m in memories]
        befores: list[str | None] = []
        for memory, text in zip(memories, texts, strict=True):  # in id order: a turn may follow one of this page
            befores.append(self._previous(memory))
            self._remember(memory, text)
        weight = settings.turn_context_weight
        contexts = [turns.dialogue_context(t, b, weight) for t, b in zip(texts, befores, strict=True)]
        extra = [c for c in contexts if c is not None]
        vectors = await self.embedder.embed_documents([*texts, *extra]) if texts else []
        own, mixed = vectors[: len(texts)], iter(vectors[len(texts) :])
        dense = [
            turns.in_context(v, next(mixed), settings.turn_context_weight) if c is not None else v
            for v, c in zip(own, contexts, strict=True)
        ]

        def keyword_vectors() -> list[SparseVector]:
            weight = settings.turn_context_keyword_weight
            read = zip(memories, texts, befores, strict=True)
            return [keyword_vector(self.keywords, m, t, b, weight) for m, t, b in read]

        sparse = await anyio.to_thread.run_sync(keyword_vectors)
        model = self.embedder.model_id
        return [(replace(m, embedding_model=model), d, s) for m, d, s in zip(memories, dense, sparse, strict=True)]

    def _previous(self, memory: Memory) -> str | None:
        if memory.session_id is None:
            return None
        seen = self._latest.get((memory.tenant, memory.namespace, memory.session_id))
        return seen[1] if seen is not None and seen[0] < memory.id else None

    def _remember(self, memory: Memory, text: str) -> None:
        if memory.session_id is None or memory.source.tool == EXTRACTED:
            return
        key = (memory.tenant, memory.namespace, memory.session_id)
        seen = self._latest.get(key)
        if seen is None or seen[0] < memory.id:
            self._latest[key] = (memory.id, text)
            self._latest.move_to_end(key)
            while len(self._latest) > SESSION_CACHE:
                self._latest.popitem(last=False)

    async def restamp(self, scope: NamespaceScope, memories: Sequence[Memory]) -> list[UpsertItem]:
        """Upsert items for memories embedded with the old model by a write that straddled the switch."""
        return await self.items(memories)

    # -- passes ----------------------------------------------------------------------------------------------
    async def copy_all(self) -> None:
        """The first pass: every memory of every tenant, a page at a time."""
        for tenant in await self.source.tenants():
            scope = self.scope_of(tenant)
            async for page in pages(self.source, scope):
                await self.target.upsert(scope, await self.items(page))
                self.progress.copied += len(page)
            self.progress.tenants += 1

    async def catch_up(self, changes: Changes) -> int:
        """Apply the recorded changes to the new index (see the module docstring); returns how many."""
        for tenant, namespace in changes.purges:
            await self.target.purge(self.scope_of(tenant), namespace)
        for tenant, deleted in changes.deletes.items():
            await self.target.delete(self.scope_of(tenant), sorted(deleted))
        for tenant, ids in changes.ids.items():
            scope = self.scope_of(tenant)
            ordered = sorted(ids)
            for start in range(0, len(ordered), BATCH):
                await self._copy_ids(scope, ordered[start : start + BATCH])
        self.progress.caught_up += len(changes)
        self.progress.passes += 1
        return len(changes)

    async def _copy_ids(self, scope: NamespaceScope, ids: Sequence[str]) -> None:
        fresh: list[Memory] = []
        for memory_id in ids:
            memory = await self.source.get(scope, memory_id)
            if memory is None:
                continue  # purged: the purge was replayed
            held = await self.target.get(scope, memory_id)
            if held is not None and held.content_hash == memory.content_hash:
                await self.target.update(scope, replace(memory, embedding_model=self.embedder.model_id))
            else:
                fresh.append(memory)
        if fresh:
            await self.target.upsert(scope, await self.items(fresh))

    # -- verification ----------------------------------------------------------------------------------------
    async def verify(self) -> Verification:
        """Per tenant and namespace: both indexes hold the same count and the same ids in the same states."""
        result = Verification()
        tenants = sorted(set(await self.source.tenants()) | set(await self.target.tenants()))
        for tenant in tenants:
            scope = self.scope_of(tenant)
            old, new = await summary(self.source, scope), await summary(self.target, scope)
            for namespace in sorted(set(old) | set(new)):
                (old_count, old_digest), (new_count, new_digest) = (
                    old.get(namespace, (0, 0)),
                    new.get(namespace, (0, 0)),
                )
                same = old_count == new_count and old_digest == new_digest
                result.namespaces.append(NamespaceCheck(tenant, namespace, old_count, new_count, same))
        return result


async def pages(store: VectorStore, scope: NamespaceScope) -> AsyncIterator[list[Memory]]:
    """Every memory of the scope's tenant, whatever its status, in id order, a page at a time."""
    after: str | None = None
    while True:
        page, after = await store.list(scope, ListQuery((), None, True, BATCH, after))
        if page:
            yield page
        if after is None:
            return


def fingerprint(memory: Memory) -> int:
    """A 64-bit digest of a memory's id and state, the model that embedded it aside."""
    state = repr(replace(memory, embedding_model=""))
    return int.from_bytes(hashlib.sha256(state.encode()).digest()[:8], "big")


async def summary(store: VectorStore, scope: NamespaceScope) -> dict[str, tuple[int, int]]:
    """Per namespace of the tenant: how many memories and the sum of their fingerprints (mod 2**64)."""
    found: dict[str, tuple[int, int]] = {}
    async for page in pages(store, scope):
        for memory in page:
            count, digest = found.get(memory.namespace, (0, 0))
            found[memory.namespace] = (count + 1, (digest + fingerprint(memory)) % 2**64)
    return found

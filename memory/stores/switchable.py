"""`SwitchableStore` and `SwitchableEmbedder`: the vector store and embedder a runtime holds for its whole life,
each delegating to the index (and model) now active, so a re-embedding (`memory.reembed`) can switch both
without any holder noticing.

While a migration runs, the store records what every change touched (`Changes`: the ids upserted, updated or
given an access, the namespaces purged, the ids deleted), noted *after* the change returned, so a catch-up pass
that takes the record and then reads the old index always reads a state at least as new as the one noted.
`paused()` holds new changes back and waits until none is in flight: the final catch-up, the verification and
the switch run with the old index still. Reads never wait.

After a switch, a change that started before it (its vector computed with the old model) is made right here: an
upsert of a memory still stamped with another model is re-embedded by the `Restamp` the switch gave, a payload
update is stamped with the active model, and a search with a vector of the old size runs keyword-only. The old
index is closed once the reads that started on it are done.
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, TypeVar

import anyio

from memory.errors import BackendUnavailable
from memory.models import Memory, MemoryKind
from memory.ports import (
    Embedder,
    ListQuery,
    NearestQuery,
    RecallFilter,
    ScoredMemory,
    SparseVector,
    UpsertItem,
    VectorStore,
)
from memory.scope import NamespaceScope

logger = logging.getLogger("hindsight.reembed")
T = TypeVar("T")
# Re-embeds upserted memories stamped with an older model: (scope, memories) -> upsert items of the active model.
Restamp = Callable[[NamespaceScope, Sequence[Memory]], Awaitable[list[UpsertItem]]]
CLOSE_WAIT_SECONDS = 30.0  # how long a retired index waits for the reads that started on it


@dataclass
class Changes:
    """What changed in the active index since the record was last taken: ids per tenant, purged namespaces, and
    ids deleted per tenant (for the catch-up to delete from the new index: re-read, they are simply gone)."""

    ids: dict[str, set[str]] = field(default_factory=dict)
    purges: list[tuple[str, str]] = field(default_factory=list)
    deletes: dict[str, set[str]] = field(default_factory=dict)

    def __len__(self) -> int:
        return (
            sum(len(ids) for ids in self.ids.values())
            + len(self.purges)
            + sum(len(ids) for ids in self.deletes.values())
        )


class _Uses:
    """Calls in flight on one store, and an event set whenever none is."""

    def __init__(self) -> None:
        self.count = 0
        self.idle = anyio.Event()
        self.idle.set()

    def enter(self) -> None:
        if self.count == 0:
            self.idle = anyio.Event()
        self.count += 1

    def leave(self) -> None:
        self.count -= 1
        if self.count == 0:
            self.idle.set()


class SwitchableStore:
    """A `VectorStore` delegating to the active index; see the module docstring."""

    def __init__(self, active: VectorStore, model_id: str, dimension: int) -> None:
        self.active = active
        self.model_id = model_id
        self.dimension = dimension
        self._changes: Changes | None = None  # recording while a migration runs
        self._resumed: anyio.Event | None = None  # set while changes are held back
        self._writes = _Uses()
        self._reads: dict[int, _Uses] = {}
        self._restamp: Restamp | None = None

    # -- migration controls -------------------------------------------------------------------------------
    def start_recording(self) -> None:
        self._changes = Changes()

    def take_changes(self) -> Changes:
        """The changes recorded since the last take (recording goes on)."""
        if self._changes is None:
            return Changes()
        taken, self._changes = self._changes, Changes()
        return taken

    def stop_recording(self) -> None:
        self._changes = None

    @asynccontextmanager
    async def paused(self, drain_seconds: float) -> AsyncIterator[None]:
        """Hold new changes back and wait (at most `drain_seconds`) until none is in flight; release on exit."""
        if self._resumed is not None:
            raise BackendUnavailable("changes are already paused")
        self._resumed = anyio.Event()
        try:
            with anyio.fail_after(drain_seconds):
                await self._writes.idle.wait()
            yield
        except TimeoutError:
            raise BackendUnavailable(f"writes in flight did not finish within {drain_seconds:g} s") from None
        finally:
            resumed, self._resumed = self._resumed, None
            resumed.set()

    async def switch(self, store: VectorStore, model_id: str, dimension: int, restamp: Restamp) -> VectorStore:
        """Make `store` the active index (call it while paused); returns the retired one, not yet closed."""
        old, self.active = self.active, store
        self.model_id, self.dimension, self._restamp = model_id, dimension, restamp
        return old

    async def close_retired(self, old: VectorStore) -> None:
        """Close a retired index once the reads that started on it are done (or after a bounded wait)."""
        uses = self._reads.get(id(old))
        if uses is not None:
            with anyio.move_on_after(CLOSE_WAIT_SECONDS):
                await uses.idle.wait()
        self._reads.pop(id(old), None)
        await old.close()

    # -- plumbing --------------------------------------------------------------------------------------------
    async def _read(self, fn: Callable[[VectorStore], Awaitable[T]]) -> T:
        store = self.active
        uses = self._reads.setdefault(id(store), _Uses())
        uses.enter()
        try:
            return await fn(store)
        finally:
            uses.leave()

    async def _change(self, fn: Callable[[VectorStore], Awaitable[T]], tenant: str, ids: Sequence[str] = ()) -> T:
        while self._resumed is not None:
            await self._resumed.wait()
        self._writes.enter()
        try:
            return await fn(self.active)
        finally:
            if self._changes is not None and ids:  # noted after the change, see the module docstring
                self._changes.ids.setdefault(tenant, set()).update(ids)
            self._writes.leave()

    def __getattr__(self, name: str) -> Any:  # what only one backend offers (`count`, `collection`)
        return getattr(self.active, name)

    # -- changes ---------------------------------------------------------------------------------------------
    async def upsert(self, scope: NamespaceScope, items: Sequence[UpsertItem]) -> None:
        async def run(store: VectorStore) -> None:
            await store.upsert(scope, await self._current(scope, items))

        await self._change(run, scope.tenant, [item[0].id for item in items])

    async def _current(self, scope: NamespaceScope, items: Sequence[UpsertItem]) -> Sequence[UpsertItem]:
        """The items with every memory stamped with another model re-embedded (after a switch only)."""
        stale = [item[0] for item in items if item[0].embedding_model != self.model_id]
        if not stale or self._restamp is None:
            return items
        renewed = {item[0].id: item for item in await self._restamp(scope, stale)}
        return [renewed.get(item[0].id, item) for item in items]

    async def update(self, scope: NamespaceScope, memory: Memory) -> None:
        if self._restamp is not None and memory.embedding_model != self.model_id:
            memory = replace(memory, embedding_model=self.model_id)  # its stored vector is the active model's
        await self._change(lambda store: store.update(scope, memory), scope.tenant, [memory.id])

    async def purge(self, scope: NamespaceScope, namespace: str) -> int:
        async def run(store: VectorStore) -> int:
            try:
                return await store.purge(scope, namespace)
            finally:
                if self._changes is not None:
                    self._changes.purges.append((scope.tenant, namespace))

        return await self._change(run, scope.tenant)

    async def delete(self, scope: NamespaceScope, memory_ids: Sequence[str]) -> int:
        async def run(store: VectorStore) -> int:
            try:
                return await store.delete(scope, memory_ids)
            finally:
                if self._changes is not None and scope.admin and memory_ids:  # a refused call deleted nothing
                    self._changes.deletes.setdefault(scope.tenant, set()).update(memory_ids)

        return await self._change(run, scope.tenant)

    async def record_access(self, scope: NamespaceScope, memory_ids: Sequence[str], at: datetime) -> None:
        await self._change(lambda store: store.record_access(scope, memory_ids, at), scope.tenant, memory_ids)

    # -- reads -----------------------------------------------------------------------------------------------
    async def get(self, scope: NamespaceScope, memory_id: str) -> Memory | None:
        return await self._read(lambda store: store.get(scope, memory_id))

    async def get_many(self, scope: NamespaceScope, memory_ids: Sequence[str]) -> builtins.list[Memory]:
        return await self._read(lambda store: store.get_many(scope, memory_ids))

    async def find_by_hash(
        self,
        scope: NamespaceScope,
        namespace: str,
        content_hash: str,
        *,
        live_only: bool = True,
        now: datetime | None = None,
    ) -> Memory | None:
        return await self._read(
            lambda store: store.find_by_hash(scope, namespace, content_hash, live_only=live_only, now=now)
        )

    async def find_by_hashes(
        self, scope: NamespaceScope, namespace: str, content_hashes: Sequence[str], *, now: datetime | None = None
    ) -> builtins.list[Memory]:
        return await self._read(lambda store: store.find_by_hashes(scope, namespace, content_hashes, now=now))

    async def search_many(
        self, scope: NamespaceScope, queries: Sequence[NearestQuery]
    ) -> builtins.list[builtins.list[ScoredMemory]]:
        """A query with a vector of the old size (computed with the model before a switch) finds nothing, as a
        dense-only `search` with one does."""
        current = [i for i, query in enumerate(queries) if len(query.vector) == self.dimension]
        found: list[list[ScoredMemory]] = [[] for _ in queries]
        if current:
            hits = await self._read(lambda store: store.search_many(scope, [queries[i] for i in current]))
            for i, hit in zip(current, hits, strict=True):
                found[i] = hit
        return found

    async def search(
        self,
        scope: NamespaceScope,
        namespaces: tuple[str, ...],
        vector: Sequence[float],
        limit: int,
        flt: RecallFilter,
        sparse: SparseVector | None = None,
        *,
        known: Mapping[str, ScoredMemory] | None = None,
    ) -> builtins.list[ScoredMemory]:
        if len(vector) != self.dimension:  # computed with the model before a switch: keywords only
            if sparse is None or not sparse.indices:
                return []
            vector = [0.0] * self.dimension
        return await self._read(lambda store: store.search(scope, namespaces, vector, limit, flt, sparse, known=known))

    async def latest_in_session(self, scope: NamespaceScope, namespace: str, session_id: str) -> Memory | None:
        return await self._read(lambda store: store.latest_in_session(scope, namespace, session_id))

    async def list(self, scope: NamespaceScope, query: ListQuery) -> tuple[builtins.list[Memory], str | None]:
        return await self._read(lambda store: store.list(scope, query))

    async def copies_of(self, scope: NamespaceScope, origin_id: str) -> builtins.list[Memory]:
        return await self._read(lambda store: store.copies_of(scope, origin_id))

    async def namespace_counts(self, scope: NamespaceScope, kind: MemoryKind | None = None) -> dict[str, int]:
        return await self._read(lambda store: store.namespace_counts(scope, kind))

    async def tenants(self) -> builtins.list[str]:
        return await self._read(lambda store: store.tenants())

    async def ping(self) -> None:
        await self._read(lambda store: store.ping())

    async def maintain(self) -> None:
        await self._read(lambda store: store.maintain())

    async def close(self) -> None:
        await self.active.close()


class SwitchableEmbedder:
    """An `Embedder` delegating to the active model; `switch` replaces it (the old one is returned to close)."""

    def __init__(self, active: Embedder) -> None:
        self.active = active

    @property
    def model_id(self) -> str:
        return self.active.model_id

    @property
    def dimension(self) -> int:
        return self.active.dimension

    def switch(self, embedder: Embedder) -> Embedder:
        old, self.active = self.active, embedder
        return old

    async def embed_documents(self, texts: Sequence[str]) -> builtins.list[builtins.list[float]]:
        return await self.active.embed_documents(texts)

    async def embed_query(self, text: str) -> builtins.list[float]:
        return await self.active.embed_query(text)

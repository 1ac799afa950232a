"""`EngineStore`: the `VectorStore` reads, searches' dispatch, deletions and access counts written once, over a
narrow port each engine's store implements (the embedded engine, `memory.stores.edge`; a Qdrant server,
`memory.stores.qdrant_server`).

The port is a handful of primitives over the engine's own filter type `F`, each filter built by the store's
`Filters` (`memory.stores.filters`): `_scroll` and `_scroll_all` (decoded memories), `_count`, `_facet`, the two
searches `_nearest` and `_by_keywords`, `_purge_where` and `_delete_where`, and `_bump_access`. What a call checks
(the scope, admin-only calls, empty arguments) and which filter it sends is decided here.
"""

from __future__ import annotations

import builtins
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

from memory.errors import NamespaceForbidden
from memory.models import Memory, MemoryKind
from memory.ports import ListQuery, RecallFilter, ScoredMemory, SparseVector
from memory.scope import NamespaceScope
from memory.stores.common import prefetch_limit
from memory.stores.filters import Filters
from memory.stores.payload import TENANT_FIELD, recallable_statuses

F = TypeVar("F")  # the engine's filter
COPIES_LIMIT = 1000  # linked copies of one memory read by `copies_of`
HASH_PAGE = 256  # memories read per engine call by `find_by_hashes`


class EngineStore(ABC, Generic[F]):
    """A `VectorStore` over one engine's port (module docstring)."""

    _filters: Filters[Any, F]

    # -- the engine's port -----------------------------------------------------------------------------------
    @abstractmethod
    async def _scroll(
        self, flt: F, limit: int, offset: str | None = None, *, newest_first: bool = False, by_id: bool = False
    ) -> tuple[builtins.list[Memory], str | None]:
        """Up to `limit` decodable memories passing `flt`, in id order from `offset` (newest first by creation
        when `newest_first`), and the offset of the next page; `by_id`: a read of `limit` points by id."""

    @abstractmethod
    async def _scroll_all(self, flt: F, page: int) -> builtins.list[Memory]:
        """Every decodable memory passing `flt`, in id order, read `page` at a time."""

    @abstractmethod
    async def _count(self, flt: F) -> int:
        """How many points pass `flt`, exactly."""

    @abstractmethod
    async def _facet(self, key: str, flt: F | None) -> builtins.list[tuple[str, int]]:
        """Each value of the payload field `key` among the points passing `flt` (None: all), with its count."""

    @abstractmethod
    async def _nearest(
        self, scope: NamespaceScope, namespaces: tuple[str, ...], vector: Sequence[float], limit: int, flt: RecallFilter
    ) -> builtins.list[ScoredMemory]:
        """`search` by meaning."""

    @abstractmethod
    async def _by_keywords(self, scope: NamespaceScope, search: KeywordSearch) -> builtins.list[ScoredMemory]:
        """`search` by keywords alone."""

    @abstractmethod
    async def _purge_where(self, tenant: str, namespace: str, flt: F) -> int:
        """Remove every point of one namespace (`flt`); how many there were."""

    @abstractmethod
    async def _delete_where(self, flt: F, limit: int) -> int:
        """Remove the points passing `flt` (at most `limit`: selected by id); how many there were."""

    @abstractmethod
    async def _bump_access(self, tenant: str, flt: F, limit: int, at: datetime) -> None:
        """Increment the access count and set `last_accessed_at` of the points of `tenant` passing `flt` (at most
        `limit`)."""

    # -- reads -----------------------------------------------------------------------------------------------
    async def get(self, scope: NamespaceScope, memory_id: str) -> Memory | None:
        memories, _ = await self._scroll(self._filters.visible_ids(scope, [memory_id]), 1, by_id=True)
        return memories[0] if memories else None

    async def get_many(self, scope: NamespaceScope, memory_ids: Sequence[str]) -> builtins.list[Memory]:
        if not memory_ids:
            return []
        ids = sorted(set(memory_ids))
        memories, _ = await self._scroll(self._filters.visible_ids(scope, ids), len(ids), by_id=True)
        return memories

    async def find_by_hash(
        self,
        scope: NamespaceScope,
        namespace: str,
        content_hash: str,
        *,
        live_only: bool = True,
        now: datetime | None = None,
    ) -> Memory | None:
        memories, _ = await self._scroll(self._filters.by_hash(scope, namespace, content_hash, live_only, now), 1)
        return memories[0] if memories else None

    async def find_by_hashes(
        self, scope: NamespaceScope, namespace: str, content_hashes: Sequence[str], *, now: datetime | None = None
    ) -> builtins.list[Memory]:
        if not content_hashes:
            return []
        return await self._scroll_all(self._filters.by_hashes(scope, namespace, content_hashes, now), HASH_PAGE)

    async def latest_in_session(self, scope: NamespaceScope, namespace: str, session_id: str) -> Memory | None:
        flt = self._filters.session_turns(scope, namespace, session_id)
        memories, _ = await self._scroll(flt, 1, newest_first=True)
        return memories[0] if memories else None

    async def list(self, scope: NamespaceScope, query: ListQuery) -> tuple[builtins.list[Memory], str | None]:
        return await self._scroll(self._filters.listing(scope, query), query.limit, query.after)

    async def copies_of(self, scope: NamespaceScope, origin_id: str) -> builtins.list[Memory]:
        flt = self._filters.copies(scope, origin_id)
        if flt is None:
            return []
        memories, _ = await self._scroll(flt, COPIES_LIMIT)
        return memories

    async def count(self, scope: NamespaceScope, namespaces: tuple[str, ...]) -> int:
        """Every memory of those namespaces (`()`: the tenant, admin only), whatever its status."""
        return await self._count(self._filters.namespaces(scope, namespaces))

    async def namespace_counts(self, scope: NamespaceScope, kind: MemoryKind | None = None) -> dict[str, int]:
        return dict(await self._facet("namespace", self._filters.live(scope, kind)))

    async def tenants(self) -> builtins.list[str]:
        return sorted(value for value, _ in await self._facet(TENANT_FIELD, None))

    # -- searches --------------------------------------------------------------------------------------------
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
        if sparse is None or not sparse.indices:
            return await self._nearest(scope, namespaces, vector, limit, flt)
        search = KeywordSearch(namespaces, vector, prefetch_limit(limit), flt, sparse, known or {})
        return await self._by_keywords(scope, search)

    # -- writes ----------------------------------------------------------------------------------------------
    async def purge(self, scope: NamespaceScope, namespace: str) -> int:
        if not scope.admin:
            raise NamespaceForbidden("purging a namespace needs an admin scope")
        return await self._purge_where(scope.tenant, namespace, self._filters.namespace(scope, namespace))

    async def delete(self, scope: NamespaceScope, memory_ids: Sequence[str]) -> int:
        if not scope.admin:
            raise NamespaceForbidden("deleting memories needs an admin scope")
        if not memory_ids:
            return 0
        ids = sorted(set(memory_ids))
        return await self._delete_where(self._filters.tenant_ids(scope, ids), len(ids))

    async def record_access(self, scope: NamespaceScope, memory_ids: Sequence[str], at: datetime) -> None:
        ids = list(dict.fromkeys(memory_ids))
        if ids:
            await self._bump_access(scope.tenant, self._filters.visible_ids(scope, ids), len(ids), at)


@dataclass(frozen=True, slots=True)
class KeywordSearch:
    """A keyword-only `search`: its namespaces, the query's dense `vector` (for each new hit's cosine), how many
    hits at most (`depth`), its filter, the query's keyword vector and the hits the caller holds (`known`)."""

    namespaces: tuple[str, ...]
    vector: Sequence[float]
    depth: int
    flt: RecallFilter
    sparse: SparseVector
    known: Mapping[str, ScoredMemory]

    @property
    def statuses(self) -> builtins.list[str]:
        """The statuses its hits may have (`keyword_only_hits` drops a point read later with another)."""
        return recallable_statuses(self.flt.include_superseded, self.flt.include_archived)


def access_groups(records: Iterable[Any]) -> dict[int, builtins.list[Any]]:
    """The ids of points read with their `access_count`, by the count each is to have next: one update a group."""
    groups: dict[int, builtins.list[Any]] = {}
    for record in records:
        groups.setdefault(int((record.payload or {}).get("access_count") or 0) + 1, []).append(record.id)
    return groups

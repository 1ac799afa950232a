"""Every filter a vector store sends its engine, written once: the tenant and namespace conditions each query carries,
what a recall search lets through (statuses, kinds, tags, session, times, never an expired memory), and the filters
of lists, counts, lookups by id or content hash, sessions, linked copies, purges and the BM25 IDF corpus.

`Filters` builds them from five primitives (`match`, `match_any`, `in_range`, `has_id`, `filter`); each engine's
module translates those into its own client's objects (`memory.stores.edge_filters` for the embedded engine,
`memory.stores.qdrant_filters` for the server), so the two stores cannot filter differently.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from datetime import datetime
from typing import Generic, TypeVar

from memory.clock import to_timestamp
from memory.models import EXTRACTED, MemoryKind
from memory.ports import ListQuery, RecallFilter
from memory.scope import NamespaceScope
from memory.stores.common import IDF_LEAVES_OUT, checked_namespaces, idf_corpus, visible_namespaces
from memory.stores.payload import STATUS_ACTIVE, TENANT_FIELD, recallable_statuses

C = TypeVar("C")  # an engine's condition
F = TypeVar("F")  # an engine's filter


class Filters(ABC, Generic[C, F]):
    """The stores' filters over one engine's conditions `C` and filters `F` (module docstring)."""

    # -- the engine's primitives -----------------------------------------------------------------------------
    @abstractmethod
    def match(self, key: str, value: str) -> C: ...

    @abstractmethod
    def match_any(self, key: str, values: Sequence[str]) -> C: ...

    @abstractmethod
    def in_range(self, key: str, gte: float | None = None, lte: float | None = None) -> C: ...

    @abstractmethod
    def has_id(self, ids: Sequence[str]) -> C: ...

    @abstractmethod
    def filter(self, must: Sequence[C], must_not: Sequence[C] = ()) -> F: ...

    # -- scope -----------------------------------------------------------------------------------------------
    def scope(self, scope: NamespaceScope, namespaces: Sequence[str]) -> list[C]:
        """The tenant and namespace conditions every query carries, tenant first. `()` means the whole tenant
        (admin only)."""
        conditions = [self.match(TENANT_FIELD, scope.tenant)]
        checked = checked_namespaces(scope, namespaces)
        if checked:
            conditions.append(self.match_any("namespace", checked))
        return conditions

    def writable(self, scope: NamespaceScope, *extra: C) -> F:
        """What a stored point must meet before a write may replace it: the scope's tenant, a writable namespace."""
        return self.filter([*self.scope(scope, () if scope.admin else scope.writable), *extra])

    def namespace(self, scope: NamespaceScope, namespace: str) -> F:
        """Every memory of one namespace (a purge)."""
        return self.filter(self.scope(scope, (namespace,)))

    def namespaces(self, scope: NamespaceScope, namespaces: Sequence[str]) -> F:
        """Every memory of those namespaces (`()`: the tenant, admin only), whatever its status."""
        return self.filter(self.scope(scope, namespaces))

    def visible_ids(self, scope: NamespaceScope, ids: Sequence[str]) -> F:
        """The memories with those ids in a namespace the scope can read."""
        return self.filter([*self.scope(scope, visible_namespaces(scope)), self.has_id(ids)])

    def tenant_ids(self, scope: NamespaceScope, ids: Sequence[str]) -> F:
        """The memories with those ids in the admin scope's tenant (a point of another tenant is left alone)."""
        return self.filter([*self.scope(scope, ()), self.has_id(ids)])

    # -- searches --------------------------------------------------------------------------------------------
    def recall(self, in_scope: Sequence[C], flt: RecallFilter) -> F:
        """What a search may return within its scope conditions: the statuses, kinds, tags, session, times and
        attributes `flt` asks for, never a memory expired at `flt.now`."""
        must = [*in_scope, self.match_any("status", recallable_statuses(flt.include_superseded, flt.include_archived))]
        if flt.attributes:
            must.append(self.match_any("attributes", flt.attributes))
        if flt.kinds:
            must.append(self.match_any("kind", [k.value for k in flt.kinds]))
        if flt.tags:
            must.append(self.match_any("tags", flt.tags))
        if flt.session_id is not None:
            must.append(self.match("session_id", flt.session_id))
        if flt.since is not None or flt.until is not None:
            must.append(self.in_range("created_at", gte=to_timestamp(flt.since), lte=to_timestamp(flt.until)))
        return self.filter(must, [self.expired(flt.now)])

    def idf_corpus(self, in_scope: Sequence[C], namespaces: Sequence[str]) -> F:
        """The corpus of a keyword query's IDF statistics (`common.idf_corpus`), consolidated memories left out."""
        return self.filter(idf_corpus(in_scope, namespaces), [self.match(*IDF_LEAVES_OUT)])

    def expired(self, now: datetime) -> C:
        return self.in_range("expires_at", lte=now.timestamp())

    # -- reads -----------------------------------------------------------------------------------------------
    def listing(self, scope: NamespaceScope, query: ListQuery) -> F:
        """A page of `VectorStore.list`: its namespaces, its kind, live memories unless deleted ones too."""
        must = self.scope(scope, query.namespaces)
        if query.kind is not None:
            must.append(self.match("kind", query.kind.value))
        if not query.include_deleted:
            must.append(self.match("status", STATUS_ACTIVE))
        return self.filter(must)

    def live(self, scope: NamespaceScope, kind: MemoryKind | None) -> F:
        """The live memories (of one kind, or all) of the admin scope's tenant."""
        must = [*self.scope(scope, ()), self.match("status", STATUS_ACTIVE)]
        if kind is not None:
            must.append(self.match("kind", kind.value))
        return self.filter(must)

    def by_hash(
        self, scope: NamespaceScope, namespace: str, content_hash: str, live_only: bool, now: datetime | None
    ) -> F:
        """The memories of one namespace with that content hash: live ones only when `live_only`; with `now`, none
        expired at that time."""
        must = [*self.scope(scope, (namespace,)), self.match("content_hash", content_hash)]
        if live_only:
            must.append(self.match("status", STATUS_ACTIVE))
        return self.filter(must, [] if now is None else [self.expired(now)])

    def by_hashes(self, scope: NamespaceScope, namespace: str, hashes: Sequence[str], now: datetime | None) -> F:
        """The memories of one namespace with one of those content hashes, whatever their status; with `now`, none
        expired at that time."""
        must = [*self.scope(scope, (namespace,)), self.match_any("content_hash", sorted(set(hashes)))]
        return self.filter(must, [] if now is None else [self.expired(now)])

    def session_turns(self, scope: NamespaceScope, namespace: str, session_id: str) -> F:
        """The memories of one session that are not facts extracted from events (not turns to follow)."""
        in_session = [*self.scope(scope, (namespace,)), self.match("session_id", session_id)]
        return self.filter(in_session, [self.match("source.tool", EXTRACTED)])

    def copies(self, scope: NamespaceScope, origin_id: str) -> F | None:
        """The linked copies of a memory in namespaces the scope can write (None: it can write none)."""
        if not scope.writable and not scope.admin:
            return None
        return self.writable(scope, self.match("origin_id", origin_id))

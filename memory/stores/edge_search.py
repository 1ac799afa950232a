"""The searches of `EdgeVectorStore` (`EdgeSearches`, its base: the store holds the shard; an engine call runs
through `_run`, in a worker thread or, when it reads few points, on the calling thread), the engine's side of the
search port of `memory.stores.engine_store`: by meaning (`_nearest`, `search_many`) and by keywords (`_by_keywords`,
BM25 with its IDF over the searched namespaces), each one engine job with its decoding, and without the namespace
condition when it selects nothing the tenant condition does not (`memory.stores.edge_namespaces`).

A recall's searches and reads by id of up to `INLINE_POINTS` points run on the calling thread. The engine
holds the GIL for the whole of a call (two threads querying one shard use 1.0 core of 2), so a worker thread frees
nothing for the event loop while the engine works, and handing the job to it and its result back cost more CPU than
the hop itself suggests (about 0.7 ms per search: `MemoryService.recall` took 5.1-5.4 ms of CPU with its two
searches in worker threads and 3.7-3.8 ms with them inline, 1,000 memories, jemalloc, the same answers). A larger
read (a recall for more than 37 hits, or a deployment asking for more candidates) stays a worker-thread job, as do
writes, maintenance and reads of many pages (`_run`): there the event loop still gets the GIL every switch interval
while the job decodes, so another tenant's call never waits behind the whole of it.

A search reads each point's getters once: the engine converts a point's id, payload and vectors to Python objects
on every read of them (a dense vector: 256 floats).

A keyword search's IDF corpus (the searched namespaces, or the tenant) is not counted by the engine over a filter
once the store keeps its statistics (`memory.stores.keyword_stats`, built by `EdgeVectorStore.maintain` and kept on
every write): the query weights are scaled by the corpus's IDF and the engine is given a corpus that matches nothing.
Until they are built, and after a write that could not keep them, the engine counts over the filter as before.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import qdrant_edge as qe

from memory import cpu_meter
from memory.errors import BackendUnavailable, NamespaceForbidden
from memory.models import Memory
from memory.ports import NearestQuery, RecallFilter, ScoredMemory, SparseVector
from memory.scope import NamespaceScope
from memory.stores.common import (
    DENSE,
    FACET_LIMIT,
    IDF_NAMESPACE_LIMIT,
    SPARSE,
    DenseVector,
    keyword_only_hits,
    terms_of,
)
from memory.stores.edge_filters import FILTERS, scope_conditions
from memory.stores.edge_namespaces import KnownNamespaces
from memory.stores.engine_store import EngineStore, KeywordSearch
from memory.stores.keyword_stats import EMPTY_CORPUS, KeywordStats, corpus_namespaces
from memory.stores.payload import decode
from memory.stores.point_cache import Point, PointCache, as_dense, recallable

T = TypeVar("T")
# a read of up to this many points (a search's limit, ids read) runs on the calling thread: a default recall's 75
# candidates and keyword depth (`MemoryLimits.recall_candidates`), about 1-2 ms of CPU
INLINE_POINTS = 80
# the scope conditions (tenant, namespaces) of each searched tuple of namespaces
Conditions = Mapping[tuple[str, ...], list[Any]]


class EdgeSearches(EngineStore[qe.Filter]):
    _filters = FILTERS
    _shard: Any
    _tenants: set[str]  # every tenant with a point in the shard (a superset)
    _namespaces: KnownNamespaces
    _stats: KeywordStats  # the shard's keyword statistics, kept on write once built (`keyword_stats`)
    _cache: PointCache  # decoded points by id, dropped by every write that touches them (`point_cache`)

    _closed: bool

    async def _run(self, fn: Callable[[], T], points: int | None = None) -> T:
        """`fn` as a job charged to the calling request: a read of `points` points on the calling thread when they
        are few (`INLINE_POINTS`, see the module docstring), anything else in a worker thread; engine errors as
        `BackendUnavailable`."""
        if self._closed:
            raise BackendUnavailable("vector store is closed")
        try:
            return await cpu_meter.run_sync(fn, inline=points is not None and points <= INLINE_POINTS)
        except (BackendUnavailable, NamespaceForbidden):
            raise
        except Exception as exc:  # the engine raises plain exceptions for I/O and corruption
            raise BackendUnavailable(f"vector store error: {type(exc).__name__}") from exc

    async def search_many(
        self, scope: NamespaceScope, queries: Sequence[NearestQuery]
    ) -> builtins.list[builtins.list[ScoredMemory]]:
        if not queries:
            return []
        in_scope = {query.namespaces: scope_conditions(scope, query.namespaces) for query in queries}

        def query(conditions: Conditions) -> list[list[Any]]:
            filters: dict[tuple[tuple[str, ...], RecallFilter], qe.Filter] = {}  # a batch's searches share a few
            requests = []
            for query in queries:
                key = (query.namespaces, query.flt)
                if (query_filter := filters.get(key)) is None:
                    query_filter = filters[key] = FILTERS.recall(conditions[query.namespaces], query.flt)
                nearest = qe.Query.Nearest(list(query.vector), using=DENSE)
                requests.append(
                    qe.QueryRequest(
                        limit=query.limit, query=nearest, filter=query_filter, with_payload=True, with_vector=[DENSE]
                    )
                )
            if len(requests) == 1:  # a batch of one plans more than the query alone
                return [self._shard.query(requests[0])]
            return list(self._shard.query_batch(qe.QueryBatchRequest(requests)))

        def query_and_decode() -> builtins.list[builtins.list[ScoredMemory]]:  # one engine job with its decoding
            decoded: dict[str, Memory | None] = {}  # a memory near several queries is decoded once
            found: list[list[ScoredMemory]] = []
            for points in self._scoped(scope.tenant, in_scope, query):
                hits = []
                for p in points:
                    point_id = str(p.id)
                    if point_id not in decoded:
                        decoded[point_id] = decode(point_id, p.payload)
                    if (memory := decoded[point_id]) is not None:
                        hits.append(ScoredMemory(memory, float(p.score), vector=(p.vector or {}).get(DENSE) or ()))
                found.append(hits)
            return found

        return await self._run(query_and_decode, sum(query.limit for query in queries))

    async def _nearest(
        self, scope: NamespaceScope, namespaces: tuple[str, ...], vector: Sequence[float], limit: int, flt: RecallFilter
    ) -> list[ScoredMemory]:
        in_scope = {namespaces: scope_conditions(scope, namespaces)}
        dense = qe.Query.Nearest(list(vector), using=DENSE)

        cached = self._cache.enabled

        def query_and_decode() -> list[ScoredMemory]:  # one engine job with its decoding
            snapshot = self._cache.snapshot()  # before the engine reads (`point_cache`)
            ids_only = cached and self._cache.warm  # the payloads of the few points the cache lacks read by id

            def query(conditions: Conditions) -> list[Any]:
                request = qe.QueryRequest(
                    limit=limit,
                    query=dense,
                    filter=FILTERS.recall(conditions[namespaces], flt),
                    with_payload=not ids_only,
                    with_vector=False if ids_only else [SPARSE],
                )
                points: list[Any] = self._shard.query(request)
                return points

            points = self._scoped(scope.tenant, in_scope, query)
            if not cached:
                return [
                    ScoredMemory(m, float(p.score), terms=terms_of(p.vector))
                    for p in points
                    if (m := decode(p.id, p.payload))
                ]
            found = [(str(p.id), float(p.score), p) for p in points]
            held, missing = self._cache.lookup(snapshot, [point_id for point_id, _, _ in found])
            if missing and not ids_only and not self._cache.filling():  # decoded as without a cache
                hits = []
                for point_id, score, p in found:
                    if point := held.get(point_id):
                        hits.append(ScoredMemory(point.memory, score, terms=point.terms))
                    elif m := decode(point_id, p.payload):
                        hits.append(ScoredMemory(m, score, terms=terms_of(p.vector)))
                return hits
            if missing:
                if ids_only:
                    read = self._read_points(missing)
                    self._cache.put(snapshot, read)
                    held.update(recallable(read, scope.tenant, flt))
                else:
                    wanted = set(missing)
                    read = [
                        (point_id, Point(m, terms_of(p.vector)))
                        for point_id, _, p in found
                        if point_id in wanted and (m := decode(point_id, p.payload))
                    ]
                    self._cache.put(snapshot, read)
                    held.update(read)
            return [
                ScoredMemory(point.memory, score, terms=point.terms)
                for point_id, score, _ in found
                if (point := held.get(point_id))
            ]

        return await self._run(query_and_decode, limit)

    def _keywords(
        self, scope: NamespaceScope, in_scope: Sequence[Any], namespaces: tuple[str, ...], sparse: SparseVector
    ) -> tuple[qe.SparseVector, Any]:
        """(In an engine job.) A keyword query's vector and search params. Where the IDF is the corpus's
        (`_idf`) and the store keeps its statistics, the weights are scaled by the corpus's IDF and the engine,
        given `EMPTY_CORPUS`, counts nothing: the same scores within a few 1e-7 of their value, without walking the
        query terms' posting lists against the corpus (`KeywordStats.weighted`; `corpus_namespaces` is the
        corpus `idf_corpus` bounds). Searches take no lock: one that races a write may see its points in the engine
        before its counts in the statistics, for that search only."""
        indices, values = list(sparse.indices), list(sparse.values)
        if not self._shard_wide_idf(scope, namespaces) and self._stats.ready:
            indices, values = self._stats.weighted(indices, values, scope.tenant, corpus_namespaces(namespaces))
            return qe.SparseVector(indices, values), EMPTY_CORPUS
        return qe.SparseVector(indices, values), self._idf(scope, in_scope, namespaces)

    def _shard_wide_idf(self, scope: NamespaceScope, namespaces: tuple[str, ...]) -> bool:
        """Whether the search's IDF corpus is the whole shard: a wide search (`idf_corpus`) while the shard holds
        its tenant alone."""
        wide = not namespaces or len(namespaces) > IDF_NAMESPACE_LIMIT
        return wide and self._tenants <= {scope.tenant}

    def _idf(self, scope: NamespaceScope, in_scope: Sequence[Any], namespaces: tuple[str, ...]) -> Any:
        """IDF within the tenant: over the searched namespaces, or the tenant for wide searches (`idf_corpus`;
        `in_scope` lacks the namespace condition when the tenant has no other namespace: the same points).
        While the shard holds this tenant alone, the tenant's statistics are the shard's: the engine's global
        IDF gives them without counting over a filter (2.5 ms of CPU per keyword query at 100k memories)."""
        if self._shard_wide_idf(scope, namespaces):
            return None
        return qe.SearchParams(idf=qe.IdfParams(corpus=FILTERS.idf_corpus(in_scope, namespaces)))

    async def _by_keywords(self, scope: NamespaceScope, search: KeywordSearch) -> list[ScoredMemory]:
        """Reads payloads and vectors only for the hits the caller does not hold (nor the cache), in the same
        engine job as the query."""
        namespaces, known = search.namespaces, search.known
        in_scope = {namespaces: scope_conditions(scope, namespaces)}

        def query(conditions: Conditions) -> list[Any]:
            scoped = conditions[namespaces]
            keywords, params = self._keywords(scope, scoped, namespaces, search.sparse)
            request = qe.QueryRequest(
                limit=search.depth,
                query=qe.Query.Nearest(keywords, using=SPARSE),
                filter=FILTERS.recall(scoped, search.flt),
                with_vector=False,
                with_payload=False,
                params=params,
            )
            points: list[Any] = self._shard.query(request)
            return points

        def query_then_fetch_new() -> list[ScoredMemory]:  # one engine job, the decoding in it too
            snapshot = self._cache.snapshot()  # before the engine reads (`point_cache`)
            hits = [(str(p.id), float(p.score)) for p in self._scoped(scope.tenant, in_scope, query)]
            new = [hit_id for hit_id, _ in hits if hit_id not in known]
            held, missing = self._cache.lookup(snapshot, new, dense=True) if new else ({}, [])
            fetched: list[tuple[Memory, DenseVector | None, tuple[int, ...]]] = [
                (point.memory, point.dense, point.terms) for point in held.values()
            ]
            read = []
            filling = bool(missing) and self._cache.filling()
            for record in self._shard.retrieve(missing, True, [DENSE, SPARSE]) if missing else ():
                vectors = record.vector or {}
                if (memory := decode(record.id, record.payload)) is not None:
                    dense, terms = vectors.get(DENSE), terms_of(vectors)
                    fetched.append((memory, dense, terms))
                    if filling:
                        read.append((str(record.id), Point(memory, terms, as_dense(dense), has_dense=True)))
            self._cache.put(snapshot, read)
            return keyword_only_hits(search.vector, scope.tenant, search.statuses, hits, known, fetched)

        return await self._run(query_then_fetch_new, search.depth)

    def _read_points(self, ids: Sequence[str]) -> list[tuple[str, Point]]:
        """(In an engine job.) Points read by id, with their keyword terms, for a dense search that asked the
        engine for ids and scores only."""
        return [
            (str(record.id), Point(memory, terms_of(record.vector)))
            for record in self._shard.retrieve(list(ids), True, [SPARSE])
            if (memory := decode(record.id, record.payload)) is not None
        ]

    def _scoped(self, tenant: str, in_scope: Conditions, query: Callable[[Conditions], T]) -> T:
        """(In an engine job.) `query` given, for each searched namespaces' scope conditions in `in_scope`, the
        narrowest that select the same points (`_narrowest`); given `in_scope` itself, again, when a namespace of
        the tenant was added while it ran: a write racing it may have put a point it must not see where it looked."""
        narrowed = {key: self._narrowest(tenant, key, conditions) for key, conditions in in_scope.items()}
        result = query({key: conditions for key, (conditions, _) in narrowed.items()})
        if any(epoch is not None and not self._namespaces.unchanged(tenant, epoch) for _, epoch in narrowed.values()):
            result = query(in_scope)
        return result

    def _facet_hits(self, key: str, flt: qe.Filter | None) -> list[tuple[str, int]]:
        """(In an engine job.) Each value of the payload field `key` among the points passing `flt`, counted."""
        response = self._shard.facet(qe.FacetRequest(key, limit=FACET_LIMIT, exact=True, filter=flt))
        return [(str(hit.value), int(hit.count)) for hit in response.hits]

    def _narrowest(self, tenant: str, namespaces: tuple[str, ...], in_scope: list[Any]) -> tuple[list[Any], int | None]:
        """The tenant condition alone, with the epoch to check after the query (`KnownNamespaces.covering`), when
        `namespaces` names every namespace the tenant has in the store (read on its first search); else `in_scope`
        (the tenant and namespace conditions) and None."""
        if len(in_scope) == 1:  # the whole tenant already
            return in_scope, None
        if not self._namespaces.learned(tenant):
            hits = self._facet_hits("namespace", FILTERS.filter(in_scope[:1]))
            self._namespaces.learn(tenant, (value for value, _ in hits), complete=len(hits) < FACET_LIMIT)
        epoch = self._namespaces.covering(tenant, namespaces)
        return (in_scope, None) if epoch is None else (in_scope[:1], epoch)

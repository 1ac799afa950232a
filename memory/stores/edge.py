"""`EdgeVectorStore`: the embedded default, Qdrant's in-process Rust engine (`qdrant-edge-py`) on local disk.

One shard per data directory, guarded by a lock file (the engine allows one process per directory). The model id
and vector size are recorded beside the shard; opening it with another embedder is refused. Calls run in worker
threads so the event loop never blocks on the engine; writes are serialised in-process so read-modify-write
updates (access counts) do not race. `maintain()` builds indexes off the request path.
"""

from __future__ import annotations

import builtins
import fcntl
import os
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread
import qdrant_edge as qe

from memory import cpu_meter
from memory.errors import BackendUnavailable, NamespaceForbidden
from memory.models import EXTRACTED, Memory, MemoryKind
from memory.ports import ListQuery, NearestQuery, RecallFilter, ScoredMemory, SparseVector, UpsertItem
from memory.scope import NamespaceScope
from memory.stores.common import (
    DENSE,
    FACET_LIMIT,
    IDF_LEAVES_OUT,
    SPARSE,
    check_writable,
    idf_corpus,
    keyword_only_hits,
    prefetch_limit,
    terms_of,
    unpack,
    visible_namespaces,
)
from memory.stores.edge_filters import match_any, match_value, scope_conditions, search_filter
from memory.stores.edge_shard import open_shard
from memory.stores.payload import (
    STATUS_ACTIVE,
    TENANT_FIELD,
    decode,
    decode_all,
    recallable_statuses,
    to_payload,
)

HASH_PAGE = 256  # memories read per engine call by `find_by_hashes`
T = TypeVar("T")


class EdgeVectorStore:
    def __init__(self, shard: Any, lock_fd: int, path: Path) -> None:
        self._shard = shard
        self._lock_fd = lock_fd
        self._path = path
        self._write_lock = anyio.Lock()
        self._closed = False
        self._dirty = False
        # every tenant with a point in the shard (a superset: purges do not shrink it). While it is one tenant,
        # that tenant's term statistics are the shard's, which the engine keeps without filtering (`_idf`).
        tenants = shard.facet(qe.FacetRequest(TENANT_FIELD, limit=FACET_LIMIT, exact=True))
        self._tenants = {str(hit.value) for hit in tenants.hits}

    # -- lifecycle -------------------------------------------------------------------------------------------
    @classmethod
    def open(cls, path: Path, *, model_id: str, dimension: int) -> EdgeVectorStore:
        path.mkdir(parents=True, exist_ok=True)
        lock_fd = os.open(path / "LOCK", os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(lock_fd)
            raise BackendUnavailable(f"vector store {path} is open in another process") from None
        try:
            shard = open_shard(path, model_id, dimension)
        except BaseException:
            os.close(lock_fd)
            raise
        return cls(shard, lock_fd, path)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        async with self._write_lock:
            await anyio.to_thread.run_sync(self._shard.flush)
            await anyio.to_thread.run_sync(self._shard.close)
        os.close(self._lock_fd)

    async def _run(self, fn: Callable[[], T]) -> T:
        if self._closed:
            raise BackendUnavailable("vector store is closed")
        try:
            return await cpu_meter.run_sync(fn)
        except (BackendUnavailable, NamespaceForbidden):
            raise
        except Exception as exc:  # the engine raises plain exceptions for I/O and corruption
            raise BackendUnavailable(f"vector store error: {type(exc).__name__}") from exc

    # -- writes ----------------------------------------------------------------------------------------------
    async def upsert(self, scope: NamespaceScope, items: Sequence[UpsertItem]) -> None:
        points = []
        for item in items:
            memory, vector, sparse = unpack(item)
            check_writable(scope, memory)
            vectors: dict[str, Any] = {} if memory.is_archived else {DENSE: list(vector)}  # archived: no dense
            if sparse is not None:
                vectors[SPARSE] = qe.SparseVector(list(sparse.indices), list(sparse.values))
            points.append(qe.Point(memory.id, vectors, to_payload(memory)))
        if not points:
            return
        # An id that already exists outside the caller's writable namespaces is left untouched.
        operation = qe.UpdateOperation.upsert_points(points, condition=self._writable_filter(scope))
        self._tenants.add(scope.tenant)  # before the write: no search may see its points with the old statistics
        async with self._write_lock:
            await self._run(lambda: self._shard.update(operation))
            self._dirty = True

    def _writable_filter(self, scope: NamespaceScope, *extra: Any) -> qe.Filter:
        conditions: list[Any] = [match_value(TENANT_FIELD, scope.tenant)]
        if not scope.admin:
            conditions.append(match_any("namespace", scope.writable))
        return qe.Filter(must=[*conditions, *extra])

    async def update(self, scope: NamespaceScope, memory: Memory) -> None:
        check_writable(scope, memory)
        payload = to_payload(memory)
        target = self._writable_filter(scope, qe.HasIdCondition({memory.id}))
        operations = [qe.UpdateOperation.overwrite_payload_by_filter(target, payload)]
        if memory.is_archived:  # out of the dense index; its payload first, so default recall never meets it
            operations.append(qe.UpdateOperation.delete_vectors_by_filter(target, [DENSE]))
        async with self._write_lock:
            await self._run(lambda: [self._shard.update(operation) for operation in operations])
            self._dirty = self._dirty or memory.is_archived

    async def copies_of(self, scope: NamespaceScope, origin_id: str) -> list[Memory]:
        writable = () if scope.admin else scope.writable
        if not writable and not scope.admin:
            return []
        flt = qe.Filter(must=[*scope_conditions(scope, writable), match_value("origin_id", origin_id)])
        records, _ = await self._run(
            lambda: self._shard.scroll(qe.ScrollRequest(limit=1000, filter=flt, with_payload=True))
        )
        return decode_all(records)

    async def purge(self, scope: NamespaceScope, namespace: str) -> int:
        if not scope.admin:
            raise NamespaceForbidden("purging a namespace needs an admin scope")
        flt = qe.Filter(must=scope_conditions(scope, (namespace,)))
        async with self._write_lock:
            count = await self._run(lambda: self._shard.count(qe.CountRequest(filter=flt, exact=True)))
            await self._run(lambda: self._shard.update(qe.UpdateOperation.delete_points_by_filter(flt)))
            self._dirty = True
        return int(count)

    async def record_access(self, scope: NamespaceScope, memory_ids: Sequence[str], at: datetime) -> None:
        if not memory_ids:
            return
        flt = qe.Filter(must=[*scope_conditions(scope, visible_namespaces(scope)), qe.HasIdCondition(set(memory_ids))])
        request = qe.ScrollRequest(limit=len(memory_ids), filter=flt, with_payload=["access_count"])

        def bump() -> None:  # one worker-thread hop for the read and every write
            records, _ = self._shard.scroll(request)
            by_count: dict[int, list[Any]] = {}  # one engine update per new count, not per memory
            for record in records:
                by_count.setdefault(int((record.payload or {}).get("access_count") or 0) + 1, []).append(record.id)
            for count, ids in by_count.items():
                patch = {"access_count": count, "last_accessed_at": at.timestamp()}
                self._shard.update(qe.UpdateOperation.set_payload(ids, patch))

        async with self._write_lock:
            await self._run(bump)

    # -- reads -----------------------------------------------------------------------------------------------
    async def get(self, scope: NamespaceScope, memory_id: str) -> Memory | None:
        flt = qe.Filter(must=[*scope_conditions(scope, visible_namespaces(scope)), qe.HasIdCondition({memory_id})])
        records, _ = await self._run(
            lambda: self._shard.scroll(qe.ScrollRequest(limit=1, filter=flt, with_payload=True))
        )
        return decode(records[0].id, records[0].payload) if records else None

    async def get_many(self, scope: NamespaceScope, memory_ids: Sequence[str]) -> builtins.list[Memory]:
        if not memory_ids:
            return []
        ids = set(memory_ids)
        flt = qe.Filter(must=[*scope_conditions(scope, visible_namespaces(scope)), qe.HasIdCondition(set(ids))])
        records, _ = await self._run(
            lambda: self._shard.scroll(qe.ScrollRequest(limit=len(ids), filter=flt, with_payload=True))
        )
        return decode_all(records)

    async def find_by_hash(
        self,
        scope: NamespaceScope,
        namespace: str,
        content_hash: str,
        *,
        live_only: bool = True,
        now: datetime | None = None,
    ) -> Memory | None:
        must = [*scope_conditions(scope, (namespace,)), match_value("content_hash", content_hash)]
        if live_only:
            must.append(match_value("status", STATUS_ACTIVE))
        must_not: list[Any] = []
        if now is not None:
            must_not.append(qe.FieldCondition("expires_at", range=qe.RangeFloat(lte=now.timestamp())))
        flt = qe.Filter(must=must, must_not=must_not)
        records, _ = await self._run(
            lambda: self._shard.scroll(qe.ScrollRequest(limit=1, filter=flt, with_payload=True))
        )
        return decode(records[0].id, records[0].payload) if records else None

    async def find_by_hashes(
        self, scope: NamespaceScope, namespace: str, content_hashes: Sequence[str], *, now: datetime | None = None
    ) -> builtins.list[Memory]:
        if not content_hashes:
            return []
        must = [*scope_conditions(scope, (namespace,)), match_any("content_hash", sorted(set(content_hashes)))]
        must_not: list[Any] = []
        if now is not None:
            must_not.append(qe.FieldCondition("expires_at", range=qe.RangeFloat(lte=now.timestamp())))
        flt = qe.Filter(must=must, must_not=must_not)

        def every_page() -> list[Any]:  # one worker-thread hop for all pages (forced repeats share a hash)
            records: list[Any] = []
            offset: Any = None
            while True:
                page = qe.ScrollRequest(offset=offset, limit=HASH_PAGE, filter=flt, with_payload=True)
                more, offset = self._shard.scroll(page)
                records += more
                if offset is None:
                    return records

        return decode_all(await self._run(every_page))

    async def search_many(
        self, scope: NamespaceScope, queries: Sequence[NearestQuery]
    ) -> builtins.list[builtins.list[ScoredMemory]]:
        if not queries:
            return []
        filters: dict[tuple[tuple[str, ...], RecallFilter], qe.Filter] = {}  # a batch's searches share a few
        requests = []
        for query in queries:
            key = (query.namespaces, query.flt)
            if (query_filter := filters.get(key)) is None:
                query_filter = filters[key] = search_filter(scope_conditions(scope, query.namespaces), query.flt)
            nearest = qe.Query.Nearest(list(query.vector), using=DENSE)
            requests.append(
                qe.QueryRequest(
                    limit=query.limit, query=nearest, filter=query_filter, with_payload=True, with_vector=[DENSE]
                )
            )

        def query_and_decode() -> builtins.list[builtins.list[ScoredMemory]]:  # decoded in the worker thread too
            if len(requests) == 1:  # a batch of one plans more than the query alone
                batches = [self._shard.query(requests[0])]
            else:
                batches = self._shard.query_batch(qe.QueryBatchRequest(requests))
            decoded: dict[str, Memory | None] = {}  # a memory near several queries is decoded once
            found: list[list[ScoredMemory]] = []
            for points in batches:
                hits = []
                for p in points:
                    point_id = str(p.id)
                    if point_id not in decoded:
                        decoded[point_id] = decode(p.id, p.payload)
                    if (memory := decoded[point_id]) is not None:
                        hits.append(ScoredMemory(memory, float(p.score), vector=(p.vector or {}).get(DENSE) or ()))
                found.append(hits)
            return found

        return await self._run(query_and_decode)

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
    ) -> list[ScoredMemory]:
        in_scope = scope_conditions(scope, namespaces)
        query_filter = search_filter(in_scope, flt)
        if sparse is None or not sparse.indices:
            dense = qe.Query.Nearest(list(vector), using=DENSE)
            request = qe.QueryRequest(
                limit=limit, query=dense, filter=query_filter, with_payload=True, with_vector=[SPARSE]
            )

            def query_and_decode() -> list[ScoredMemory]:  # decoded in the worker thread too, off the event loop
                return [
                    ScoredMemory(m, float(p.score), terms=tuple(terms_of(p.vector)))
                    for p in self._shard.query(request)
                    if (m := decode(p.id, p.payload))
                ]

            return await self._run(query_and_decode)
        keywords = qe.Query.Nearest(qe.SparseVector(list(sparse.indices), list(sparse.values)), using=SPARSE)
        idf = self._idf(scope, in_scope, namespaces)
        return await self._keyword_scores(
            scope, keywords, query_filter, prefetch_limit(limit), idf, flt, vector, known or {}
        )

    def _idf(self, scope: NamespaceScope, in_scope: Sequence[Any], namespaces: tuple[str, ...]) -> Any:
        """IDF within the tenant: over the searched namespaces, or the tenant for wide searches (`idf_corpus`).
        While the shard holds this tenant alone, the tenant's statistics are the shard's: the engine's global
        IDF gives them without counting over a filter (2.5 ms of CPU per keyword query at 100k memories)."""
        corpus = idf_corpus(in_scope, namespaces)
        if len(corpus) == 1 and self._tenants <= {scope.tenant}:
            return None
        derived = match_value(*IDF_LEAVES_OUT)
        return qe.SearchParams(idf=qe.IdfParams(corpus=qe.Filter(must=corpus, must_not=[derived])))

    async def _keyword_scores(
        self,
        scope: NamespaceScope,
        keywords: Any,
        query_filter: Any,
        depth: int,
        idf: Any,
        flt: RecallFilter,
        vector: Sequence[float],
        known: Mapping[str, ScoredMemory],
    ) -> list[ScoredMemory]:
        """A keyword-only search that reads payloads and vectors only for the hits the caller does not hold."""
        request = qe.QueryRequest(
            limit=depth, query=keywords, filter=query_filter, with_vector=False, with_payload=False, params=idf
        )

        statuses = recallable_statuses(flt.include_superseded, flt.include_archived)

        def query_then_fetch_new() -> list[ScoredMemory]:  # one worker-thread hop, the decoding in it too
            points = self._shard.query(request)
            new = [p.id for p in points if str(p.id) not in known]
            records = self._shard.retrieve(new, True, [DENSE, SPARSE]) if new else []
            fetched = (
                (m, (r.vector or {}).get(DENSE), terms_of(r.vector)) for r in records if (m := decode(r.id, r.payload))
            )
            hits = [(str(p.id), float(p.score)) for p in points]
            return keyword_only_hits(vector, scope.tenant, statuses, hits, known, fetched)

        return await self._run(query_then_fetch_new)

    async def latest_in_session(self, scope: NamespaceScope, namespace: str, session_id: str) -> Memory | None:
        flt = qe.Filter(
            must=[*scope_conditions(scope, (namespace,)), match_value("session_id", session_id)],
            must_not=[match_value("source.tool", EXTRACTED)],  # a fact extracted from events is not a turn to follow
        )
        newest_first = qe.OrderBy("created_at", direction=qe.Direction.Desc)
        request = qe.ScrollRequest(limit=1, filter=flt, with_payload=True, order_by=newest_first)
        records, _ = await self._run(lambda: self._shard.scroll(request))
        return decode(records[0].id, records[0].payload) if records else None

    async def list(self, scope: NamespaceScope, query: ListQuery) -> tuple[list[Memory], str | None]:
        must: list[Any] = scope_conditions(scope, query.namespaces)
        if query.kind is not None:
            must.append(match_value("kind", query.kind.value))
        if not query.include_deleted:
            must.append(match_value("status", STATUS_ACTIVE))
        request = qe.ScrollRequest(
            offset=query.after, limit=query.limit, filter=qe.Filter(must=must), with_payload=True
        )
        records, next_offset = await self._run(lambda: self._shard.scroll(request))
        memories = decode_all(records)
        return memories, (str(next_offset) if next_offset is not None else None)

    async def count(self, scope: NamespaceScope, namespaces: tuple[str, ...]) -> int:
        flt = qe.Filter(must=scope_conditions(scope, namespaces))
        return int(await self._run(lambda: self._shard.count(qe.CountRequest(filter=flt, exact=True))))

    async def namespace_counts(self, scope: NamespaceScope, kind: MemoryKind | None = None) -> dict[str, int]:
        must = [*scope_conditions(scope, ()), match_value("status", STATUS_ACTIVE)]
        if kind is not None:
            must.append(match_value("kind", kind.value))
        request = qe.FacetRequest("namespace", limit=FACET_LIMIT, exact=True, filter=qe.Filter(must=must))
        response = await self._run(lambda: self._shard.facet(request))
        return {str(hit.value): int(hit.count) for hit in response.hits}

    async def tenants(self) -> builtins.list[str]:
        request = qe.FacetRequest(TENANT_FIELD, limit=FACET_LIMIT, exact=True)
        response = await self._run(lambda: self._shard.facet(request))
        return sorted(str(hit.value) for hit in response.hits)

    # -- operations ------------------------------------------------------------------------------------------
    async def ping(self) -> None:
        await self._run(self._shard.info)

    async def maintain(self) -> None:
        """Flush and build indexes if anything was written since the last run (blocking work in a thread)."""
        if not self._dirty or self._closed:
            return
        self._dirty = False
        await self._run(self._shard.flush)
        await self._run(self._shard.optimize)

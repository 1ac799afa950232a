"""`EdgeVectorStore`: the embedded default, Qdrant's in-process Rust engine (`qdrant-edge-py`) on local disk.

One shard per data directory, guarded by a lock file (the engine allows one process per directory). The model id
and vector size are recorded beside the shard; opening it with another embedder is refused. Writes, maintenance
and reads of many pages run in worker threads; a recall's searches and reads by id of a few points on the calling
thread (the engine holds the GIL throughout a call either way: `memory.stores.edge_search`). Writes are serialised
in-process so read-modify-write updates (access counts) do not race. `maintain()` builds indexes off the request
path, and the keyword statistics (`memory.stores.keyword_stats`) that every write then keeps in the same worker job
as its engine write.
"""

from __future__ import annotations

import builtins
import fcntl
import os
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread
import qdrant_edge as qe

from memory.errors import BackendUnavailable, NamespaceForbidden
from memory.models import EXTRACTED, Memory, MemoryKind
from memory.ports import ListQuery, UpsertItem
from memory.scope import NamespaceScope
from memory.stores.common import (
    DENSE,
    FACET_LIMIT,
    SPARSE,
    check_writable,
    unpack,
    visible_namespaces,
)
from memory.stores.edge_filters import match_any, match_value, scope_conditions
from memory.stores.edge_namespaces import KnownNamespaces
from memory.stores.edge_search import EdgeSearches
from memory.stores.edge_shard import open_shard
from memory.stores.keyword_stats import KeywordStats
from memory.stores.payload import (
    STATUS_ACTIVE,
    TENANT_FIELD,
    decode,
    decode_all,
    to_payload,
)
from memory.stores.point_cache import PointCache

HASH_PAGE = 256  # memories read per engine call by `find_by_hashes`
T = TypeVar("T")


class EdgeVectorStore(EdgeSearches):
    def __init__(self, shard: Any, lock_fd: int, path: Path, cache_points: int = 0) -> None:
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
        self._namespaces = KnownNamespaces()  # each tenant's namespaces: a search naming all needs no condition
        # the keyword statistics of each namespace and tenant: built by `maintain`, kept by each write (`_keeping`)
        self._stats = KeywordStats()
        # decoded points by id for the searches: this process alone writes the shard (`point_cache`)
        self._cache = PointCache(cache_points)

    # -- lifecycle -------------------------------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        path: Path,
        *,
        model_id: str,
        dimension: int,
        search_threads: int | None = None,
        cache_points: int = 0,
    ) -> EdgeVectorStore:
        """The store in `path`, its engine searching with `search_threads` threads (None: sized to the machine,
        `edge_shard.search_threads`), its searches keeping up to `cache_points` decoded points (`point_cache`)."""
        path.mkdir(parents=True, exist_ok=True)
        lock_fd = os.open(path / "LOCK", os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(lock_fd)
            raise BackendUnavailable(f"vector store {path} is open in another process") from None
        try:
            shard = open_shard(path, model_id, dimension, search_threads)
        except BaseException:
            os.close(lock_fd)
            raise
        return cls(shard, lock_fd, path, cache_points)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        async with self._write_lock:
            await anyio.to_thread.run_sync(self._shard.flush)
            await anyio.to_thread.run_sync(self._shard.close)
        os.close(self._lock_fd)

    # -- writes ----------------------------------------------------------------------------------------------
    async def upsert(self, scope: NamespaceScope, items: Sequence[UpsertItem]) -> None:
        points = []
        namespaces = set()
        for item in items:
            memory, vector, sparse = unpack(item)
            check_writable(scope, memory)
            vectors: dict[str, Any] = {} if memory.is_archived else {DENSE: list(vector)}  # archived: no dense
            if sparse is not None:
                vectors[SPARSE] = qe.SparseVector(list(sparse.indices), list(sparse.values))
            points.append(qe.Point(memory.id, vectors, to_payload(memory)))
            namespaces.add(memory.namespace)
        if not points:
            return
        # An id that already exists outside the caller's writable namespaces is left untouched.
        operation = qe.UpdateOperation.upsert_points(points, condition=self._writable_filter(scope))
        # both before the write: no search may see its points with the old statistics, or without its namespace
        self._tenants.add(scope.tenant)
        self._namespaces.add(scope.tenant, namespaces)
        ids = [point.id for point in points]
        async with self._write_lock:
            # read back: an id the condition left untouched keeps what it held
            await self._run(
                self._keeping(lambda: self._shard.update(operation), lambda: self._stats.observe(self._shard, ids), ids)
            )
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
        self._namespaces.add(scope.tenant, (memory.namespace,))  # it may move the memory to another namespace
        if memory.is_archived:  # out of the dense index; its payload first, so default recall never meets it
            operations.append(qe.UpdateOperation.delete_vectors_by_filter(target, [DENSE]))

        def write() -> None:
            for operation in operations:
                self._shard.update(operation)

        # read back: the payload may move it to another namespace, or change its source (consolidated ones are not
        # counted); its keyword vector stays (an archived memory loses its dense vector only)
        async with self._write_lock:
            await self._run(self._keeping(write, lambda: self._stats.observe(self._shard, [memory.id]), [memory.id]))
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
            delete = qe.UpdateOperation.delete_points_by_filter(flt)
            await self._run(
                self._keeping(
                    lambda: self._shard.update(delete), lambda: self._stats.purge(scope.tenant, namespace), None
                )
            )
            self._dirty = True
        return int(count)

    async def delete(self, scope: NamespaceScope, memory_ids: Sequence[str]) -> int:
        if not scope.admin:
            raise NamespaceForbidden("deleting memories needs an admin scope")
        if not memory_ids:
            return 0
        ids: set[Any] = set(memory_ids)
        # the tenant condition: a point of another tenant with one of the ids is left alone
        flt = qe.Filter(must=[*scope_conditions(scope, ()), qe.HasIdCondition(ids)])
        request = qe.ScrollRequest(limit=len(ids), filter=flt, with_payload=False)
        async with self._write_lock:
            records, _ = await self._run(lambda: self._shard.scroll(request))
            found = [record.id for record in records]
            if not found:
                return 0
            delete = qe.UpdateOperation.delete_points_by_filter(flt)
            # read back: each deleted id then counts for nothing, taking back exactly what it added
            await self._run(
                self._keeping(
                    lambda: self._shard.update(delete), lambda: self._stats.observe(self._shard, found), found
                )
            )
            self._dirty = True
        return len(found)

    def _keeping(
        self, write: Callable[[], object], record: Callable[[], object], ids: Sequence[object] | None
    ) -> Callable[[], None]:
        """A worker job for a write that may change which keyword vectors a namespace holds, run under the write
        lock: the engine `write`, then, while the statistics are kept, `record` (the same change in them), between
        the search cache's `begin_write` and `end_write` of the written points (`ids`; None: any). On any exception
        (the engine's, or reading the write back) the statistics are invalidated and the cache emptied, whatever
        the engine applied: searches count their IDF over the filter again until `maintain` rebuilds them."""

        def job() -> None:
            self._cache.begin_write()
            try:
                write()
                if self._stats.ready:
                    record()
            except BaseException:
                self._cache.end_write(None)
                self._stats.invalidate()
                raise
            self._cache.end_write(ids)

        return job

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
            self._cache.begin_write()
            try:
                for count, ids in by_count.items():
                    patch = {"access_count": count, "last_accessed_at": at.timestamp()}
                    self._shard.update(qe.UpdateOperation.set_payload(ids, patch))
            finally:  # every record read, written or not: the engine may have applied part of it
                self._cache.end_write(record.id for record in records)

        async with self._write_lock:
            await self._run(bump)

    # -- reads -----------------------------------------------------------------------------------------------
    async def get(self, scope: NamespaceScope, memory_id: str) -> Memory | None:
        flt = qe.Filter(must=[*scope_conditions(scope, visible_namespaces(scope)), qe.HasIdCondition({memory_id})])
        records, _ = await self._run(
            lambda: self._shard.scroll(qe.ScrollRequest(limit=1, filter=flt, with_payload=True)), points=1
        )
        return decode(records[0].id, records[0].payload) if records else None

    async def get_many(self, scope: NamespaceScope, memory_ids: Sequence[str]) -> builtins.list[Memory]:
        if not memory_ids:
            return []
        ids: set[Any] = set(memory_ids)
        flt = qe.Filter(must=[*scope_conditions(scope, visible_namespaces(scope)), qe.HasIdCondition(ids)])
        records, _ = await self._run(
            lambda: self._shard.scroll(qe.ScrollRequest(limit=len(ids), filter=flt, with_payload=True)), len(ids)
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
        """Build the keyword statistics if they are not kept (the first run, or after a write that could not keep
        them); then flush and build indexes if anything was written since the last run (blocking work in a thread).

        The statistics are built here, under the write lock, because `KeywordStats.build` reads the whole shard
        page by page and must see no write meanwhile: a write landing between two pages, and recorded before the
        build's counts replace what was kept, would be lost. Writes wait for it (0.5 s at 25k memories)
        and searches meanwhile count their IDF over the filter; building on a search's path would make that search
        wait for the writes, and the writes for it."""
        if self._closed:
            return
        if not self._stats.ready:
            async with self._write_lock:
                if not self._stats.ready:
                    await self._run(lambda: self._stats.build(self._shard))
        if not self._dirty:
            return
        self._dirty = False
        await self._run(self._shard.flush)
        await self._run(self._shard.optimize)

"""`EdgeVectorStore`: the embedded default, Qdrant's in-process Rust engine (`qdrant-edge-py`) on local disk.

One shard per data directory, guarded by a lock file (the engine allows one process per directory). The model id
and vector size are recorded beside the shard; opening it with another embedder is refused. Writes, maintenance
and reads of many pages run in worker threads; a recall's searches and reads by id of a few points on the calling
thread (the engine holds the GIL throughout a call either way: `memory.stores.edge_search`). Writes are serialised
in-process so read-modify-write updates (access counts) do not race. `maintain()` builds indexes off the request
path, and the keyword statistics (`memory.stores.keyword_stats`) that every write then keeps in the same worker job
as its engine write. The reads, checks and filters shared with the server store are `memory.stores.engine_store`
and `memory.stores.filters`; this module is the engine's side of their port for lifecycle, writes and reads
(`memory.stores.edge_search` for searches).
"""

from __future__ import annotations

import builtins
import fcntl
import os
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import qdrant_edge as qe

from memory.errors import BackendUnavailable
from memory.models import Memory
from memory.ports import UpsertItem
from memory.scope import NamespaceScope
from memory.stores.common import DENSE, SPARSE, check_writable, unpack
from memory.stores.edge_filters import FILTERS
from memory.stores.edge_namespaces import KnownNamespaces
from memory.stores.edge_search import EdgeSearches
from memory.stores.edge_shard import open_shard
from memory.stores.engine_store import access_groups
from memory.stores.keyword_stats import KeywordStats
from memory.stores.payload import TENANT_FIELD, decode_all, to_payload
from memory.stores.point_cache import PointCache


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
        self._tenants = {value for value, _ in self._facet_hits(TENANT_FIELD, None)}
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
        operation = qe.UpdateOperation.upsert_points(points, condition=FILTERS.writable(scope))
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

    async def update(self, scope: NamespaceScope, memory: Memory) -> None:
        check_writable(scope, memory)
        payload = to_payload(memory)
        target = FILTERS.writable(scope, FILTERS.has_id([memory.id]))
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

    # -- the engine's port (`EngineStore`) ----------------------------------------------------------------------
    async def _scroll(
        self, flt: qe.Filter, limit: int, offset: str | None = None, *, newest_first: bool = False, by_id: bool = False
    ) -> tuple[builtins.list[Memory], str | None]:
        """A read by id of few points runs on the calling thread (`edge_search`)."""
        order = qe.OrderBy("created_at", direction=qe.Direction.Desc) if newest_first else None
        request = qe.ScrollRequest(offset=offset, limit=limit, filter=flt, with_payload=True, order_by=order)
        records, next_offset = await self._run(lambda: self._shard.scroll(request), limit if by_id else None)
        return decode_all(records), (str(next_offset) if next_offset is not None else None)

    async def _scroll_all(self, flt: qe.Filter, page: int) -> builtins.list[Memory]:
        def every_page() -> list[Any]:  # one worker-thread hop for all pages
            records: list[Any] = []
            offset: Any = None
            while True:
                request = qe.ScrollRequest(offset=offset, limit=page, filter=flt, with_payload=True)
                more, offset = self._shard.scroll(request)
                records += more
                if offset is None:
                    return records

        return decode_all(await self._run(every_page))

    async def _count(self, flt: qe.Filter) -> int:
        return int(await self._run(lambda: self._shard.count(qe.CountRequest(filter=flt, exact=True))))

    async def _facet(self, key: str, flt: qe.Filter | None) -> builtins.list[tuple[str, int]]:
        return await self._run(lambda: self._facet_hits(key, flt))

    async def _purge_where(self, tenant: str, namespace: str, flt: qe.Filter) -> int:
        delete = qe.UpdateOperation.delete_points_by_filter(flt)
        async with self._write_lock:
            count = await self._count(flt)
            purged = self._keeping(
                lambda: self._shard.update(delete), lambda: self._stats.purge(tenant, namespace), None
            )
            await self._run(purged)
            self._dirty = True
        return count

    async def _delete_where(self, flt: qe.Filter, limit: int) -> int:
        request = qe.ScrollRequest(limit=limit, filter=flt, with_payload=False)
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

    async def _bump_access(self, tenant: str, flt: qe.Filter, limit: int, at: datetime) -> None:
        request = qe.ScrollRequest(limit=limit, filter=flt, with_payload=["access_count"])

        def bump() -> None:  # one worker-thread hop for the read and every write
            records, _ = self._shard.scroll(request)
            self._cache.begin_write()
            try:
                for count, ids in access_groups(records).items():  # one engine update per new count
                    patch = {"access_count": count, "last_accessed_at": at.timestamp()}
                    self._shard.update(qe.UpdateOperation.set_payload(ids, patch))
            finally:  # every record read, written or not: the engine may have applied part of it
                self._cache.end_write(record.id for record in records)

        async with self._write_lock:
            await self._run(bump)

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

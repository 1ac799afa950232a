"""`QdrantServerStore`: the production vector store, a Qdrant server reached through `qdrant_client`.

One collection per embedding model, named from a prefix, the model id and the dimension (see `collection_name`),
holding every tenant: the tenant is the partition key (a keyword index with `is_tenant=True`) and every call turns
its `NamespaceScope` into a tenant + namespace filter, exactly like the embedded store. The model id and dimension
are recorded in the collection's metadata; opening it with another embedder is refused (`StoreConfigMismatch`).
The reads, checks and filters shared with the embedded store are `memory.stores.engine_store` and
`memory.stores.filters`; this module is the server's side of their port: its calls, writes and searches.

Needs Qdrant >= 1.16 (collection metadata and conditional upserts). Every call is bounded by a deadline and maps
transport and server errors to `BackendUnavailable`; idempotent calls are retried a few times with jittered
exponential backoff, access-count increments never are (`memory.stores.qdrant_collection`).
"""

from __future__ import annotations

import builtins
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from functools import partial
from typing import Any, TypeVar

import anyio
from qdrant_client import AsyncQdrantClient
from qdrant_client import models as qm

from memory.errors import BackendUnavailable
from memory.models import Memory
from memory.ports import NearestQuery, RecallFilter, ScoredMemory, UpsertItem
from memory.scope import NamespaceScope
from memory.stores.common import (
    DENSE,
    FACET_LIMIT,
    SPARSE,
    check_writable,
    keyword_only_hits,
    terms_of,
    unpack,
)
from memory.stores.engine_store import EngineStore, KeywordSearch, access_groups
from memory.stores.payload import (
    TENANT_FIELD,
    decode,
    decode_all,
    to_payload,
)
from memory.stores.qdrant_collection import (
    APP,
    DEFAULT_TIMEOUT,
    ServerCalls,
    check_collection_name,
    collection_name,
    ensure_collection,
)
from memory.stores.qdrant_filters import FILTERS

T = TypeVar("T")


def _dense_of(vector: Any) -> list[float]:
    """The dense vector of a returned point (`with_vectors=[DENSE]` gives a dict of named vectors)."""
    dense = vector.get(DENSE) if isinstance(vector, dict) else None
    return [float(x) for x in dense] if isinstance(dense, list) else []


class QdrantServerStore(EngineStore[qm.Filter]):
    _filters = FILTERS

    def __init__(self, client: AsyncQdrantClient, collection: str, timeout: float) -> None:
        self._client = client
        self._collection = collection
        self._calls = ServerCalls(client, timeout)
        self._access_lock = anyio.Lock()

    @property
    def collection(self) -> str:
        return self._collection

    @property
    def client(self) -> AsyncQdrantClient:
        """The client this store owns (a re-embedding builds the next collection through it)."""
        return self._client

    # -- lifecycle -------------------------------------------------------------------------------------------
    @classmethod
    async def open(
        cls,
        client: AsyncQdrantClient,
        *,
        collection_prefix: str = APP,
        model_id: str,
        dimension: int,
        collection: str | None = None,
        call_timeout: float = DEFAULT_TIMEOUT,
    ) -> QdrantServerStore:
        """Open (creating it if missing) the collection of this embedding model and check its recorded model.

        `collection` pins a name instead of deriving one (e.g. a Qdrant alias switched after a re-embedding).
        `call_timeout` bounds each attempt of each call, in seconds. The store owns `client` once open succeeds.
        """
        name = check_collection_name(collection or collection_name(collection_prefix, model_id, dimension))
        store = cls(client, name, call_timeout)
        await ensure_collection(store._calls, name, model_id, dimension)
        return store

    @classmethod
    async def connect(
        cls,
        url: str,
        *,
        api_key: str | None = None,
        prefer_grpc: bool = False,
        collection_prefix: str = APP,
        model_id: str,
        dimension: int,
        call_timeout: float = DEFAULT_TIMEOUT,
    ) -> QdrantServerStore:
        """A client for `url` with `call_timeout` as its transport timeout, then `open`."""
        client = AsyncQdrantClient(
            url=url,
            api_key=api_key,
            prefer_grpc=prefer_grpc,
            timeout=max(1, round(call_timeout)),
            check_compatibility=False,
        )
        try:
            return await cls.open(
                client,
                collection_prefix=collection_prefix,
                model_id=model_id,
                dimension=dimension,
                call_timeout=call_timeout,
            )
        except BaseException:
            await client.close()
            raise

    async def close(self) -> None:
        await self._calls.close()

    async def _call(self, fn: Callable[[], Awaitable[T]], *, idempotent: bool = True) -> T:
        return await self._calls(fn, idempotent=idempotent)

    # -- the engine's port (`EngineStore`) ----------------------------------------------------------------------
    async def _scroll(
        self, flt: qm.Filter, limit: int, offset: str | None = None, *, newest_first: bool = False, by_id: bool = False
    ) -> tuple[builtins.list[Memory], str | None]:
        order = qm.OrderBy(key="created_at", direction=qm.Direction.DESC) if newest_first else None
        records, next_offset = await self._call(
            lambda: self._client.scroll(
                self._collection, scroll_filter=flt, limit=limit, offset=offset, order_by=order, with_payload=True
            )
        )
        return decode_all(records), (str(next_offset) if next_offset is not None else None)

    async def _scroll_all(self, flt: qm.Filter, page: int) -> builtins.list[Memory]:
        found, offset = await self._scroll(flt, page)
        while offset is not None:
            more, offset = await self._scroll(flt, page, offset)
            found += more
        return found

    async def _count(self, flt: qm.Filter) -> int:
        counted = await self._call(lambda: self._client.count(self._collection, count_filter=flt, exact=True))
        return int(counted.count)

    async def _facet(self, key: str, flt: qm.Filter | None) -> builtins.list[tuple[str, int]]:
        response = await self._call(
            lambda: self._client.facet(self._collection, key, facet_filter=flt, limit=FACET_LIMIT, exact=True)
        )
        return [(str(hit.value), int(hit.count)) for hit in response.hits]

    async def _purge_where(self, tenant: str, namespace: str, flt: qm.Filter) -> int:
        count = await self._count(flt)
        await self._call(lambda: self._client.delete(self._collection, qm.FilterSelector(filter=flt)))
        return count

    async def _delete_where(self, flt: qm.Filter, limit: int) -> int:
        count = await self._count(flt)
        if count:
            await self._call(lambda: self._client.delete(self._collection, qm.FilterSelector(filter=flt)))
        return count

    async def _bump_access(self, tenant: str, flt: qm.Filter, limit: int, at: datetime) -> None:
        """Read the counts, then set count + 1 per group of equal counts. Not atomic across gateway replicas (a
        concurrent bump of the same memory elsewhere can be lost); serialised within this process."""
        async with self._access_lock:
            records, _ = await self._call(
                lambda: self._client.scroll(
                    self._collection, scroll_filter=flt, limit=limit, with_payload=["access_count"]
                )
            )
            for count, group in access_groups(records).items():
                patch = {"access_count": count, "last_accessed_at": at.timestamp()}
                in_tenant: list[qm.Condition] = [
                    FILTERS.match(TENANT_FIELD, tenant),
                    FILTERS.has_id([str(i) for i in group]),
                ]
                selector = qm.FilterSelector(filter=FILTERS.filter(in_tenant))
                await self._call(partial(self._client.set_payload, self._collection, patch, selector), idempotent=False)

    # -- writes ----------------------------------------------------------------------------------------------
    async def upsert(self, scope: NamespaceScope, items: Sequence[UpsertItem]) -> None:
        points = []
        for item in items:
            memory, vector, sparse = unpack(item)
            check_writable(scope, memory)
            vectors: dict[str, Any] = (
                {} if memory.is_archived else {DENSE: [float(x) for x in vector]}
            )  # archived: none
            if sparse is not None:
                vectors[SPARSE] = qm.SparseVector(indices=list(sparse.indices), values=list(sparse.values))
            points.append(qm.PointStruct(id=memory.id, vector=vectors, payload=to_payload(memory)))
        if not points:
            return
        # an existing point is replaced only if it lies in a namespace this scope may write (never another
        # tenant's point that happens to carry the id); new points are inserted
        guard = FILTERS.writable(scope)
        await self._call(lambda: self._client.upsert(self._collection, points, update_filter=guard))

    async def update(self, scope: NamespaceScope, memory: Memory) -> None:
        check_writable(scope, memory)
        payload = to_payload(memory)
        target = FILTERS.writable(scope, FILTERS.has_id([memory.id]))
        if not memory.is_archived:
            await self._call(
                lambda: self._client.overwrite_payload(self._collection, payload, qm.FilterSelector(filter=target))
            )
            return
        operations: list[qm.UpdateOperation] = [  # out of the dense index, in one request; its payload first
            qm.OverwritePayloadOperation(overwrite_payload=qm.SetPayload(payload=payload, filter=target)),
            qm.DeleteVectorsOperation(delete_vectors=qm.DeleteVectors(filter=target, vector=[DENSE])),
        ]
        await self._call(lambda: self._client.batch_update_points(self._collection, operations))

    # -- searches --------------------------------------------------------------------------------------------
    async def search_many(
        self, scope: NamespaceScope, queries: Sequence[NearestQuery]
    ) -> builtins.list[builtins.list[ScoredMemory]]:
        if not queries:
            return []
        requests = [
            qm.QueryRequest(
                query=[float(x) for x in query.vector],
                using=DENSE,
                filter=FILTERS.recall(FILTERS.scope(scope, query.namespaces), query.flt),
                limit=query.limit,
                with_payload=True,
                with_vector=[DENSE],
            )
            for query in queries
        ]
        responses = await self._call(
            lambda: self._client.query_batch_points(self._collection, requests=requests)  # one round trip
        )
        return [
            [
                ScoredMemory(m, float(p.score), vector=_dense_of(p.vector))
                for p in response.points
                if (m := decode(p.id, p.payload))
            ]
            for response in responses
        ]

    async def _nearest(
        self, scope: NamespaceScope, namespaces: tuple[str, ...], vector: Sequence[float], limit: int, flt: RecallFilter
    ) -> builtins.list[ScoredMemory]:
        query_filter = FILTERS.recall(FILTERS.scope(scope, namespaces), flt)
        points = await self._query([float(x) for x in vector], DENSE, query_filter, limit, with_payload=True)
        return [
            ScoredMemory(m, float(p.score), terms=terms_of(p.vector)) for p in points if (m := decode(p.id, p.payload))
        ]

    async def _by_keywords(self, scope: NamespaceScope, search: KeywordSearch) -> builtins.list[ScoredMemory]:
        """Reads payloads and vectors only for the hits the caller does not hold."""
        in_scope = FILTERS.scope(scope, search.namespaces)
        keywords = qm.SparseVector(indices=list(search.sparse.indices), values=list(search.sparse.values))
        # IDF within the tenant: over the searched namespaces, or the tenant for wide searches (idf_corpus)
        params = qm.SearchParams(idf=qm.IdfCorpusParams(corpus=FILTERS.idf_corpus(in_scope, search.namespaces)))
        query_filter = FILTERS.recall(in_scope, search.flt)
        points = await self._query(keywords, SPARSE, query_filter, search.depth, params=params)
        new = [p.id for p in points if str(p.id) not in search.known]
        records = (
            await self._call(
                lambda: self._client.retrieve(
                    self._collection, ids=new, with_payload=True, with_vectors=[DENSE, SPARSE]
                )
            )
            if new
            else []
        )
        fetched = ((m, _dense_of(r.vector), terms_of(r.vector)) for r in records if (m := decode(r.id, r.payload)))
        hits = [(str(p.id), float(p.score)) for p in points]
        return keyword_only_hits(search.vector, scope.tenant, search.statuses, hits, search.known, fetched)

    async def _query(
        self,
        query: list[float] | qm.SparseVector,
        using: str,
        flt: qm.Filter,
        limit: int,
        *,
        with_payload: bool = False,
        params: qm.SearchParams | None = None,
    ) -> builtins.list[qm.ScoredPoint]:
        """The `limit` points nearest to `query` by the named vector `using` that pass `flt`: with their payload and
        keyword vector when `with_payload`, else ids and scores only."""
        response = await self._call(
            lambda: self._client.query_points(
                self._collection,
                query=query,
                using=using,
                query_filter=flt,
                limit=limit,
                with_payload=with_payload,
                with_vectors=[SPARSE] if with_payload else False,
                search_params=params,
            )
        )
        return response.points

    # -- operations ------------------------------------------------------------------------------------------
    async def ping(self) -> None:
        if not await self._call(lambda: self._client.collection_exists(self._collection)):
            raise BackendUnavailable(f"collection {self._collection} is missing")

    async def maintain(self) -> None:
        """Nothing to do: the server builds its indexes itself."""

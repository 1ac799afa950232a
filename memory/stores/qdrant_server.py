"""`QdrantServerStore`: the production vector store, a Qdrant server reached through `qdrant_client`.

One collection per embedding model, named from a prefix, the model id and the dimension (see `collection_name`),
holding every tenant: the tenant is the partition key (a keyword index with `is_tenant=True`) and every call turns
its `NamespaceScope` into a tenant + namespace filter, exactly like the embedded store. The model id and dimension
are recorded in the collection's metadata; opening it with another embedder is refused (`StoreConfigMismatch`).

Needs Qdrant >= 1.16 (collection metadata and conditional upserts). Every call is bounded by a deadline and maps
transport and server errors to `BackendUnavailable`; idempotent calls are retried a few times with jittered
exponential backoff, access-count increments never are (`memory.stores.qdrant_collection`).
"""

from __future__ import annotations

import builtins
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from functools import partial
from typing import Any, TypeVar

import anyio
from qdrant_client import AsyncQdrantClient
from qdrant_client import models as qm

from memory.clock import to_timestamp
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
    checked_namespaces,
    idf_corpus,
    keyword_only_hits,
    prefetch_limit,
    terms_of,
    unpack,
    visible_namespaces,
)
from memory.stores.payload import (
    STATUS_ACTIVE,
    TENANT_FIELD,
    decode,
    decode_all,
    recallable_statuses,
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

COPIES_LIMIT = 1000
HASH_PAGE = 256  # memories read per call by `find_by_hashes`
T = TypeVar("T")


def _match(key: str, value: str) -> qm.FieldCondition:
    return qm.FieldCondition(key=key, match=qm.MatchValue(value=value))


def _match_any(key: str, values: Sequence[str]) -> qm.FieldCondition:
    return qm.FieldCondition(key=key, match=qm.MatchAny(any=list(values)))


def _has_id(ids: Sequence[str]) -> qm.HasIdCondition:
    return qm.HasIdCondition(has_id=list(ids))


def _dense_of(vector: Any) -> list[float]:
    """The dense vector of a returned point (`with_vectors=[DENSE]` gives a dict of named vectors)."""
    dense = vector.get(DENSE) if isinstance(vector, dict) else None
    return [float(x) for x in dense] if isinstance(dense, list) else []


def scope_conditions(scope: NamespaceScope, namespaces: Sequence[str]) -> list[qm.Condition]:
    """The tenant and namespace conditions every query carries. `()` means the whole tenant (admin only). Unlike the
    embedded store, this one never leaves out a namespace condition as redundant: every gateway replica writes to
    the server, so no process knows a tenant's namespaces (`memory.stores.edge_namespaces`)."""
    conditions: list[qm.Condition] = [_match(TENANT_FIELD, scope.tenant)]
    checked = checked_namespaces(scope, namespaces)
    if checked:
        conditions.append(_match_any("namespace", checked))
    return conditions


def _writable_conditions(scope: NamespaceScope) -> list[qm.Condition]:
    """Conditions a stored point must meet before a write may replace it: same tenant, writable namespace."""
    return scope_conditions(scope, () if scope.admin else scope.writable)


def _search_filter(in_scope: Sequence[qm.Condition], flt: RecallFilter) -> qm.Filter:
    """What a search may return within its scope conditions: the statuses, kinds, tags, session, times and
    attributes `flt` asks for, never a memory expired at `flt.now`."""
    must: list[qm.Condition] = [
        *in_scope,
        _match_any("status", recallable_statuses(flt.include_superseded, flt.include_archived)),
    ]
    if flt.attributes:
        must.append(_match_any("attributes", flt.attributes))
    if flt.kinds:
        must.append(_match_any("kind", [k.value for k in flt.kinds]))
    if flt.tags:
        must.append(_match_any("tags", flt.tags))
    if flt.session_id is not None:
        must.append(_match("session_id", flt.session_id))
    if flt.since is not None or flt.until is not None:
        span = qm.Range(gte=to_timestamp(flt.since), lte=to_timestamp(flt.until))
        must.append(qm.FieldCondition(key="created_at", range=span))
    expired = qm.FieldCondition(key="expires_at", range=qm.Range(lte=flt.now.timestamp()))
    return qm.Filter(must=must, must_not=[expired])


class QdrantServerStore:
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

    async def _scroll(self, flt: qm.Filter, limit: int, offset: str | None = None) -> tuple[list[Memory], str | None]:
        records, next_offset = await self._call(
            lambda: self._client.scroll(
                self._collection, scroll_filter=flt, limit=limit, offset=offset, with_payload=True
            )
        )
        memories = decode_all(records)
        return memories, (str(next_offset) if next_offset is not None else None)

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
        guard = qm.Filter(must=_writable_conditions(scope))
        await self._call(lambda: self._client.upsert(self._collection, points, update_filter=guard))

    async def update(self, scope: NamespaceScope, memory: Memory) -> None:
        check_writable(scope, memory)
        payload = to_payload(memory)
        target = qm.Filter(must=[*_writable_conditions(scope), _has_id([memory.id])])
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

    async def copies_of(self, scope: NamespaceScope, origin_id: str) -> builtins.list[Memory]:
        if not scope.writable and not scope.admin:
            return []
        flt = qm.Filter(must=[*_writable_conditions(scope), _match("origin_id", origin_id)])
        memories, _ = await self._scroll(flt, COPIES_LIMIT)
        return memories

    async def purge(self, scope: NamespaceScope, namespace: str) -> int:
        if not scope.admin:
            raise NamespaceForbidden("purging a namespace needs an admin scope")
        flt = qm.Filter(must=scope_conditions(scope, (namespace,)))
        counted = await self._call(lambda: self._client.count(self._collection, count_filter=flt, exact=True))
        await self._call(lambda: self._client.delete(self._collection, qm.FilterSelector(filter=flt)))
        return int(counted.count)

    async def delete(self, scope: NamespaceScope, memory_ids: Sequence[str]) -> int:
        if not scope.admin:
            raise NamespaceForbidden("deleting memories needs an admin scope")
        if not memory_ids:
            return 0
        # the tenant condition: a point of another tenant with one of the ids is left alone
        flt = qm.Filter(must=[*scope_conditions(scope, ()), _has_id(sorted(set(memory_ids)))])
        counted = await self._call(lambda: self._client.count(self._collection, count_filter=flt, exact=True))
        if counted.count:
            await self._call(lambda: self._client.delete(self._collection, qm.FilterSelector(filter=flt)))
        return int(counted.count)

    async def record_access(self, scope: NamespaceScope, memory_ids: Sequence[str], at: datetime) -> None:
        """Read the counts, then set count + 1 per group of equal counts. Not atomic across gateway replicas (a
        concurrent bump of the same memory elsewhere can be lost); serialised within this process."""
        ids = list(dict.fromkeys(memory_ids))
        if not ids:
            return
        tenant = _match(TENANT_FIELD, scope.tenant)
        flt = qm.Filter(must=[*scope_conditions(scope, visible_namespaces(scope)), _has_id(ids)])
        async with self._access_lock:
            records, _ = await self._call(
                lambda: self._client.scroll(
                    self._collection, scroll_filter=flt, limit=len(ids), with_payload=["access_count"]
                )
            )
            by_count: dict[int, list[str]] = {}
            for record in records:
                count = int((record.payload or {}).get("access_count") or 0)
                by_count.setdefault(count, []).append(str(record.id))
            for count, group in by_count.items():
                patch = {"access_count": count + 1, "last_accessed_at": at.timestamp()}
                selector = qm.FilterSelector(filter=qm.Filter(must=[tenant, _has_id(group)]))
                await self._call(partial(self._client.set_payload, self._collection, patch, selector), idempotent=False)

    # -- reads -----------------------------------------------------------------------------------------------
    async def get(self, scope: NamespaceScope, memory_id: str) -> Memory | None:
        flt = qm.Filter(must=[*scope_conditions(scope, visible_namespaces(scope)), _has_id([memory_id])])
        memories, _ = await self._scroll(flt, 1)
        return memories[0] if memories else None

    async def get_many(self, scope: NamespaceScope, memory_ids: Sequence[str]) -> builtins.list[Memory]:
        if not memory_ids:
            return []
        ids = sorted(set(memory_ids))
        flt = qm.Filter(must=[*scope_conditions(scope, visible_namespaces(scope)), _has_id(ids)])
        memories, _ = await self._scroll(flt, len(ids))
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
        must = [*scope_conditions(scope, (namespace,)), _match("content_hash", content_hash)]
        if live_only:
            must.append(_match("status", STATUS_ACTIVE))
        must_not: list[Any] = []
        if now is not None:
            must_not.append(qm.FieldCondition(key="expires_at", range=qm.Range(lte=now.timestamp())))
        memories, _ = await self._scroll(qm.Filter(must=must, must_not=must_not), 1)
        return memories[0] if memories else None

    async def find_by_hashes(
        self, scope: NamespaceScope, namespace: str, content_hashes: Sequence[str], *, now: datetime | None = None
    ) -> builtins.list[Memory]:
        if not content_hashes:
            return []
        must = [*scope_conditions(scope, (namespace,)), _match_any("content_hash", sorted(set(content_hashes)))]
        must_not: list[Any] = []
        if now is not None:
            must_not.append(qm.FieldCondition(key="expires_at", range=qm.Range(lte=now.timestamp())))
        flt = qm.Filter(must=must, must_not=must_not)
        found, offset = await self._scroll(flt, HASH_PAGE)
        while offset is not None:  # forced repeats share a hash: every page
            more, offset = await self._scroll(flt, HASH_PAGE, offset)
            found += more
        return found

    async def search_many(
        self, scope: NamespaceScope, queries: Sequence[NearestQuery]
    ) -> builtins.list[builtins.list[ScoredMemory]]:
        if not queries:
            return []
        requests = [
            qm.QueryRequest(
                query=[float(x) for x in query.vector],
                using=DENSE,
                filter=_search_filter(scope_conditions(scope, query.namespaces), query.flt),
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
        query_filter = _search_filter(in_scope, flt)
        if sparse is None or not sparse.indices:
            query = [float(x) for x in vector]
            response = await self._call(
                lambda: self._client.query_points(
                    self._collection,
                    query=query,
                    using=DENSE,
                    query_filter=query_filter,
                    limit=limit,
                    with_payload=True,
                    with_vectors=[SPARSE],
                )
            )
            return [
                ScoredMemory(m, float(p.score), terms=terms_of(p.vector))
                for p in response.points
                if (m := decode(p.id, p.payload))
            ]
        keywords = qm.SparseVector(indices=list(sparse.indices), values=list(sparse.values))
        # IDF within the tenant: over the searched namespaces, or the tenant for wide searches (idf_corpus)
        corpus = qm.Filter(must=idf_corpus(in_scope, namespaces), must_not=[_match(*IDF_LEAVES_OUT)])
        params = qm.SearchParams(idf=qm.IdfCorpusParams(corpus=corpus))
        return await self._keyword_scores(
            scope, keywords, query_filter, prefetch_limit(limit), params, flt, vector, known or {}
        )

    async def _keyword_scores(
        self,
        scope: NamespaceScope,
        keywords: qm.SparseVector,
        query_filter: qm.Filter,
        depth: int,
        params: qm.SearchParams,
        flt: RecallFilter,
        vector: Sequence[float],
        known: Mapping[str, ScoredMemory],
    ) -> list[ScoredMemory]:
        """A keyword-only search that reads payloads and vectors only for the hits the caller does not hold."""
        response = await self._call(
            lambda: self._client.query_points(
                self._collection,
                query=keywords,
                using=SPARSE,
                query_filter=query_filter,
                limit=depth,
                with_payload=False,
                with_vectors=False,
                search_params=params,
            )
        )
        new = [p.id for p in response.points if str(p.id) not in known]
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
        hits = [(str(p.id), float(p.score)) for p in response.points]
        statuses = recallable_statuses(flt.include_superseded, flt.include_archived)
        return keyword_only_hits(vector, scope.tenant, statuses, hits, known, fetched)

    async def latest_in_session(self, scope: NamespaceScope, namespace: str, session_id: str) -> Memory | None:
        flt = qm.Filter(
            must=[*scope_conditions(scope, (namespace,)), _match("session_id", session_id)],
            must_not=[_match("source.tool", EXTRACTED)],  # a fact extracted from events is not a turn to follow
        )
        newest_first = qm.OrderBy(key="created_at", direction=qm.Direction.DESC)
        records, _ = await self._call(
            lambda: self._client.scroll(
                self._collection, scroll_filter=flt, limit=1, order_by=newest_first, with_payload=True
            )
        )
        return decode(records[0].id, records[0].payload) if records else None

    async def list(self, scope: NamespaceScope, query: ListQuery) -> tuple[builtins.list[Memory], str | None]:
        must = scope_conditions(scope, query.namespaces)
        if query.kind is not None:
            must.append(_match("kind", query.kind.value))
        if not query.include_deleted:
            must.append(_match("status", STATUS_ACTIVE))
        return await self._scroll(qm.Filter(must=must), query.limit, query.after)

    async def count(self, scope: NamespaceScope, namespaces: tuple[str, ...]) -> int:
        flt = qm.Filter(must=scope_conditions(scope, namespaces))
        counted = await self._call(lambda: self._client.count(self._collection, count_filter=flt, exact=True))
        return int(counted.count)

    async def namespace_counts(self, scope: NamespaceScope, kind: MemoryKind | None = None) -> dict[str, int]:
        must = [*scope_conditions(scope, ()), _match("status", STATUS_ACTIVE)]
        if kind is not None:
            must.append(_match("kind", kind.value))
        response = await self._call(
            lambda: self._client.facet(
                self._collection, "namespace", facet_filter=qm.Filter(must=must), limit=FACET_LIMIT, exact=True
            )
        )
        return {str(hit.value): int(hit.count) for hit in response.hits}

    async def tenants(self) -> builtins.list[str]:
        response = await self._call(
            lambda: self._client.facet(self._collection, TENANT_FIELD, limit=FACET_LIMIT, exact=True)
        )
        return sorted(str(hit.value) for hit in response.hits)

    # -- operations ------------------------------------------------------------------------------------------
    async def ping(self) -> None:
        if not await self._call(lambda: self._client.collection_exists(self._collection)):
            raise BackendUnavailable(f"collection {self._collection} is missing")

    async def maintain(self) -> None:
        """Nothing to do: the server builds its indexes itself."""

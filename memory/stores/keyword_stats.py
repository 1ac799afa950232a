"""`KeywordStats`: the BM25 corpus statistics of the embedded store, kept in process and updated on write.

A keyword search's IDF is counted over a corpus (`memory.stores.common.idf_corpus`): the tenant's searched
namespaces, or the whole tenant, leaving out consolidated memories (`IDF_LEAVES_OUT`). Asked to count that over a
filter, the engine walks the query terms' posting lists against the corpus on every query. This module owns the
same counts, kept as writes happen: per (tenant, namespace) and per tenant, the number of keyword documents (points
with a keyword vector, an empty one included, as the engine counts them) and each term id's document frequency; and
per point id what it added, so an overwrite or a purge takes back exactly that.

`weighted` turns a query into one the engine scores the same way with an IDF corpus that matches no point
(`EMPTY_CORPUS`): the engine then multiplies every query weight by the same constant, ln 2 (N = 0, df = 0), and
each weight here is chosen so that product is the float32 weight the engine computes from the corpus's own counts,
`w * ln((N - df + 0.5) / (df + 0.5) + 1)` in float32 with the C library's `logf` (the one the engine links). About
one weight in seven has no float32 whose product is exactly that; it is left one float32 step off (scores differ
by at most a few 1e-7 of their value). The engine's global statistics cannot serve as the constant base: its
posting lists keep deleted points until the optimizer rebuilds their segment, so its N and df are not those of
the shard's points.

State is guarded by one lock: engine calls, and so these, run in worker threads. `build` reads the whole shard
and nothing may write to it meanwhile: the store builds under its write lock and reports each write (`observe`,
`purge`) under that lock, once the engine applied it.
"""

from __future__ import annotations

import ctypes
import math
import struct
import threading
import uuid
from array import array
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any, NamedTuple

import qdrant_edge as qe

from memory.stores.common import IDF_LEAVES_OUT, IDF_NAMESPACE_LIMIT, SPARSE
from memory.stores.payload import TENANT_FIELD

# A corpus no point can match (a condition and its negation): the IDF is then ln 2 for every term. The condition is
# on the tenant index and no tenant is the empty string, so the engine finds it empty without reading a point.
_NO_TENANT = qe.FieldCondition(TENANT_FIELD, match=qe.MatchValue(""))
EMPTY_CORPUS = qe.SearchParams(idf=qe.IdfParams(corpus=qe.Filter(must=[_NO_TENANT], must_not=[_NO_TENANT])))
STATS_PAYLOAD = [TENANT_FIELD, "namespace", IDF_LEAVES_OUT[0]]  # the payload fields `doc_of` reads
SCROLL_PAGE = 2048

_F32 = struct.Struct("<f")
_U32 = struct.Struct("<I")


class Doc(NamedTuple):
    """What one point adds to the statistics: its tenant, its namespace and its keyword vector's term ids."""

    tenant: str
    namespace: str
    terms: Sequence[int]


def _load_logf() -> Callable[[float], float]:
    """The C library's float32 `logf`, which the engine calls (glibc); else float64 `log` rounded to float32."""
    try:
        logf = ctypes.CDLL("libm.so.6").logf
    except (OSError, AttributeError):
        return lambda x: _f32(math.log(x))
    logf.restype, logf.argtypes = ctypes.c_float, [ctypes.c_float]
    return lambda x: float(logf(x))


def _f32(x: float) -> float:
    """`x` rounded to float32. One float32 operation done in float64 and rounded once is the float32 result."""
    value: float = _F32.unpack(_F32.pack(x))[0]
    return value


_logf = _load_logf()


@lru_cache(maxsize=65_536)
def idf(documents: int, frequency: int) -> float:
    """The engine's IDF of a term in `frequency` of `documents` documents, computed as it does (float32)."""
    n, df = _f32(documents), _f32(frequency)
    return _logf(_f32(_f32(_f32(n - df) + 0.5) / _f32(df + 0.5)) + 1.0)


BASE_IDF = idf(0, 0)  # what the engine multiplies every query weight by under `EMPTY_CORPUS`: float32 ln 2


@lru_cache(maxsize=65_536)
def scaled(weight: float, documents: int, frequency: int) -> float:
    """The query weight the engine turns, under `EMPTY_CORPUS`, into `weight * idf(documents, frequency)` as it
    computes that with the corpus itself (float32): the float32 nearest `target / ln 2`. When its product with
    ln 2 rounds to another float32, no float32 reaches the target and that product is one float32 step off."""
    return _f32(_f32(_f32(weight) * idf(documents, frequency)) / BASE_IDF)


def corpus_namespaces(namespaces: Sequence[str]) -> tuple[str, ...] | None:
    """The namespaces a search's IDF corpus covers (`common.idf_corpus`); None: the whole tenant."""
    return tuple(namespaces) if 0 < len(namespaces) <= IDF_NAMESPACE_LIMIT else None


def doc_of(payload: Mapping[str, Any] | None, vector: object) -> Doc | None:
    """What a stored point adds to the statistics, from its payload (`STATS_PAYLOAD`) and vectors; None for a point
    outside every corpus: without a keyword vector, or left out (`IDF_LEAVES_OUT`)."""
    sparse = vector.get(SPARSE) if isinstance(vector, dict) else None
    indices = getattr(sparse, "indices", None)
    if indices is None or not payload:
        return None
    value: Any = payload
    for part in IDF_LEAVES_OUT[0].split("."):
        value = value.get(part) if isinstance(value, dict) else None
    tenant, namespace = payload.get(TENANT_FIELD), payload.get("namespace")
    if value == IDF_LEAVES_OUT[1] or not isinstance(tenant, str) or not isinstance(namespace, str):
        return None
    return Doc(tenant, namespace, [int(i) for i in indices])


def _point_key(point_id: object) -> bytes:
    """A point id as a dict key: a UUID's 16 bytes (the engine returns `uuid.UUID`, callers pass strings)."""
    if isinstance(point_id, uuid.UUID):
        return point_id.bytes
    try:
        return uuid.UUID(str(point_id)).bytes
    except ValueError:
        return str(point_id).encode()


class _Counts:
    """The document count and document frequencies of one namespace, or of one tenant."""

    __slots__ = ("df", "docs")

    def __init__(self) -> None:
        self.docs = 0
        self.df: dict[int, int] = {}

    def add(self, terms: Iterable[int], sign: int) -> None:
        self.docs += sign
        df = self.df
        for term in terms:
            if (count := df.get(term, 0) + sign) > 0:
                df[term] = count
            else:
                del df[term]


class _State:
    def __init__(self) -> None:
        self.slot_of: dict[tuple[str, str], int] = {}  # (tenant, namespace) -> its slot
        self.keys: list[tuple[str, str]] = []  # slot -> (tenant, namespace)
        self.namespaces: list[_Counts] = []  # slot -> its counts
        self.tenants: dict[str, _Counts] = {}
        # point id key -> packed uint32: its namespace slot, then its distinct term ids (~200 bytes a point)
        self.points: dict[bytes, bytes] = {}

    def set(self, key: bytes, doc: Doc | None) -> None:
        if (old := self.points.pop(key, None)) is not None:
            packed = array("I", old)
            self.count(packed[0], packed[1:], -1)
        if doc is not None:
            slot = self.slot_of.get((doc.tenant, doc.namespace))
            if slot is None:
                slot = self.slot_of[(doc.tenant, doc.namespace)] = len(self.keys)
                self.keys.append((doc.tenant, doc.namespace))
                self.namespaces.append(_Counts())
            packed = array("I", [slot, *sorted(set(doc.terms))])
            self.count(slot, packed[1:], 1)
            self.points[key] = packed.tobytes()

    def count(self, slot: int, terms: Collection[int], sign: int) -> None:
        self.namespaces[slot].add(terms, sign)
        tenant = self.keys[slot][0]
        counts = self.tenants.get(tenant)
        if counts is None:
            counts = self.tenants[tenant] = _Counts()
        counts.add(terms, sign)
        if counts.docs == 0:
            del self.tenants[tenant]


class KeywordStats:
    """Per-(tenant, namespace) and per-tenant keyword document counts and document frequencies (see the module)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state = _State()
        self._ready = False

    @property
    def ready(self) -> bool:
        """Whether the statistics were built (`build` or `reset`) and answer for the shard."""
        return self._ready

    def invalidate(self) -> None:
        """Stop answering until the next `build`: a write could not be recorded (the engine failed reading it back)."""
        with self._lock:
            self._ready = False

    # -- writes ----------------------------------------------------------------------------------------------
    def build(self, shard: Any) -> int:
        """Count the whole shard (a scroll of `STATS_PAYLOAD` and keyword vectors) in place of what was kept.
        Nothing may write to the shard meanwhile. Returns the number of documents counted."""
        state = _State()
        offset: Any = None
        while True:
            page = qe.ScrollRequest(offset=offset, limit=SCROLL_PAGE, with_payload=STATS_PAYLOAD, with_vector=[SPARSE])
            records, offset = shard.scroll(page)
            for record in records:
                state.set(_point_key(record.id), doc_of(record.payload, record.vector))
            if offset is None:
                break
        with self._lock:
            self._state, self._ready = state, True
        return len(state.points)

    def reset(self, docs: Iterable[tuple[object, Doc | None]]) -> None:
        """Replace every count with those of `docs` (point id, what it adds), and mark the statistics ready."""
        state = _State()
        for point_id, doc in docs:
            state.set(_point_key(point_id), doc)
        with self._lock:
            self._state, self._ready = state, True

    def set_many(self, docs: Iterable[tuple[object, Doc | None]]) -> None:
        """Record what each point id now holds (None: nothing counted: deleted, consolidated, or without a keyword
        vector), taking back what it held before."""
        keyed = [(_point_key(point_id), doc) for point_id, doc in docs]
        with self._lock:
            for key, doc in keyed:
                self._state.set(key, doc)

    def observe(self, shard: Any, point_ids: Iterable[object]) -> None:
        """Read back what the engine now holds for these ids (after a write to them) and record it: an upsert the
        engine refused (its condition) leaves them as they were, an id it does not hold counts for nothing."""
        ids = list(point_ids)
        if not ids:
            return
        held = {_point_key(r.id): doc_of(r.payload, r.vector) for r in shard.retrieve(ids, STATS_PAYLOAD, [SPARSE])}
        keys = [_point_key(point_id) for point_id in ids]
        with self._lock:
            for key in keys:
                self._state.set(key, held.get(key))

    def purge(self, tenant: str, namespace: str) -> int:
        """Take back every document of a namespace whose points were all deleted. Returns how many there were."""
        with self._lock:
            state = self._state
            slot = state.slot_of.get((tenant, namespace))
            if slot is None:
                return 0
            prefix = _U32.pack(slot)
            gone = [key for key, packed in state.points.items() if packed[:4] == prefix]
            for key in gone:
                state.set(key, None)
        return len(gone)

    # -- reads -----------------------------------------------------------------------------------------------
    def corpus(self, tenant: str, namespaces: Collection[str] | None, terms: Sequence[int]) -> tuple[int, list[int]]:
        """(N, the df of each of `terms`) over a corpus: the tenant's `namespaces`, or the whole tenant (None; an
        empty collection is no namespace at all)."""
        with self._lock:
            state = self._state
            if namespaces is None:
                groups = [c for c in (state.tenants.get(tenant),) if c is not None]
            else:
                slots = (state.slot_of.get((tenant, ns)) for ns in set(namespaces))
                groups = [state.namespaces[slot] for slot in slots if slot is not None]
            documents = sum(c.docs for c in groups)
            frequencies = [sum(c.df.get(t, 0) for c in groups) for t in terms]
        return documents, frequencies

    def weighted(
        self, indices: Sequence[int], values: Sequence[float], tenant: str, namespaces: Collection[str] | None
    ) -> tuple[list[int], list[float]]:
        """The query (indices, values) that, searched with `EMPTY_CORPUS`, scores as `indices, values` does with
        the IDF counted over the corpus (`corpus`; `corpus_namespaces` gives a search's): each weight scaled."""
        documents, frequencies = self.corpus(tenant, namespaces, indices)
        return list(indices), [scaled(w, documents, df) for w, df in zip(values, frequencies, strict=True)]

    def size(self) -> int:
        """How many documents are counted, over every tenant."""
        with self._lock:
            return len(self._state.points)

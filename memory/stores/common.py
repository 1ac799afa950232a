"""Scope rules every vector store applies the same way, whatever its query language.

Each store turns a `NamespaceScope` into its own tenant + namespace filter; what it filters on, and what it
refuses, is decided here so the embedded and the server stores cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from memory.errors import NamespaceForbidden
from memory.models import CONSOLIDATED, Memory
from memory.ports import ScoredMemory, SparseVector, UpsertItem
from memory.scope import NamespaceScope
from memory.stores.payload import status_of

T = TypeVar("T")
DenseVector = Sequence[float] | npt.NDArray[np.float32]  # a stored dense vector: as the engine gives it, or kept

# A keyword search's candidate list is at least this deep, whatever its limit, so a memory ranked well by keywords
# (but not first) still reaches the caller's fusion with its BM25 score.
PREFETCH_MIN = 50

# BM25's IDF is computed over the searched namespaces, so a score never reflects memories the caller cannot read.
# Counting over a filter of many namespaces is slow in the engine (100 namespaces at 100k memories: +12 ms per
# recall, bench/RESULTS.md), so a wider search takes its term statistics from the whole tenant instead: scores
# then weigh the tenant's other namespaces too (statistics only; no content, never another tenant's).
IDF_NAMESPACE_LIMIT = 16
# Nor do the statistics count consolidated memories (`source.tool` "consolidate"): they restate their sources with
# the sources' words, and counted again those words would look commoner in a namespace that was consolidated than in
# one that was not, moving its episodes' ranking (bench/RESULTS.md, "Consolidation"). The one-tenant shard's
# unfiltered statistics (`EdgeVectorStore._idf`) still count them.
IDF_LEAVES_OUT = ("source.tool", CONSOLIDATED)

DENSE = "dense"  # the named dense vector in every store
SPARSE = "bm25"  # the named sparse (keyword) vector
FACET_LIMIT = 100_000  # most distinct values a facet query returns (tenants, namespaces)


def idf_corpus(conditions: Sequence[T], namespaces: Sequence[str]) -> list[T]:
    """The scope conditions (tenant first, then namespaces) that bound the IDF statistics of a keyword query."""
    return list(conditions) if len(namespaces) <= IDF_NAMESPACE_LIMIT else list(conditions[:1])


def prefetch_limit(limit: int) -> int:
    return max(limit, PREFETCH_MIN)


def checked_namespaces(scope: NamespaceScope, namespaces: Sequence[str]) -> tuple[str, ...]:
    """The namespaces a query filters on, after checking each is readable. `()` means the whole tenant, which
    only admin scopes may ask for."""
    if namespaces:
        if not scope.readable_subset(namespaces):
            raise NamespaceForbidden("namespace outside the caller's grants")
        return tuple(namespaces)
    if not scope.admin:
        raise NamespaceForbidden("an unrestricted namespace query needs an admin scope")
    return ()


def visible_namespaces(scope: NamespaceScope) -> tuple[str, ...]:
    """Every namespace a lookup by id may find a memory in (`()`: the whole tenant, for admins)."""
    return () if scope.admin else scope.all_readable


def check_writable(scope: NamespaceScope, memory: Memory) -> None:
    """Refuse a memory that is not in a writable namespace of the scope's own tenant."""
    if memory.tenant != scope.tenant or not scope.can_write(memory.namespace):
        raise NamespaceForbidden("namespace not writable with this token")


def unpack(item: UpsertItem) -> tuple[Memory, Sequence[float], SparseVector | None]:
    """An upsert item as (memory, dense vector, sparse vector or None); an empty sparse vector counts as none."""
    sparse = item[2] if len(item) == 3 else None
    return item[0], item[1], sparse if sparse is not None and sparse.indices else None


def cosines(query: Sequence[float], vectors: Sequence[DenseVector | None]) -> list[float]:
    """Cosine similarity of each vector to the query (0 for a zero vector, and for none: an archived memory has
    no dense vector)."""
    present = [i for i, vector in enumerate(vectors) if vector is not None and len(vector)]
    result = [0.0] * len(vectors)
    if not present:
        return result
    matrix = np.asarray([vectors[i] for i in present], dtype=np.float64)
    q = np.asarray(query, dtype=np.float64)
    norms = np.linalg.norm(matrix, axis=1) * (np.linalg.norm(q) or 1.0)
    dots = matrix @ q
    for i, d, n in zip(present, dots, norms, strict=True):
        result[i] = float(d / n) if n > 0 else 0.0
    return result


def terms_of(vector: object) -> tuple[int, ...]:
    """The term ids of a returned point's keyword vector (`with_vector` includes it; none if it has none). Both
    clients give them as a list of ints."""
    sparse = vector.get(SPARSE) if isinstance(vector, dict) else None
    indices = getattr(sparse, "indices", None)
    return tuple(indices) if indices is not None else ()


def keyword_only_hits(
    query: Sequence[float],
    tenant: str,
    statuses: Collection[str],
    hits: Sequence[tuple[str, float]],
    known: Mapping[str, ScoredMemory],
    fetched: Iterable[tuple[Memory, DenseVector | None, tuple[int, ...]]],
) -> list[ScoredMemory]:
    """A keyword-only search's hits (id, BM25 score), in its order: one the caller holds (`known`) as held with
    the new score; a new one from what was `fetched` for it (memory, dense vector, term ids), its cosine computed.
    Fetched points are read by id after a scoped query: one of another tenant, or whose status is no longer one of
    the search's `statuses` (changed between the query and the read), is dropped all the same."""
    read = {m.id: (m, dense, terms) for m, dense, terms in fetched if m.tenant == tenant and status_of(m) in statuses}
    new = [hit_id for hit_id, _ in hits if hit_id not in known and hit_id in read]
    cosine_of = dict(zip(new, cosines(query, [read[i][1] for i in new]), strict=True))
    result = []
    for hit_id, score in hits:
        if hit_id in known:
            held = known[hit_id]
            result.append(ScoredMemory(held.memory, held.similarity, score, held.terms))
        elif hit_id in read:
            memory, _, terms = read[hit_id]
            result.append(ScoredMemory(memory, cosine_of[hit_id], score, terms))
    return result

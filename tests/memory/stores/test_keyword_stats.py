"""`KeywordStats`: counts kept on write, overwrite and purge, and scores equal to the engine's own corpus IDF.

The unit tests check each count a write must move; the engine tests run a real qdrant-edge shard (the store's
schema, `open_shard`) through writes, overwrites, deletes and a purge, and compare the engine's scores with IDF
counted over the corpus filter against the weighted query searched with `EMPTY_CORPUS`.
"""

from __future__ import annotations

import random
import struct
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import qdrant_edge as qe

from memory.embedders.sparse import Bm25Encoder
from memory.models import CONSOLIDATED, Memory, Source
from memory.stores.common import IDF_LEAVES_OUT, IDF_NAMESPACE_LIMIT, SPARSE
from memory.stores.edge_shard import open_shard
from memory.stores.keyword_stats import (
    BASE_IDF,
    EMPTY_CORPUS,
    Doc,
    KeywordStats,
    corpus_namespaces,
    doc_of,
    idf,
    scaled,
)
from memory.stores.payload import to_payload
from tests.memory.conftest import make_memory

A, B = "tenant-a", "tenant-b"


def ids(count: int) -> list[str]:
    return [str(uuid.UUID(int=i + 1)) for i in range(count)]


# -- counts ------------------------------------------------------------------------------------------------------
def test_reset_counts_documents_and_frequencies_per_namespace_and_tenant() -> None:
    p = ids(4)
    stats = KeywordStats()
    assert not stats.ready
    stats.reset(
        [
            (p[0], Doc(A, "x", [1, 2])),
            (p[1], Doc(A, "x", [2, 3, 3])),  # a repeated term id counts once
            (p[2], Doc(A, "y", [1])),
            (p[3], Doc(B, "x", [1, 2, 3])),
        ]
    )
    assert stats.ready
    assert stats.corpus(A, ["x"], [1, 2, 3, 9]) == (2, [1, 2, 1, 0])
    assert stats.corpus(A, ["x", "y", "x"], [1, 2]) == (3, [2, 2])  # a namespace named twice counts once
    assert stats.corpus(A, None, [1, 2, 3]) == (3, [2, 2, 1])
    assert stats.corpus(B, None, [1]) == (1, [1])
    assert stats.corpus(A, ["nowhere"], [1]) == (0, [0])
    assert stats.size() == 4
    stats.invalidate()
    assert not stats.ready


def test_overwrite_takes_back_the_old_terms_and_namespace() -> None:
    p = ids(3)
    stats = KeywordStats()
    stats.reset([(p[0], Doc(A, "x", [1, 2])), (p[1], Doc(A, "x", [2])), (p[2], Doc(A, "y", [5]))])
    stats.set_many([(p[0], Doc(A, "x", [3]))])  # new terms, same namespace
    assert stats.corpus(A, ["x"], [1, 2, 3]) == (2, [0, 1, 1])
    stats.set_many([(uuid.UUID(p[1]), Doc(A, "y", [5, 6]))])  # moved namespace; the id as the engine returns it
    assert stats.corpus(A, ["x"], [2, 3, 5]) == (1, [0, 1, 0])
    assert stats.corpus(A, ["y"], [5, 6]) == (2, [2, 1])
    assert stats.corpus(A, None, [2, 3, 5, 6]) == (3, [0, 1, 2, 1])


def test_deleted_consolidated_or_keywordless_points_count_for_nothing() -> None:
    p = ids(3)
    stats = KeywordStats()
    stats.reset([(p[0], Doc(A, "x", [1])), (p[1], Doc(A, "x", [1])), (p[2], Doc(A, "x", [1]))])
    stats.set_many([(p[0], None), (p[1], None)])
    assert stats.corpus(A, ["x"], [1]) == (1, [1])
    stats.set_many([(p[2], None), (p[2], None)])  # twice: nothing left to take back
    assert stats.corpus(A, ["x"], [1]) == (0, [0])
    assert stats.corpus(A, None, [1]) == (0, [0])
    assert stats.size() == 0


def test_purge_takes_back_one_namespace_only() -> None:
    p = ids(4)
    stats = KeywordStats()
    stats.reset(
        [(p[0], Doc(A, "x", [1])), (p[1], Doc(A, "x", [1, 2])), (p[2], Doc(A, "y", [1])), (p[3], Doc(B, "x", [1]))]
    )
    assert stats.purge(A, "x") == 2
    assert stats.corpus(A, ["x"], [1, 2]) == (0, [0, 0])
    assert stats.corpus(A, None, [1, 2]) == (1, [1, 0])
    assert stats.corpus(B, ["x"], [1]) == (1, [1])
    assert stats.purge(A, "x") == 0
    assert stats.purge(A, "never") == 0
    stats.set_many([(p[0], Doc(A, "x", [7]))])  # the namespace written again after its purge
    assert stats.corpus(A, ["x"], [1, 7]) == (1, [0, 1])


def test_doc_of_reads_the_payload_and_keyword_vector() -> None:
    vector = {SPARSE: qe.SparseVector([3, 1], [1.0, 1.0])}
    payload: dict[str, Any] = {"tenant": A, "namespace": "x", "source": {"tool": "remember"}}
    assert doc_of(payload, vector) == Doc(A, "x", [3, 1])
    assert doc_of(payload, {SPARSE: qe.SparseVector([], [])}) == Doc(A, "x", [])  # the engine counts it in N
    assert doc_of(payload, {"dense": [1.0]}) is None
    assert doc_of(payload, None) is None
    consolidated = {**payload, "source": {"tool": IDF_LEAVES_OUT[1]}}
    assert doc_of(consolidated, vector) is None
    assert doc_of({"tenant": A, "namespace": "x"}, vector) == Doc(A, "x", [3, 1])  # no source stored
    assert doc_of({"namespace": "x"}, vector) is None


def test_corpus_namespaces_follows_the_idf_corpus_rule() -> None:
    assert corpus_namespaces(()) is None
    assert corpus_namespaces(("a", "b")) == ("a", "b")
    wide = [f"n{i}" for i in range(IDF_NAMESPACE_LIMIT + 1)]
    assert corpus_namespaces(wide) is None
    assert corpus_namespaces(wide[:-1]) == tuple(wide[:-1])


def test_scaled_weight_times_the_base_idf_is_the_corpus_weight() -> None:
    rng = random.Random(5)
    exact = 0
    for _ in range(2000):
        n = rng.randrange(0, 200_000)
        df = rng.randrange(0, n + 1)
        weight = rng.choice([1.0, 0.5, 0.3])
        target = _f32(_f32(weight) * idf(n, df))
        got = _f32(_f32(scaled(weight, n, df)) * BASE_IDF)
        assert abs(got - target) <= 2.5e-7 * target  # one float32 step at most
        exact += got == target
    assert exact > 1600  # most weights are reproduced to the bit
    assert scaled(0.7, 0, 0) == _f32(0.7)  # an empty corpus is the base itself


def _f32(x: float) -> float:
    value: float = struct.unpack("<f", struct.pack("<f", x))[0]
    return value


# -- against the engine ------------------------------------------------------------------------------------------
WORDS = (  # noqa: SIM905
    "alice bob carol dave budget kyoto flight hotel train invoice launch review design tea coffee garden piano "
    "dentist visa passport laptop meeting report deadline birthday concert museum recipe bicycle marathon"
).split()


class Engine:
    """A shard with the store's schema, the writes it gets mirrored into `KeywordStats` as the store would."""

    def __init__(self, path: Path) -> None:
        self.shard = open_shard(path, "test-model", 4)
        self.encoder = Bm25Encoder()
        self.stats = KeywordStats()
        self.rng = random.Random(11)

    def text(self) -> str:
        return " ".join(self.rng.choice(WORDS) for _ in range(self.rng.randint(3, 12)))

    def point(self, memory: Memory, keywords: bool = True) -> Any:
        vectors: dict[str, Any] = {"dense": [self.rng.random() + 0.01 for _ in range(4)]}
        if keywords:
            sparse = self.encoder.document(memory.content)
            vectors[SPARSE] = qe.SparseVector(list(sparse.indices), list(sparse.values))
        return qe.Point(memory.id, vectors, to_payload(memory))

    def write(self, points: Sequence[Any], condition: Any = None) -> None:
        self.shard.update(qe.UpdateOperation.upsert_points(list(points), condition=condition))
        if self.stats.ready:
            self.stats.observe(self.shard, [p.id for p in points])

    def scores(self, query: Any, tenant: str, namespaces: Sequence[str], cached: bool) -> list[tuple[str, float]]:
        must: list[Any] = [qe.FieldCondition("tenant", match=qe.MatchValue(tenant))]
        if namespaces:
            must.append(qe.FieldCondition("namespace", match=qe.MatchAny(list(namespaces))))
        corpus_ns = corpus_namespaces(namespaces)
        if cached:
            indices, values = self.stats.weighted(query.indices, query.values, tenant, corpus_ns)
            params = EMPTY_CORPUS
        else:
            indices, values = list(query.indices), list(query.values)
            leaves_out = qe.FieldCondition(IDF_LEAVES_OUT[0], match=qe.MatchValue(IDF_LEAVES_OUT[1]))
            corpus = qe.Filter(must=must if corpus_ns is not None else must[:1], must_not=[leaves_out])
            params = qe.SearchParams(idf=qe.IdfParams(corpus=corpus))
        request = qe.QueryRequest(
            limit=200,
            query=qe.Query.Nearest(qe.SparseVector(indices, values), using=SPARSE),
            filter=qe.Filter(must=must),
            params=params,
            with_payload=False,
            with_vector=False,
        )
        return [(str(p.id), float(p.score)) for p in self.shard.query(request)]

    def assert_same_scores(self) -> None:
        scopes = [(A, ["n0"]), (A, ["n1", "n2"]), (A, []), (B, ["n0"]), (A, [f"n{i}" for i in range(17)])]
        for _ in range(25):
            query = self.encoder.query(self.text())
            for tenant, namespaces in scopes:
                engine = self.scores(query, tenant, namespaces, cached=False)
                cached = self.scores(query, tenant, namespaces, cached=True)
                assert [i for i, _ in engine] == [i for i, _ in cached] or _same_up_to_ties(engine, cached)
                for (_, want), (_, got) in zip(engine, cached, strict=True):
                    assert got == pytest.approx(want, rel=5e-7)


def _same_up_to_ties(engine: list[tuple[str, float]], cached: list[tuple[str, float]]) -> bool:
    """Both lists hold the same ids, and where they differ the engine scores both ids alike (within 2 steps)."""
    want = dict(engine)
    return set(want) == {i for i, _ in cached} and all(
        want[a] == pytest.approx(want[b], rel=5e-7) for (a, _), (b, _) in zip(engine, cached, strict=True)
    )


def memories(engine: Engine, count: int) -> Iterator[Memory]:
    for i in range(count):
        memory = make_memory(engine.text(), tenant=A if i % 5 else B, namespace=f"n{i % 3}")
        if i % 9 == 0:
            memory = replace(memory, source=Source(subject="agent-1", tool=CONSOLIDATED))
        yield memory


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    built = Engine(tmp_path)
    yield built
    built.shard.close()


def test_idf_is_the_engines_to_the_bit(engine: Engine) -> None:
    """Single-term probes (query weight 1, document weight 1: the score is the IDF) over corpora of many sizes."""
    points = []
    for i in range(60):
        memory = make_memory("probe", tenant=A, namespace=f"n{i}")
        terms = [t for t in range(1, 61) if i < t]  # term t in t documents
        points.append(
            qe.Point(
                memory.id,
                {"dense": [1.0, 0, 0, 0], SPARSE: qe.SparseVector(terms, [1.0] * len(terms))},
                to_payload(memory),
            )
        )
    engine.write(points)
    for size in (60, 17, 1):
        corpus = qe.Filter(must=[qe.FieldCondition("namespace", match=qe.MatchAny([f"n{i}" for i in range(size)]))])
        for term in range(1, 61, 7):
            request = qe.QueryRequest(
                limit=1,
                query=qe.Query.Nearest(qe.SparseVector([term], [1.0]), using=SPARSE),
                params=qe.SearchParams(idf=qe.IdfParams(corpus=corpus)),
            )
            assert engine.shard.query(request)[0].score == idf(size, min(term, size))


def test_scores_equal_the_engines_corpus_idf_through_writes_overwrites_and_purges(engine: Engine) -> None:
    written = list(memories(engine, 240))
    engine.write([engine.point(m) for m in written])
    engine.stats.build(engine.shard)
    engine.assert_same_scores()

    rng = random.Random(3)
    a_side = [m for m in written if m.tenant == A]
    # overwrites: new words, a move to another namespace, consolidated, and without a keyword vector
    changed = rng.sample(a_side, 60)
    overwritten = [replace(m, content=engine.text()) for m in changed[:20]]
    overwritten += [replace(m, namespace="n2", content=engine.text()) for m in changed[20:35]]
    overwritten += [replace(m, source=Source(subject="agent-1", tool=CONSOLIDATED)) for m in changed[35:45]]
    engine.write([engine.point(m) for m in overwritten])
    engine.write([engine.point(m, keywords=False) for m in changed[45:55]])
    # an upsert the engine refuses (its condition) changes nothing
    refused = [engine.point(replace(m, content="budget budget kyoto")) for m in changed[55:60]]
    engine.write(refused, condition=qe.Filter(must=[qe.FieldCondition("namespace", match=qe.MatchValue("none"))]))
    # new memories, deletes
    engine.write([engine.point(m) for m in memories(engine, 30)])
    deleted: list[Any] = [m.id for m in rng.sample([m for m in a_side if m not in changed], 25)]
    engine.shard.update(qe.UpdateOperation.delete_points(deleted))
    engine.stats.observe(engine.shard, deleted)
    engine.assert_same_scores()

    purge = qe.Filter(
        must=[
            qe.FieldCondition("tenant", match=qe.MatchValue(A)),
            qe.FieldCondition("namespace", match=qe.MatchValue("n1")),
        ]
    )
    engine.shard.update(qe.UpdateOperation.delete_points_by_filter(purge))
    assert engine.stats.purge(A, "n1") > 0
    engine.assert_same_scores()

    engine.shard.flush()
    engine.shard.optimize()
    engine.assert_same_scores()
    rebuilt = KeywordStats()
    assert rebuilt.build(engine.shard) == engine.stats.size()
    terms = sorted({t for m in written for t in engine.encoder.document(m.content).indices})
    for tenant, namespaces in [(A, ["n0"]), (A, ["n1", "n2"]), (A, None), (B, None)]:
        assert rebuilt.corpus(tenant, namespaces, terms) == engine.stats.corpus(tenant, namespaces, terms)

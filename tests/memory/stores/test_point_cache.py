"""The embedded store's search cache (`memory.stores.point_cache`): searches that read decoded points from it answer
exactly what searches reading every payload from the engine answer, through every kind of write, and a search that
read before a write never keeps what it read.

Two real qdrant-edge stores get the same writes: `cached` keeps a small cache (fewer points than the store holds,
so entries are evicted too), `plain` has none. Their dense and keyword searches are compared hit by hit: the same
ids, scores, terms and every field of every memory.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path

import pytest

from memory.embedders.sparse import Bm25Encoder
from memory.errors import BackendUnavailable
from memory.models import Memory
from memory.ports import RecallFilter, ScoredMemory, SparseVector
from memory.scope import NamespaceScope
from memory.stores.edge import EdgeVectorStore
from memory.stores.point_cache import FILL_EVERY, Point, PointCache
from tests.memory.conftest import START, make_memory, scope
from tests.memory.stores.test_edge_keyword_stats import Failing

pytestmark = pytest.mark.anyio

MODEL, DIM = "point-cache-model", 4
NOW = START + timedelta(days=30)
LIVE = RecallFilter(now=NOW)
EVERY_STATUS = RecallFilter(now=NOW, include_superseded=True, include_archived=True)
WORDS = "alice bob budget kyoto flight hotel train invoice launch review tea coffee garden piano visa".split()  # noqa: SIM905
CAPACITY = 40  # fewer than the store holds: the oldest entries are evicted as searches go


def cached_point(content: str = "tea") -> Point:
    return Point(make_memory(content, tenant="acme"), (1, 2))


# -- the cache alone ---------------------------------------------------------------------------------------------


def test_a_search_that_a_write_overlapped_neither_keeps_what_it_read_nor_trusts_what_is_held() -> None:
    cache = PointCache(10)
    held = cached_point("old")
    cache.put(cache.snapshot(), [("a", held)])
    snapshot = cache.snapshot()  # a search takes it, then reads the engine
    cache.begin_write()  # a write reaches the engine meanwhile
    assert cache.snapshot() == -1  # a search begun now trusts nothing until the write ends
    assert cache.lookup(snapshot, ["a"]) == ({}, ["a"])
    cache.end_write(["b"])
    cache.put(snapshot, [("c", cached_point())])
    assert cache.get("c") is None
    assert cache.lookup(snapshot, ["a"]) == ({}, ["a"])  # ended since the snapshot: still not trusted
    after = cache.snapshot()  # a search that read after the write keeps its reads and trusts what is held
    assert cache.lookup(after, ["a"]) == ({"a": held}, [])
    cache.put(after, [("c", cached_point())])
    assert cache.get("c") is not None


def test_a_write_that_ends_drops_its_points_whatever_form_their_ids_were_written_in_and_a_failed_one_all() -> None:
    cache = PointCache(10)
    point_id, other = str(uuid.uuid4()), str(uuid.uuid4())
    cache.put(cache.snapshot(), [(point_id, cached_point()), (other, cached_point())])
    cache.begin_write()
    cache.end_write([point_id.upper()])
    assert cache.get(point_id) is None and cache.get(other) is not None
    cache.put(cache.snapshot(), [(point_id, cached_point())])
    cache.begin_write()
    cache.end_write([uuid.UUID(point_id)])
    assert cache.get(point_id) is None
    cache.begin_write()
    cache.end_write(None)
    assert len(cache) == 0


def test_beyond_its_capacity_the_oldest_points_go_first_and_a_capacity_of_zero_keeps_none() -> None:
    cache = PointCache(3)
    cache.put(cache.snapshot(), [(str(i), cached_point()) for i in range(5)])
    assert [cache.get(str(i)) is not None for i in range(5)] == [False, False, True, True, True]
    off = PointCache(0)
    off.put(off.snapshot(), [("a", cached_point())])
    assert len(off) == 0 and not off.enabled


def test_a_point_read_with_its_dense_vector_is_not_replaced_by_one_read_without() -> None:
    cache = PointCache(3)
    full = Point(make_memory("tea", tenant="acme"), (1,), None, has_dense=True)
    cache.put(cache.snapshot(), [("a", full)])
    cache.put(cache.snapshot(), [("a", cached_point())])
    assert cache.get("a") is full
    held, missing = cache.lookup(cache.snapshot(), ["a", "b"], dense=True)
    assert list(held) == ["a"] and missing == ["b"]


def test_a_dense_search_asks_for_ids_alone_only_once_most_of_its_hits_are_held() -> None:
    cache = PointCache(10)
    cache.put(cache.snapshot(), [("a", cached_point())])
    for _ in range(40):
        cache.lookup(cache.snapshot(), ["a", "b", "c"])  # a third held
    assert not cache.warm
    for _ in range(60):
        cache.lookup(cache.snapshot(), ["a"])  # all held
    assert cache.warm


def test_a_cold_cache_is_filled_by_one_search_in_a_few_and_a_warm_one_by_every_search() -> None:
    cache = PointCache(10)
    cold = [cache.filling() for _ in range(4 * FILL_EVERY)]
    assert cold.count(True) == 4
    cache.put(cache.snapshot(), [("a", cached_point())])
    for _ in range(60):
        cache.lookup(cache.snapshot(), ["a"])
    assert all(cache.filling() for _ in range(2 * FILL_EVERY))
    assert not any(PointCache(0).filling() for _ in range(2 * FILL_EVERY))


# -- two stores, the same writes -----------------------------------------------------------------------------------


@dataclass
class Pair:
    cached: EdgeVectorStore
    plain: EdgeVectorStore
    rng: random.Random
    encoder: Bm25Encoder
    written: int = 0

    def text(self) -> str:
        return " ".join(self.rng.choice(WORDS) for _ in range(self.rng.randint(2, 7)))

    def memory(self, tenant: str, namespace: str) -> Memory:
        self.written += 1
        at = START + timedelta(seconds=self.written)
        return make_memory(self.text(), tenant=tenant, namespace=namespace, at=at)

    def item(self, memory: Memory) -> tuple[Memory, list[float], SparseVector]:
        dense = [1.0, *(self.rng.random() for _ in range(DIM - 1))]
        return memory, dense, self.encoder.document(memory.content)

    def vector(self) -> list[float]:
        return [self.rng.random() for _ in range(DIM)]

    async def both(self, method: str, *args: object) -> None:
        for store in (self.cached, self.plain):
            await getattr(store, method)(*args)

    async def assert_same_searches(self, who: NamespaceScope, namespaces: tuple[str, ...], rounds: int = 6) -> None:
        for _ in range(rounds):
            vector, query = self.vector(), self.encoder.query(self.text())
            for flt in (LIVE, EVERY_STATUS):
                dense = [await s.search(who, namespaces, vector, 20, flt) for s in (self.cached, self.plain)]
                assert_same_hits(*dense)
                known = {h.memory.id: h for h in dense[1][:5]}
                keyword = [
                    await s.search(who, namespaces, vector, 20, flt, query, known=known)
                    for s in (self.cached, self.plain)
                ]
                assert_same_hits(*keyword)


def assert_same_hits(cached: list[ScoredMemory], plain: list[ScoredMemory]) -> None:
    """The same memories, cosines and terms; BM25 scores within 1e-5, and hits of the same BM25 score in either
    order, those tied at the end of the list either in or out (each engine counts its IDF over the filter: two
    shards given the same writes may differ in the last float bits, and break ties their own way)."""

    def ranked(hits: list[ScoredMemory]) -> list[tuple[float, str]]:
        last = round(hits[-1].keyword, 4) if hits else 0.0
        return sorted((-round(h.keyword, 4), h.memory.id) for h in hits if round(h.keyword, 4) != last or not last)

    assert len(cached) == len(plain)
    assert [h.similarity for h in cached] == [h.similarity for h in plain] or any(h.keyword for h in plain)
    assert ranked(cached) == ranked(plain)
    held = {h.memory.id: h for h in plain}
    compared = [h for h in cached if h.memory.id in held]
    assert len(compared) >= len(ranked(cached))
    assert [(h.memory, h.similarity, h.terms) for h in compared] == [
        (held[h.memory.id].memory, held[h.memory.id].similarity, held[h.memory.id].terms) for h in compared
    ]
    assert [h.keyword for h in compared] == pytest.approx([held[h.memory.id].keyword for h in compared], rel=1e-5)


@pytest.fixture
async def pair(tmp_path: Path) -> AsyncIterator[Pair]:
    cached = EdgeVectorStore.open(tmp_path / "cached", model_id=MODEL, dimension=DIM, cache_points=CAPACITY)
    plain = EdgeVectorStore.open(tmp_path / "plain", model_id=MODEL, dimension=DIM)
    yield Pair(cached, plain, random.Random(11), Bm25Encoder())
    await cached.close()
    await plain.close()


async def test_searches_through_the_cache_answer_what_payload_reads_answer_through_every_kind_of_write(
    pair: Pair, acme: str, globex: str
) -> None:
    admin = scope(acme, admin=True)
    reader = scope(acme, read=["n0", "n1", "n2"])
    mine = [pair.memory(acme, f"n{i % 3}") for i in range(90)]
    await pair.both("upsert", admin, [pair.item(m) for m in mine])
    await pair.both("upsert", scope(globex, admin=True), [pair.item(pair.memory(globex, "n0")) for _ in range(20)])
    scopes = [(reader, ("n0",)), (reader, ("n0", "n1", "n2")), (admin, ())]
    for who, namespaces in scopes:
        await pair.assert_same_searches(who, namespaces)
    assert pair.cached._cache.hits > 0  # the cached store answered from its cache

    rng = random.Random(3)
    changed = rng.sample(mine, 30)
    # rewritten by upsert: new content, new keywords
    await pair.both("upsert", admin, [pair.item(replace(m, content=pair.text())) for m in changed[:6]])
    # updated in place: content, importance, moved, forgotten, superseded, archived, restored
    await pair.both("update", admin, replace(changed[6], content="budget kyoto flight", importance=0.9))
    await pair.both("update", admin, replace(changed[7], namespace="n2"))
    await pair.both("update", admin, replace(changed[8], deleted_at=NOW))
    await pair.both("update", admin, replace(changed[9], superseded_by=changed[10].id))
    await pair.both("update", admin, replace(changed[11], archived_at=NOW, archive_reason="old"))
    await pair.both("update", admin, replace(changed[11], archived_at=None, archive_reason=None))
    # recalled: access counts bumped
    await pair.both("record_access", admin, [m.id for m in changed[12:20]], NOW)
    await pair.both("record_access", admin, [m.id for m in changed[12:14]], NOW + timedelta(hours=1))
    for who, namespaces in scopes:
        await pair.assert_same_searches(who, namespaces)

    await pair.both("purge", admin, "n1")
    for who, namespaces in scopes:
        await pair.assert_same_searches(who, namespaces)
    assert len(pair.cached._cache) <= CAPACITY


async def test_a_write_the_engine_fails_empties_the_cache_and_searches_answer_what_it_holds(
    pair: Pair, acme: str
) -> None:
    admin = scope(acme, admin=True)
    mine = [pair.memory(acme, "n0") for _ in range(20)]
    await pair.both("upsert", admin, [pair.item(m) for m in mine])
    await pair.assert_same_searches(admin, (), rounds=3)
    assert len(pair.cached._cache) > 0

    shard = pair.cached._shard
    pair.cached._shard = Failing(shard, "update", after=True)  # applied, then an error
    changed = replace(mine[0], content="garden piano visa", importance=0.1)
    with pytest.raises(BackendUnavailable):
        await pair.cached.update(admin, changed)
    pair.cached._shard = shard
    assert len(pair.cached._cache) == 0
    await pair.plain.update(admin, changed)
    await pair.assert_same_searches(admin, (), rounds=3)

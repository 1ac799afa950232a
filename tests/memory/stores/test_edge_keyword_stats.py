"""The embedded store keeps its keyword statistics (`memory.stores.keyword_stats`) through every write, and its
keyword searches score as the engine does when it counts the IDF over the corpus filter itself.

Two real qdrant-edge stores get the same writes: `kept` builds its statistics (`maintain`) and keeps them on each
write; `counted` never builds them, so the engine counts each query's IDF over the filter, as before the statistics.
Their keyword searches are compared scope by scope: the same scores (within 1e-5 of their value) and the same
order but for ties. `Failing` stands between a store and its engine shard to make one engine call fail.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from memory.embedders.sparse import Bm25Encoder
from memory.errors import BackendUnavailable
from memory.models import CONSOLIDATED, Memory, Source
from memory.ports import RecallFilter, SparseVector
from memory.scope import NamespaceScope
from memory.stores.common import IDF_NAMESPACE_LIMIT
from memory.stores.edge import EdgeVectorStore
from memory.stores.keyword_stats import EMPTY_CORPUS, KeywordStats
from tests.memory.conftest import START, make_memory, scope

pytestmark = pytest.mark.anyio

MODEL, DIM = "keyword-stats-model", 4
NOW = START + timedelta(days=30)
NEAR = [1.0, 0.0, 0.0, 0.0]
EVERY_STATUS = RecallFilter(now=NOW, include_superseded=True, include_archived=True)
WORDS = (  # noqa: SIM905
    "alice bob carol dave budget kyoto flight hotel train invoice launch review design tea coffee garden piano "
    "dentist visa passport laptop meeting report deadline birthday concert museum recipe bicycle marathon"
).split()
SPACES = [f"n{i}" for i in range(IDF_NAMESPACE_LIMIT + 2)]  # more than a corpus of namespaces may name

Hits = list[tuple[str, float]]


@dataclass
class Pair:
    """Two stores given the same writes: `kept` keeps its keyword statistics, `counted` never builds them."""

    kept: EdgeVectorStore
    counted: EdgeVectorStore
    rng: random.Random
    encoder: Bm25Encoder
    written: int = 0

    def text(self) -> str:
        return " ".join(self.rng.choice(WORDS) for _ in range(self.rng.randint(3, 12)))

    def memory(self, tenant: str, namespace: str, consolidated: bool = False) -> Memory:
        self.written += 1
        memory = make_memory(
            self.text(), tenant=tenant, namespace=namespace, at=START + timedelta(seconds=self.written)
        )
        return replace(memory, source=Source(subject="agent-1", tool=CONSOLIDATED)) if consolidated else memory

    def item(self, memory: Memory, keywords: bool = True) -> tuple[Memory, list[float], SparseVector | None]:
        dense = [1.0, *(self.rng.random() for _ in range(DIM - 1))]
        return memory, dense, self.encoder.document(memory.content) if keywords else None

    async def upsert(self, who: NamespaceScope, items: list[tuple[Memory, list[float], SparseVector | None]]) -> None:
        for store in (self.kept, self.counted):
            await store.upsert(who, items)

    async def update(self, who: NamespaceScope, memory: Memory) -> None:
        for store in (self.kept, self.counted):
            await store.update(who, memory)

    async def purge(self, who: NamespaceScope, namespace: str) -> None:
        for store in (self.kept, self.counted):
            await store.purge(who, namespace)

    async def hits(self, who: NamespaceScope, namespaces: tuple[str, ...], query: SparseVector) -> tuple[Hits, Hits]:
        found = []
        for store in (self.kept, self.counted):
            hits = await store.search(who, namespaces, NEAR, 50, EVERY_STATUS, query)
            found.append([(h.memory.id, h.keyword) for h in hits])
        return found[0], found[1]

    async def assert_same_scores(self, scopes: list[tuple[NamespaceScope, tuple[str, ...]]], queries: int) -> int:
        """Keyword searches of each scope score alike in both stores; returns how many hits were compared."""
        assert self.kept._stats.ready  # the kept statistics answer, not the engine's counting
        assert not self.counted._stats.ready
        compared = 0
        for _ in range(queries):
            query = self.encoder.query(self.text())
            for who, namespaces in scopes:
                kept, counted = await self.hits(who, namespaces, query)
                assert_same_ranking(kept, counted)
                compared += len(kept)
        return compared


def assert_same_ranking(kept: Hits, counted: Hits, rel: float = 1e-5) -> None:
    """The same scores rank by rank, each id's score the same in both, and an id only where the other list has
    another one of the same score (a tie the engine may break either way)."""
    assert len(kept) == len(counted)
    by_id = dict(counted)
    for (kept_id, kept_score), (counted_id, counted_score) in zip(kept, counted, strict=True):
        assert kept_score == pytest.approx(counted_score, rel=rel)
        if kept_id != counted_id and kept_id in by_id:
            assert by_id[kept_id] == pytest.approx(counted_score, rel=rel)
    for kept_id, kept_score in kept:
        if kept_id in by_id:
            assert kept_score == pytest.approx(by_id[kept_id], rel=rel)


@pytest.fixture
async def pair(tmp_path: Path) -> AsyncIterator[Pair]:
    kept = EdgeVectorStore.open(tmp_path / "kept", model_id=MODEL, dimension=DIM)
    counted = EdgeVectorStore.open(tmp_path / "counted", model_id=MODEL, dimension=DIM)
    yield Pair(kept, counted, random.Random(7), Bm25Encoder())
    await kept.close()
    await counted.close()


def scopes_of(acme: str, globex: str) -> list[tuple[NamespaceScope, tuple[str, ...]]]:
    """One namespace, a few, all of a tenant's (its condition left out), more than a corpus names, the tenant."""
    reader = scope(acme, read=SPACES)
    return [
        (reader, ("n0",)),
        (reader, ("n1", "n2")),
        (reader, tuple(SPACES[:4])),
        (reader, tuple(SPACES)),
        (scope(acme, admin=True), ()),
        (scope(globex, read=["n0", "n1"]), ("n0", "n1")),
        (scope(globex, admin=True), ()),
    ]


async def test_keyword_scores_with_the_kept_statistics_equal_the_engines_own_counts_through_every_write(
    pair: Pair, acme: str, globex: str
) -> None:
    admin, other = scope(acme, admin=True), scope(globex, admin=True)
    first = [pair.memory(acme, SPACES[i % 4], consolidated=i % 11 == 0) for i in range(120)]
    # a tenant of more namespaces than a corpus names
    first += [pair.memory(acme, SPACES[4 + i % (len(SPACES) - 4)]) for i in range(40)]
    theirs = [pair.memory(globex, f"n{i % 2}", consolidated=i % 7 == 0) for i in range(50)]
    await pair.upsert(admin, [pair.item(m, keywords=i % 13 != 0) for i, m in enumerate(first)])
    await pair.upsert(other, [pair.item(m) for m in theirs])
    await pair.kept.maintain()  # builds the statistics
    scopes = scopes_of(acme, globex)
    assert await pair.assert_same_scores(scopes, 6) > 0

    # upserts: new memories, new words, a consolidated overwrite, one without keywords, and a refused one
    rng = random.Random(1)
    mine = [m for m in first if m.namespace in SPACES[:4]]
    changed = rng.sample(mine, 40)
    items = [pair.item(pair.memory(acme, rng.choice(SPACES[:4]))) for _ in range(20)]
    items += [pair.item(replace(m, content=pair.text())) for m in changed[:10]]
    items += [pair.item(replace(m, source=Source(subject="agent-1", tool=CONSOLIDATED))) for m in changed[10:14]]
    items += [pair.item(m, keywords=False) for m in changed[14:18]]
    await pair.upsert(admin, items)
    in_n3 = next(m for m in changed[18:] if m.namespace == "n3")
    # a writer of n0 alone: the id is in n3, so the engine leaves it as it is
    await pair.upsert(scope(acme, write=["n0"]), [pair.item(replace(in_n3, namespace="n0", content="tea tea"))])
    assert await pair.assert_same_scores(scopes, 4) > 0

    # updates: moved to another namespace, new content in the payload only, soft-deleted, superseded, archived
    await pair.update(admin, replace(changed[20], namespace="n1"))
    await pair.update(admin, replace(changed[21], namespace=SPACES[-1]))
    await pair.update(admin, replace(changed[22], content="budget kyoto flight"))
    await pair.update(admin, replace(changed[23], deleted_at=NOW))
    await pair.update(admin, replace(changed[24], superseded_by=changed[25].id))
    await pair.update(admin, replace(changed[26], archived_at=NOW))
    await pair.update(admin, replace(changed[27], source=Source(subject="agent-1", tool=CONSOLIDATED)))
    assert await pair.assert_same_scores(scopes, 4) > 0

    await pair.purge(admin, "n2")
    await pair.purge(other, "n1")
    assert await pair.assert_same_scores(scopes, 4) > 0
    await pair.kept.maintain()  # optimized: deleted points leave the engine's segments
    assert await pair.assert_same_scores(scopes, 4) > 0

    # what was kept write by write is what counting the shard again gives
    rebuilt = KeywordStats()
    assert rebuilt.build(pair.kept._shard) == pair.kept._stats.size()
    terms = sorted({t for m in [*first, *theirs] for t in pair.encoder.document(m.content).indices})
    for tenant, namespaces in [(acme, ["n0"]), (acme, ["n1", "n2", "n3"]), (acme, None), (globex, None)]:
        assert rebuilt.corpus(tenant, namespaces, terms) == pair.kept._stats.corpus(tenant, namespaces, terms)


class Failing:
    """The engine shard, seen through: the next call of `method` fails, after the engine ran it (`after`) or
    before."""

    def __init__(self, shard: Any, method: str, after: bool) -> None:
        self.shard, self.method, self.after = shard, method, after

    def __getattr__(self, name: str) -> Any:
        call = getattr(self.shard, name)
        if name != self.method:
            return call

        def failing(*args: Any) -> Any:
            self.method = ""  # once
            if self.after:
                call(*args)
            raise RuntimeError(f"{name} failed")

        return failing


@pytest.mark.parametrize(
    ("method", "after"),
    [("update", True), ("update", False), ("retrieve", False)],
    ids=["applied-then-failed", "refused", "not-read-back"],
)
async def test_a_write_that_fails_invalidates_the_statistics_and_searches_score_right_until_maintain_rebuilds_them(
    pair: Pair, acme: str, globex: str, method: str, after: bool
) -> None:
    admin = scope(acme, admin=True)
    await pair.upsert(admin, [pair.item(pair.memory(acme, f"n{i % 3}")) for i in range(60)])
    await pair.upsert(scope(globex, admin=True), [pair.item(pair.memory(globex, "n0")) for _ in range(10)])
    await pair.kept.maintain()
    scopes = scopes_of(acme, globex)
    shard = pair.kept._shard
    pair.kept._shard = Failing(shard, method, after)
    items = [pair.item(pair.memory(acme, "n0")) for _ in range(15)]

    with pytest.raises(BackendUnavailable):
        await pair.kept.upsert(admin, items)
    pair.kept._shard = shard
    if not after and method == "update":  # the engine refused it: give `counted` what `kept` holds
        items = []
    await pair.counted.upsert(admin, items)

    assert not pair.kept._stats.ready
    for who, namespaces in scopes:  # the engine counts over the filter again
        for _ in range(3):
            assert_same_ranking(*await pair.hits(who, namespaces, pair.encoder.query(pair.text())))
    await pair.kept.maintain()
    assert await pair.assert_same_scores(scopes, 3) > 0
    await pair.upsert(admin, [pair.item(pair.memory(acme, "n1")) for _ in range(5)])  # kept again
    assert await pair.assert_same_scores(scopes, 3) > 0


async def test_top_ten_keyword_hits_with_the_kept_statistics_are_the_engines_over_hundreds_of_memories(
    pair: Pair,
) -> None:
    tenants = [f"tenant-{i}-{random.Random().getrandbits(32):x}" for i in range(3)]
    for t, tenant in enumerate(tenants):
        memories = [pair.memory(tenant, f"n{i % (3 + 2 * t)}", consolidated=i % 17 == 0) for i in range(150)]
        await pair.upsert(scope(tenant, admin=True), [pair.item(m) for m in memories])
    await pair.kept.maintain()
    scopes: list[tuple[NamespaceScope, tuple[str, ...]]] = []
    for t, tenant in enumerate(tenants):
        spaces = [f"n{i}" for i in range(3 + 2 * t)]
        reader = scope(tenant, read=spaces)
        scopes += [(reader, ("n0",)), (reader, ("n1", "n2")), (reader, tuple(spaces)), (scope(tenant, admin=True), ())]
    assert pair.kept._stats.ready

    for query in queries(pair, 30):
        for who, namespaces in scopes:
            kept, counted = await pair.hits(who, namespaces, query)
            assert len(kept) == len(counted)
            by_id = dict(counted)
            for (kept_id, _), (counted_id, counted_score) in zip(kept[:10], counted[:10], strict=True):
                assert kept_id == counted_id or by_id.get(kept_id) == pytest.approx(counted_score, rel=1e-6)


def queries(pair: Pair, count: int) -> Iterator[SparseVector]:
    """Queries of a few words, some with chosen weights (as pseudo-relevance feedback adds terms)."""
    for i in range(count):
        query = pair.encoder.query(pair.text())
        if i % 3 == 0:
            query = SparseVector(query.indices, tuple(pair.rng.choice([1.0, 0.5, 0.3]) for _ in query.indices))
        yield query


class Recorder:
    """The engine shard, seen through: the search params of each query (None: the engine's own statistics)."""

    def __init__(self, shard: Any) -> None:
        self.shard = shard
        self.params: list[str | None] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.shard, name)

    def query(self, request: Any) -> Any:
        self.params.append(None if request.params is None else repr(request.params))
        return self.shard.query(request)


async def test_a_wide_keyword_search_of_a_one_tenant_shard_keeps_the_engines_global_statistics_and_others_the_kept(
    pair: Pair, acme: str
) -> None:
    admin = scope(acme, admin=True)
    await pair.upsert(admin, [pair.item(pair.memory(acme, f"n{i % 3}")) for i in range(30)])
    await pair.kept.maintain()
    recorder = Recorder(pair.kept._shard)
    pair.kept._shard = recorder
    query = pair.encoder.query("tea budget kyoto")
    flt = RecallFilter(now=NOW)

    await pair.kept.search(admin, (), NEAR, 10, flt, query)
    await pair.kept.search(scope(acme, read=SPACES), tuple(SPACES), NEAR, 10, flt, query)
    await pair.kept.search(admin, ("n0", "n1"), NEAR, 10, flt, query)

    assert recorder.params == [None, None, repr(EMPTY_CORPUS)]

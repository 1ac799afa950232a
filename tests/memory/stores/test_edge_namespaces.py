"""A search of the embedded store that names every namespace its tenant has leaves the namespace condition out
(`memory.stores.edge_namespaces`): it finds what it found with the condition, and never a memory of a namespace it
did not name, however that namespace came to be (written after the tenant's namespaces were read, moved there by an
update, there before the store opened, or written while the search ran).

The stores are real qdrant-edge shards with hand-made 4-dimensional vectors; `Recorder` stands between the store and
its engine shard to see the filter each query carries, or to land a write while a query runs.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest

from memory.models import Memory
from memory.ports import RecallFilter, SparseVector
from memory.scope import NamespaceScope
from memory.stores.edge import EdgeVectorStore
from memory.stores.edge_namespaces import KnownNamespaces
from tests.memory.conftest import START, make_memory, scope

pytestmark = pytest.mark.anyio

MODEL, DIM = "namespaces-model", 4
NOW = START + timedelta(days=1)
NEAR = [1.0, 0.0, 0.0, 0.0]
TEA = SparseVector((7,), (1.0,))  # the keyword every memory of these tests holds


class Recorder:
    """The engine shard, seen through: the namespace values each query's filter names (None: no namespace
    condition), and `before_query` run once before the next query."""

    def __init__(self, shard: Any) -> None:
        self.shard = shard
        self.namespaces: list[list[str] | None] = []
        self.before_query: Callable[[], None] | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.shard, name)

    def query(self, request: Any) -> Any:
        if self.before_query is not None:
            run, self.before_query = self.before_query, None
            run()
        named = [c.match.value for c in request.filter.must if getattr(c, "key", None) == "namespace"]
        self.namespaces.append(named[0] if named else None)
        return self.shard.query(request)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[EdgeVectorStore]:
    opened = EdgeVectorStore.open(tmp_path / "store", model_id=MODEL, dimension=DIM)
    yield opened
    await opened.close()


def in_another_thread(work: Callable[[], object]) -> None:
    """Run `work` in a new thread and wait for it; what it raises is raised here."""
    failures: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except BaseException as exc:
            failures.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if failures:
        raise failures[0]


def recorded(store: EdgeVectorStore) -> Recorder:
    recorder = Recorder(store._shard)
    store._shard = recorder
    return recorder


async def put(store: EdgeVectorStore, who: NamespaceScope, *memories: Memory) -> None:
    """Each memory a little farther from `NEAR` and holding the keyword once more than the one before (no ties)."""
    await store.upsert(
        who, [(m, [1.0, 0.2 * i, 0.0, 0.0], SparseVector((7,), (1.0 + i,))) for i, m in enumerate(memories)]
    )


async def contents(store: EdgeVectorStore, who: NamespaceScope, namespaces: tuple[str, ...]) -> dict[str, set[str]]:
    """What a search by meaning and one by keywords of `namespaces` find."""
    flt = RecallFilter(now=NOW)
    by_meaning = await store.search(who, namespaces, NEAR, 20, flt)
    by_keywords = await store.search(who, namespaces, NEAR, 20, flt, TEA)
    return {"meaning": {h.memory.content for h in by_meaning}, "keywords": {h.memory.content for h in by_keywords}}


def both(*texts: str) -> dict[str, set[str]]:
    return {"meaning": set(texts), "keywords": set(texts)}


async def test_a_search_naming_every_namespace_of_the_tenant_drops_the_condition_and_finds_the_same_hits(
    store: EdgeVectorStore, writer: NamespaceScope, acme: str, globex: str
) -> None:
    texts = ["The user drinks tea", "The user drinks green tea", "The team orders tea"]
    spaces = ["user:1", "user:2", "team:1"]
    await put(store, writer, *(make_memory(t, tenant=acme, namespace=n) for t, n in zip(texts, spaces, strict=True)))
    # the same memories for a tenant that has one more namespace: its search of the three keeps the condition
    other = scope(globex, write=[*spaces, "user:9"])
    await put(store, other, *(make_memory(t, tenant=globex, namespace=n) for t, n in zip(texts, spaces, strict=True)))
    await put(store, other, make_memory("Elsewhere, tea", tenant=globex, namespace="user:9"))
    recorder = recorded(store)
    flt = RecallFilter(now=NOW)
    named = ("user:1", "user:2", "team:1")

    ours = [await store.search(writer, named, NEAR, 20, flt), await store.search(writer, named, NEAR, 20, flt, TEA)]
    dropped = recorder.namespaces[:]
    theirs = [await store.search(other, named, NEAR, 20, flt), await store.search(other, named, NEAR, 20, flt, TEA)]

    assert dropped == [None, None]
    assert recorder.namespaces[2:] == [list(named), list(named)]
    assert [[(h.memory.content, h.similarity, h.keyword, h.terms) for h in hits] for hits in ours] == [
        [(h.memory.content, h.similarity, h.keyword, h.terms) for h in hits] for hits in theirs
    ]


async def test_a_search_naming_some_namespaces_of_the_tenant_keeps_the_condition(
    store: EdgeVectorStore, writer: NamespaceScope, acme: str
) -> None:
    await put(store, writer, make_memory("tea 1", tenant=acme), make_memory("tea 2", tenant=acme, namespace="user:2"))
    recorder = recorded(store)

    assert await contents(store, writer, ("user:1",)) == both("tea 1")
    assert recorder.namespaces == [["user:1"], ["user:1"]]


async def test_a_write_into_a_new_namespace_after_the_namespaces_were_read_is_never_found_by_a_search_not_naming_it(
    store: EdgeVectorStore, writer: NamespaceScope, acme: str
) -> None:
    await put(store, writer, make_memory("tea 1", tenant=acme), make_memory("tea 2", tenant=acme, namespace="user:2"))
    assert await contents(store, writer, ("user:1", "user:2")) == both("tea 1", "tea 2")  # the namespaces are read

    await put(store, writer, make_memory("team tea", tenant=acme, namespace="team:1"))

    assert await contents(store, writer, ("user:1", "user:2")) == both("tea 1", "tea 2")
    assert await contents(store, writer, ("user:1", "user:2", "team:1")) == both("tea 1", "tea 2", "team tea")


async def test_an_update_that_moves_a_memory_to_a_new_namespace_hides_it_from_a_search_not_naming_that_namespace(
    store: EdgeVectorStore, writer: NamespaceScope, acme: str
) -> None:
    moving = make_memory("tea 2", tenant=acme, namespace="user:2")
    await put(store, writer, make_memory("tea 1", tenant=acme), moving)
    assert await contents(store, writer, ("user:1", "user:2")) == both("tea 1", "tea 2")

    await store.update(writer, replace(moving, namespace="team:1"))

    assert await contents(store, writer, ("user:1", "user:2")) == both("tea 1")


async def test_namespaces_stored_before_the_store_opened_are_read_before_a_search_drops_its_condition(
    tmp_path: Path, writer: NamespaceScope, acme: str
) -> None:
    path = tmp_path / "store"
    first = EdgeVectorStore.open(path, model_id=MODEL, dimension=DIM)
    await put(
        first, writer, make_memory("tea 1", tenant=acme), make_memory("team tea", tenant=acme, namespace="team:1")
    )
    await first.close()

    reopened = EdgeVectorStore.open(path, model_id=MODEL, dimension=DIM)
    try:
        recorder = recorded(reopened)
        assert await contents(reopened, writer, ("user:1",)) == both("tea 1")
        assert recorder.namespaces == [["user:1"], ["user:1"]]
    finally:
        await reopened.close()


@pytest.mark.parametrize("by", ["meaning", "keywords"])
async def test_a_write_into_a_new_namespace_landing_while_a_search_runs_is_not_leaked_to_it(
    store: EdgeVectorStore, writer: NamespaceScope, acme: str, by: str
) -> None:
    await put(store, writer, make_memory("tea 1", tenant=acme), make_memory("tea 2", tenant=acme, namespace="user:2"))
    assert await contents(store, writer, ("user:1", "user:2")) == both("tea 1", "tea 2")
    recorder = recorded(store)
    landing = make_memory("team tea", tenant=acme, namespace="team:1")
    # the search has left the condition out when the write lands, before its query reaches the engine: written by
    # another thread (a write's engine job runs in a worker thread while a search runs on the event loop)
    recorder.before_query = lambda: in_another_thread(lambda: anyio.run(put, store, writer, landing))
    sparse = TEA if by == "keywords" else None

    hits = await store.search(writer, ("user:1", "user:2"), NEAR, 20, RecallFilter(now=NOW), sparse)

    assert {h.memory.content for h in hits} == {"tea 1", "tea 2"}
    assert recorder.namespaces == [None, ["user:1", "user:2"]]  # run again, with the condition
    assert await contents(store, writer, ("user:1", "user:2", "team:1")) == both("tea 1", "tea 2", "team tea")


def test_known_namespaces_cover_a_search_only_once_read_and_only_while_no_namespace_is_added() -> None:
    known = KnownNamespaces()
    known.add("acme", ["user:1"])
    assert known.covering("acme", ["user:1", "user:2"]) is None  # written to, but its namespaces never read

    known.learn("acme", ["user:2"])
    epoch = known.covering("acme", ["user:1", "user:2"])
    assert epoch is not None
    assert known.covering("acme", ["user:2"]) is None
    known.add("acme", ["user:1"])  # nothing new
    assert known.unchanged("acme", epoch)
    known.add("globex", ["team:1"])  # another tenant's
    assert known.unchanged("acme", epoch)
    known.add("acme", ["team:1"])
    assert not known.unchanged("acme", epoch)
    assert known.covering("acme", ["user:1", "user:2"]) is None


def test_a_tenant_with_more_namespaces_than_one_read_lists_never_has_a_search_covered() -> None:
    known = KnownNamespaces()
    known.learn("acme", ["user:1"], complete=False)

    assert known.covering("acme", ["user:1"]) is None

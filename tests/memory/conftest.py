"""Fixtures for the engine tests: the real WordLlama embedder (once per session), a real qdrant-edge store on a
temp directory, a `ManualClock`, and helpers that build scopes (through `tenancy.scope_for`) and memories."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memory.clock import ManualClock
from memory.embedders import WordLlamaEmbedder
from memory.ids import content_hash, new_memory_id
from memory.models import Memory, MemoryKind, Source
from memory.ports import ListQuery, VectorStore
from memory.requests import WriteRequest
from memory.scope import NamespaceScope
from memory.service import MemoryService
from memory.stores.edge import EdgeVectorStore
from tenancy import SCOPE_ADMIN, SCOPE_READ, SCOPE_WRITE, Principal, scope_for

START = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def scope(tenant: str, read: Sequence[str] = (), write: Sequence[str] = (), admin: bool = False) -> NamespaceScope:
    """The scope a verified token with these grants gets (built the only allowed way: `scope_for`)."""
    scopes = {SCOPE_READ}
    if write:
        scopes.add(SCOPE_WRITE)
    if admin:
        scopes.add(SCOPE_ADMIN)
    principal = Principal(
        subject=f"{tenant}-agent",
        tenant=tenant,
        read_namespaces=tuple(read),
        write_namespaces=tuple(write),
        scopes=frozenset(scopes),
    )
    return scope_for(principal)


def make_memory(
    content: str,
    *,
    tenant: str,
    namespace: str = "user:1",
    at: datetime = START,
    **overrides: Any,
) -> Memory:
    """A fresh, live memory created at `at` (its id carries that time, so id order is creation order)."""
    values: dict[str, Any] = {
        "id": new_memory_id(int(at.timestamp() * 1000)),
        "tenant": tenant,
        "namespace": namespace,
        "kind": MemoryKind.EPISODIC,
        "content": content,
        "importance": 0.5,
        "created_at": at,
        "updated_at": at,
        "last_accessed_at": None,
        "access_count": 0,
        "expires_at": None,
        "deleted_at": None,
        "supersedes": [],
        "superseded_by": None,
        "origin_id": None,
        "session_id": None,
        "source": Source(subject="agent-1"),
        "tags": [],
        "metadata": {},
        "embedding_model": "wordllama-l2-supercat-256",
        "content_hash": content_hash(content),
    }
    values.update(overrides)
    return Memory(**values)


def outsiders(acme: str, globex: str) -> list[NamespaceScope]:
    """Scopes that must not reach `user:1` of `acme`: another tenant's writer and admin, and a reader of another
    namespace of `acme`."""
    return [scope(globex, write=["user:1"]), scope(globex, admin=True), scope(acme, read=["user:2"])]


async def assert_get_is_scoped(store: VectorStore, memory: Memory, acme: str, globex: str) -> None:
    """`memory` (in `user:1` of `acme`) is found by id by a reader of its namespace and an admin of its tenant,
    and by none of the `outsiders`."""
    for outsider in outsiders(acme, globex):
        assert await store.get(outsider, memory.id) is None
    assert await store.get(scope(acme, read=["user:1"]), memory.id) == memory
    assert await store.get(scope(acme, admin=True), memory.id) == memory


async def assert_pages_of_three(store: VectorStore, writer: NamespaceScope, memories: list[Memory]) -> None:
    """Listing `user:1` three at a time pages through the seven `memories` (stored in `user:1`) in id order,
    each cursor the id the next page starts at."""
    pages: list[list[str]] = []
    after: str | None = None
    while True:
        page, cursor = await store.list(writer, ListQuery(("user:1",), None, False, 3, after))
        pages.append([m.id for m in page])
        if cursor is None:
            break
        assert cursor == memories[3 * len(pages)].id  # the cursor is the id the next page starts at
        after = cursor

    assert [len(p) for p in pages] == [3, 3, 1]
    assert [i for p in pages for i in p] == [m.id for m in memories]


async def expired(service: MemoryService, who: NamespaceScope, clock: ManualClock, *written: tuple[str, str]) -> None:
    """Each (content, namespace) written with a minute to live, then two minutes passed: all of them expired."""
    for content, namespace in written:
        await service.write(who, WriteRequest(content=content, subject="t", namespace=namespace, ttl_seconds=60))
    clock.advance(120)


async def everything(store: EdgeVectorStore, tenant: str) -> list[Memory]:
    """Every memory of a tenant, deleted ones included (read through an admin scope)."""
    admin = scope(tenant, admin=True)
    found: list[Memory] = []
    after: str | None = None
    while True:
        page, after = await store.list(admin, ListQuery((), None, True, 200, after))
        found.extend(page)
        if after is None:
            return found


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """Module-wide, so one event loop serves a whole test module and its shared store."""
    return "asyncio"


@pytest.fixture(scope="session")
def embedder() -> WordLlamaEmbedder:
    return WordLlamaEmbedder()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
def acme() -> str:
    """A tenant id of this test alone: tests share a store per module, and tenants keep them apart."""
    return f"acme-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def globex() -> str:
    """A second tenant id of this test alone."""
    return f"globex-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def me(acme: str) -> NamespaceScope:
    """The caller: reads and writes `user:1` of the test's `acme` tenant."""
    return scope(acme, write=["user:1"])


@pytest.fixture
def writer(acme: str) -> NamespaceScope:
    """Reads and writes three namespaces of the test's `acme` tenant."""
    return scope(acme, write=["user:1", "user:2", "team:1"])


@pytest.fixture
def admin(acme: str) -> NamespaceScope:
    """An admin of the test's `acme` tenant."""
    return scope(acme, admin=True)


@pytest.fixture(scope="module")
async def shared_store(
    tmp_path_factory: pytest.TempPathFactory, embedder: WordLlamaEmbedder
) -> AsyncIterator[EdgeVectorStore]:
    """One real store per test module (creating a shard costs ~0.1-0.3 s of fsyncs); each test writes under
    tenants of its own (`acme`, `globex`), so tests never see each other's memories."""
    path = tmp_path_factory.mktemp("shared") / "store"
    opened = EdgeVectorStore.open(path, model_id=embedder.model_id, dimension=embedder.dimension)
    yield opened
    await opened.close()


@pytest.fixture
def store(shared_store: EdgeVectorStore) -> EdgeVectorStore:
    return shared_store


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
async def private_store(store_dir: Path, embedder: WordLlamaEmbedder) -> AsyncIterator[EdgeVectorStore]:
    """A store of this test alone, for lifecycle tests that close, lock or reopen it."""
    opened = EdgeVectorStore.open(store_dir, model_id=embedder.model_id, dimension=embedder.dimension)
    yield opened
    await opened.close()


@pytest.fixture
def service(store: EdgeVectorStore, embedder: WordLlamaEmbedder, clock: ManualClock) -> MemoryService:
    return MemoryService(store, embedder, clock)

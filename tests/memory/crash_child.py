"""A child process for the crash tests: runs one engine operation on a store on disk and SIGKILLs itself just
before the store's k-th mutating call (upsert or update), as a crash at that step of a multi-step write would.

    python -m tests.memory.crash_child BACKEND DIR TENANT OPERATION KILL_AT

BACKEND: `edge` (the embedded engine) or `qdrant` (qdrant-client's local mode on disk, the server code path).
OPERATION: a name from `OPERATIONS`. KILL_AT: 0 runs it to the end. The store is the real one; the wrapper only
counts calls and delegates every one of them.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from memory.clock import SystemClock
from memory.embedders import WordLlamaEmbedder
from memory.models import Memory
from memory.ports import UpsertItem, VectorStore
from memory.requests import ListRequest, WriteRequest
from memory.scope import NamespaceScope
from memory.service import MemoryService
from memory.stores.edge import EdgeVectorStore
from tests.memory.conftest import scope

BOTH = ("user:1", "team:1")


class KillAtStep:
    """Delegates to the real store; the process dies just before mutating call number `kill_at`."""

    def __init__(self, store: VectorStore, kill_at: int) -> None:
        self._store = store
        self._kill_at = kill_at
        self._calls = 0

    def _step(self) -> None:
        self._calls += 1
        if self._calls == self._kill_at:
            os.kill(os.getpid(), signal.SIGKILL)

    async def upsert(self, scope: NamespaceScope, items: Sequence[UpsertItem]) -> None:
        self._step()
        await self._store.upsert(scope, items)

    async def update(self, scope: NamespaceScope, memory: Memory) -> None:
        self._step()
        await self._store.update(scope, memory)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


async def open_store(backend: str, path: Path, embedder: WordLlamaEmbedder) -> VectorStore:
    if backend == "edge":
        return EdgeVectorStore.open(path, model_id=embedder.model_id, dimension=embedder.dimension)
    from qdrant_client import AsyncQdrantClient

    from memory.stores.qdrant_server import QdrantServerStore

    client = AsyncQdrantClient(path=str(path))
    return await QdrantServerStore.open(client, model_id=embedder.model_id, dimension=embedder.dimension)


def writes(*requests: dict[str, Any]) -> Callable[[MemoryService, NamespaceScope], Awaitable[None]]:
    async def run(service: MemoryService, who: NamespaceScope) -> None:
        for request in requests:
            await service.write(who, WriteRequest(subject="agent-1", **request))

    return run


async def forget_origin(service: MemoryService, who: NamespaceScope) -> None:
    page = await service.list(who, ListRequest(namespace="user:1", include_deleted=True))
    [origin] = [m for m in page.memories if m.content.startswith("I live")]
    await service.forget(who, origin.id, "moved out")


IMPORTED = ("I live in Berlin", "I keep two cats", "My sister is a nurse")


async def import_records(service: MemoryService, who: NamespaceScope) -> None:
    """What import_memories does with a batch: each checked record through the write path, as an import."""
    for content in IMPORTED:
        request = WriteRequest(
            content=content,
            subject="agent-1",
            namespace="user:1",
            tool="import_memories",
            skip_deleted_repeats=True,
            imported=True,
        )
        await service.write(who, request)


async def restore_origin(service: MemoryService, who: NamespaceScope) -> None:
    page = await service.list(who, ListRequest(namespace="user:1", include_deleted=True))
    [origin] = [m for m in page.memories if m.content.startswith("I live")]
    await service.restore(who, origin.id)


OPERATIONS: dict[str, Callable[[MemoryService, NamespaceScope], Awaitable[None]]] = {
    "setup": writes({"content": "I live in Berlin", "share_to": ["team:1"], "request_id": "setup-1"}),
    "move": writes({"content": "I moved to Paris", "share_to": ["team:1"], "request_id": "move-1"}),
    "rephrase": writes({"content": "I live in Berlin!", "share_to": ["team:1"], "request_id": "rephrase-1"}),
    "forget": forget_origin,
    "restore": restore_origin,
    "import": import_records,
}


async def main(backend: str, path: Path, tenant: str, operation: str, kill_at: int) -> None:
    embedder = WordLlamaEmbedder()
    store = await open_store(backend, path, embedder)
    service = MemoryService(KillAtStep(store, kill_at), embedder, SystemClock())
    try:
        await OPERATIONS[operation](service, scope(tenant, write=BOTH))
    finally:
        await store.close()


if __name__ == "__main__":
    backend, where, tenant, operation, kill_at = sys.argv[1:6]
    asyncio.run(main(backend, Path(where), tenant, operation, int(kill_at)))

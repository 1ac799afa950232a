"""A child process for the crash tests: runs one engine operation on a store on disk and SIGKILLs itself just
before the store's k-th mutating call (upsert or update, or an event store's append), as a crash at that step of
a multi-step write would, or (k < 0) right after the |k|-th one returned, before anything was answered.

    python -m tests.memory.crash_child BACKEND DIR TENANT OPERATION KILL_AT

BACKEND: `edge` (the embedded engine) or `qdrant` (qdrant-client's local mode on disk, the server code path).
OPERATION: a name from `OPERATIONS`. KILL_AT: 0 runs it to the end. The stores are the real ones (events: a sqlite
file beside the vector store); the wrapper only counts calls and delegates every one of them.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from memory.agent.sessions import AgentSessions, EventRequest
from memory.clock import SystemClock
from memory.embedders import WordLlamaEmbedder
from memory.events import Event, EventStore, SqliteEventStore
from memory.extraction import RuleExtractor
from memory.models import Memory, WriteOutcome
from memory.ports import UpsertItem, VectorStore
from memory.requests import ListRequest, WriteRequest
from memory.scope import NamespaceScope
from memory.service import MemoryService
from memory.stores.edge import EdgeVectorStore
from memory.working.in_process import InProcessWorkingMemory
from memory.working.service import SessionService
from tests.memory.conftest import scope

BOTH = ("user:1", "team:1")


class KillAtStep:
    """Delegates to the real store; the process dies just before mutating call number `kill_at`, or (`kill_at`
    < 0) just after call number -`kill_at` returned."""

    def __init__(self, store: VectorStore, kill_at: int) -> None:
        self._store = store
        self._kill_at = kill_at
        self._calls = 0

    def _before(self) -> None:
        self._calls += 1
        if self._calls == self._kill_at:
            os.kill(os.getpid(), signal.SIGKILL)

    def _after(self) -> None:
        if self._calls == -self._kill_at:
            os.kill(os.getpid(), signal.SIGKILL)

    async def upsert(self, scope: NamespaceScope, items: Sequence[UpsertItem]) -> None:
        self._before()
        await self._store.upsert(scope, items)
        self._after()

    async def update(self, scope: NamespaceScope, memory: Memory) -> None:
        self._before()
        await self._store.update(scope, memory)
        self._after()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


class KillAtAppend:
    """An event store whose appends count as steps of `KillAtStep` (the same count, the same kill)."""

    def __init__(self, events: EventStore, steps: KillAtStep) -> None:
        self._events = events
        self._steps = steps

    async def append(self, scope: NamespaceScope, event: Event) -> Event:
        self._steps._before()
        stored = await self._events.append(scope, event)
        self._steps._after()
        return stored

    def __getattr__(self, name: str) -> Any:
        return getattr(self._events, name)


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


FORCED_BATCH = ("I live in Berlin", "forced fact one", "forced fact one", "forced fact two")


def forced_batch() -> list[WriteRequest]:
    """Forced items with request ids, as `write_memories` hands them to the engine: one repeats a stored memory,
    two repeat each other (force stores each), every one is its own request."""
    return [
        WriteRequest(content=c, subject="agent-1", force=True, request_id=f"fb-{i}", tool="write_memory")
        for i, c in enumerate(FORCED_BATCH)
    ]


async def write_forced_batch(service: MemoryService, who: NamespaceScope) -> None:
    for outcome in await service.write_many(who, forced_batch()):
        assert isinstance(outcome, WriteOutcome), outcome


EVENT = EventRequest(session_id="s1", type="user_message", content="I keep two cats", subject="agent-1")


async def record_event(sessions: AgentSessions, who: NamespaceScope) -> None:
    await sessions.record(who, replace(EVENT, request_id="event-1"))


def agent_sessions(service: MemoryService, events: EventStore) -> AgentSessions:
    working = SessionService(InProcessWorkingMemory(service.clock), service)
    return AgentSessions(events, working, RuleExtractor(), idle_seconds=3600)


def events_file(path: Path) -> Path:
    return path.parent / "events.sqlite3"


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
    "forced": writes({"content": "I live in Berlin", "share_to": ["team:1"], "force": True, "request_id": "forced-1"}),
    "forced_batch": write_forced_batch,
}
EVENT_OPERATIONS: dict[str, Callable[[AgentSessions, NamespaceScope], Awaitable[None]]] = {"event": record_event}


async def main(backend: str, path: Path, tenant: str, operation: str, kill_at: int) -> None:
    embedder = WordLlamaEmbedder()
    store = await open_store(backend, path, embedder)
    steps = KillAtStep(store, kill_at)
    service = MemoryService(steps, embedder, SystemClock())
    events = SqliteEventStore.open(events_file(path))
    try:
        if operation in EVENT_OPERATIONS:
            sessions = agent_sessions(service, KillAtAppend(events, steps))
            await EVENT_OPERATIONS[operation](sessions, scope(tenant, write=BOTH))
        else:
            await OPERATIONS[operation](service, scope(tenant, write=BOTH))
    finally:
        await events.close()
        await store.close()


if __name__ == "__main__":
    backend, where, tenant, operation, kill_at = sys.argv[1:6]
    asyncio.run(main(backend, Path(where), tenant, operation, int(kill_at)))

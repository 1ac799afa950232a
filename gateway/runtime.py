"""`Runtime`: the clients and services one running app holds, opened in the lifespan and closed after it.

`open_runtime(settings)` builds the embedder, the stores and the services from settings; tests and the CLI use
the same function, so there is one way to assemble the engine.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio
import anyio.to_thread

from memory.clock import Clock, SystemClock
from memory.embedders import build_embedder
from memory.errors import BackendUnavailable, InvalidArgument
from memory.ports import Embedder, VectorStore, WorkingMemoryStore
from memory.scoring import ScoringWeights
from memory.service import MemoryService
from memory.sessions import SessionService
from memory.stores.edge import EdgeVectorStore
from memory.validation import EngineLimits
from memory.working.in_process import InProcessWorkingMemory
from ops.config import Settings

logger = logging.getLogger("hindsight.runtime")


@dataclass
class Runtime:
    settings: Settings
    embedder: Embedder
    store: VectorStore
    working: WorkingMemoryStore
    memories: MemoryService
    sessions: SessionService


def engine_limits(settings: Settings) -> EngineLimits:
    return EngineLimits(
        max_content_chars=settings.max_content_chars,
        default_top_k=min(settings.default_top_k, settings.max_top_k),
        max_top_k=settings.max_top_k,
        working_window=settings.working_memory_turns,
        working_ttl_seconds=settings.working_memory_ttl_seconds,
    )


def scoring_weights(settings: Settings) -> ScoringWeights:
    return ScoringWeights(
        similarity=settings.weight_similarity,
        recency=settings.weight_recency,
        importance=settings.weight_importance,
        access_frequency=settings.weight_access_frequency,
        recency_decay_per_hour=settings.recency_decay_per_hour,
    )


@asynccontextmanager
async def open_runtime(settings: Settings, clock: Clock | None = None) -> AsyncIterator[Runtime]:
    """Open every backend named by `settings`, run background maintenance, and close it all on exit."""
    if settings.redis_url or settings.qdrant_url:
        raise InvalidArgument(
            "HINDSIGHT_REDIS_URL / HINDSIGHT_QDRANT_URL backends are not available in this build; "
            "unset them to use the embedded engine"
        )
    clock = clock or SystemClock()
    embedder = await anyio.to_thread.run_sync(build_embedder, settings.embedder)
    store_path = settings.data_dir / "vectors"
    store = await anyio.to_thread.run_sync(
        lambda: EdgeVectorStore.open(store_path, model_id=embedder.model_id, dimension=embedder.dimension)
    )
    working = InProcessWorkingMemory(clock)
    memories = MemoryService(store, embedder, clock, engine_limits(settings), scoring_weights(settings))
    runtime = Runtime(settings, embedder, store, working, memories, SessionService(working, memories))
    try:
        async with anyio.create_task_group() as task_group:
            memories.attach_task_group(task_group)
            task_group.start_soon(_maintenance_loop, store, settings.maintenance_interval_seconds)
            try:
                yield runtime
            finally:
                memories.attach_task_group(None)
                await memories.drain()
                task_group.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await working.close()
            await store.close()


async def _maintenance_loop(store: VectorStore, interval: float) -> None:
    while True:
        await anyio.sleep(interval)
        try:
            await store.maintain()
        except BackendUnavailable as exc:
            logger.warning("store maintenance failed: %s", exc.message)

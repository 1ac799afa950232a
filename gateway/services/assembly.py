"""`open_runtime(settings)`: the engine assembled from settings (`gateway.services.runtime`'s parts: the embedder, the
stores, the services, the embedding-model migrations `gateway.services.reembed` builds), its background maintenance
run, and all of it closed on exit. The app's lifespan, the CLI, the benchmarks and the tests open a runtime only
through it."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import anyio.to_thread
from opentelemetry.trace import Tracer

from gateway.services.background import Supervisor
from gateway.services.reembed import migration
from gateway.services.runtime import Runtime, calibration, chat_client, engine_limits, open_embedder, open_vector_store
from gateway.services.shared_state import shared_state
from gateway.web.observability import traced
from memory.agent.extraction import Extractor
from memory.agent.sessions import AgentSessions
from memory.clock import Clock, SystemClock
from memory.embedders import RemoteEmbedder
from memory.extraction import LlmExtractor, RuleExtractor
from memory.llm import ChatImportanceRater, ChatSummarizer
from memory.ports import Embedder, ImportanceRater, VectorStore
from memory.service import MemoryService
from memory.stores.switchable import SwitchableEmbedder, SwitchableStore
from memory.text.tokens import encoding
from memory.working.service import SessionService
from ops.config import Settings

logger = logging.getLogger("hindsight.runtime")


@asynccontextmanager
async def open_runtime(
    settings: Settings,
    clock: Clock | None = None,
    tracer: Tracer | None = None,
    supervisor: Supervisor | None = None,
) -> AsyncIterator[Runtime]:
    """Open every backend named by `settings`, run background maintenance, and close it all on exit. With a
    tracer, every call to a backend (embedder, vector store, working memory, idempotency, rate limiter, the LLM's
    importance ratings) is a span. The `supervisor` counts the failures of the background work (store
    maintenance, access-count flushes), which never end the runtime, and watches the runtime's task group."""
    clock = clock or SystemClock()
    supervisor = supervisor or Supervisor()
    raw_embedder = await open_embedder(settings)
    await anyio.to_thread.run_sync(encoding)  # the budget tokenizer loads here (~0.2 s), not in the first recall
    # both held for the runtime's life; a re-embedding switches what they delegate to (gateway.services.reembed)
    switchable = SwitchableStore(
        await open_vector_store(settings, raw_embedder), raw_embedder.model_id, raw_embedder.dimension
    )
    embedders = SwitchableEmbedder(raw_embedder)
    embedder: Embedder = embedders
    store: VectorStore = switchable
    shared = shared_state(settings, clock)
    working, idempotency, limiter, close_shared = shared.working, shared.idempotency, shared.limiter, shared.close
    if tracer is not None:
        system = "redis" if settings.backends.redis_url else "in_process"
        vectors = "qdrant" if settings.backends.qdrant_url else "qdrant_edge"
        embedder = traced(embedder, "embedder", tracer, **{"hindsight.embedder": embedder.model_id})
        store = traced(store, "vector_store", tracer, **{"db.system": vectors})
        working = traced(working, "working_memory", tracer, **{"db.system": system})
        idempotency = traced(idempotency, "idempotency", tracer, **{"db.system": system})
        limiter = traced(limiter, "rate_limiter", tracer, **{"db.system": system}) if limiter else None
    chat = chat_client(settings)
    rater: ImportanceRater | None = None
    if chat is not None and settings.models.llm_importance:
        rater = ChatImportanceRater(chat)
        if tracer is not None:
            rater = traced(rater, "llm", tracer, **{"gen_ai.request.model": chat.config.model})
    calibrated = calibration(settings, embedder.model_id)
    memories = MemoryService(
        store,
        embedder,
        clock,
        engine_limits(settings),
        calibrated.weights,
        pipeline=calibrated.pipeline,
        tenant_weights=calibrated.tenant_weights,
        importance_rater=rater,
        locks=shared.locks,
    )
    summarizer = ChatSummarizer(chat) if chat is not None else None
    events = shared.events
    if tracer is not None:
        events = traced(
            events, "event_store", tracer, **{"db.system": "redis" if settings.backends.redis_url else "sqlite"}
        )
    sessions = SessionService(working, memories)
    extractor: Extractor = RuleExtractor()
    if chat is not None and settings.models.llm_extraction:
        extractor = LlmExtractor(chat, RuleExtractor(), settings.models.llm_extraction_timeout_seconds)
    agent_sessions = AgentSessions(
        events,
        sessions,
        extractor,
        idle_seconds=settings.maintenance.session_idle_seconds,
        background_top_k=settings.limits.session_background_top_k,
    )
    runtime = Runtime(
        settings,
        embedder,
        store,
        working,
        memories,
        sessions,
        idempotency,
        limiter,
        events,
        agent_sessions,
        summarizer,
        recall_log=shared.recall_log,
        redis_breaker=shared.redis_breaker,
    )

    runtime.reembedder = migration(runtime, switchable, embedders)
    try:
        async with anyio.create_task_group() as task_group:
            await supervisor.watch("runtime", task_group)
            memories.access.report_errors_to(lambda: supervisor.count("access_flush"))
            memories.attach_task_group(task_group)
            runtime.reembedder.attach_task_group(task_group)
            task_group.start_soon(
                _maintenance_loop, store, settings.maintenance.maintenance_interval_seconds, supervisor
            )
            try:
                yield runtime
                supervisor.stopping()  # left on purpose (not by a failure thrown in here)
            finally:
                memories.attach_task_group(None)
                runtime.reembedder.attach_task_group(None)
                await memories.drain()
                task_group.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await close_shared()
            await store.close()
            if isinstance(embedders.active, RemoteEmbedder):  # the one in use (a switch closed the one before)
                await embedders.active.close()
            if chat is not None:
                await chat.close()


async def _maintenance_loop(store: VectorStore, interval: float, supervisor: Supervisor) -> None:
    """Maintain the store at once (the embedded store builds its keyword statistics then, off the request path:
    until they exist keyword searches count IDF over a filter) and then every `interval` seconds (flush and
    index); a failed pass is logged and counted, the next one runs on time."""
    while True:
        with supervisor.contain("store_maintenance"):
            await store.maintain()
        supervisor.finished("store_maintenance")
        await anyio.sleep(interval)

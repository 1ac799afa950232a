"""The recall path's steps around the store: the checked filter of a `RecallRequest`, the two searches that find
the candidates, the candidates turned into scored hits (a superseded match answered by the memory that replaced
it). What a caller may see of the links a hit carries is `memory.lifecycle.visibility`. `MemoryService.recall` strings
them together. Recall as of an instant (`as_of`) answers with the versions valid then (`memory.versions`): memories
written no later, a superseded one answered when its successor came after that instant."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from memory.errors import InvalidArgument
from memory.models import RecallHit
from memory.ports import RecallFilter, ScoredMemory, SparseVector, VectorStore
from memory.recall.cues import QueryCues
from memory.recall.feedback import feedback_query, with_feedback
from memory.recall.ranking import conversation_relevance, cue_relevance, hybrid_relevance
from memory.recall.scoring import ScoringWeights, score
from memory.requests import RecallRequest
from memory.scope import NamespaceScope
from memory.validation import EngineLimits, check_kind, check_session_id, check_tags, check_token_budget
from memory.versions import current_versions


def recall_filter(request: RecallRequest, limits: EngineLimits, now: datetime) -> RecallFilter:
    """The filter a recall request asks for, every field checked (and its token budget, which is not a filter)."""
    kinds = tuple(check_kind(k) for k in request.kinds) if request.kinds else None
    tags = tuple(check_tags(request.tags, limits)) or None
    session_id = check_session_id(request.session_id)
    check_token_budget(request.token_budget, limits)
    until = request.until
    if request.as_of is not None:
        until = request.as_of if until is None else min(until, request.as_of)
    if request.since and until and request.since > until:
        raise InvalidArgument("since must not be later than until" + (" or as_of" if request.as_of else ""))
    return RecallFilter(
        now=now,
        kinds=kinds,
        tags=tags,
        session_id=session_id,
        since=request.since,
        until=until,
        include_superseded=bool(request.include_superseded),
        include_archived=bool(request.include_archived),
        as_of=request.as_of,
    )


async def searched(
    store: VectorStore,
    scope: NamespaceScope,
    namespaces: tuple[str, ...],
    vector: Sequence[float],
    sparse: SparseVector | None,
    limit: int,
    flt: RecallFilter,
    weights: ScoringWeights,
    cues: QueryCues,
) -> list[ScoredMemory]:
    """A recall's candidates. Without keywords, a search by meaning alone. Otherwise the last search is by
    keywords, its query expanded with the words of a few candidates of the searches before (`memory.recall.feedback`):
    - by meaning, then by keywords: the feedback documents are the dense candidates holding the question's words;
    - a query in Chinese, Japanese or Korean whose cosine counts for nothing (an English model): by keywords, then
      by the expanded keywords, the feedback documents the best by BM25;
    - one in those scripts whose cosine counts (a multilingual model): by meaning, by keywords, then by the
      expanded keywords, the feedback documents the best by BM25. Its words are character bigrams: which dense
      candidates hold most of them says less than BM25 does (MemoryBank Chinese with `use`: recall@5 / MRR
      0.942 / 0.844, against 0.932 / 0.833 with feedback from the dense candidates).
    """
    if sparse is None:
        return await store.search(scope, namespaces, vector, limit, flt)
    by_bm25 = cues.cjk
    if not weights.meaning_counts(cues.cjk):
        first = await store.search(scope, namespaces, vector, limit, flt, sparse)
    else:
        first = await store.search(scope, namespaces, vector, limit, flt)
        if by_bm25:
            held = {c.memory.id: c for c in first}
            first = with_feedback(first, await store.search(scope, namespaces, vector, limit, flt, sparse, known=held))
    expanded = feedback_query(sparse, first, weights.feedback, by_meaning=not by_bm25)
    if expanded is None and by_bm25:
        return first  # the keyword search already ran, with nothing to add to it
    held = {c.memory.id: c for c in first}  # only new hits are read from the store
    second = await store.search(scope, namespaces, vector, limit, flt, expanded or sparse, known=held)
    return with_feedback(first, second)


async def scored_hits(
    store: VectorStore,
    scope: NamespaceScope,
    candidates: Sequence[ScoredMemory],
    namespaces: tuple[str, ...],
    flt: RecallFilter,
    weights: ScoringWeights,
    query: QueryCues,
) -> list[RecallHit]:
    """Every candidate as a scored hit, best first: relevance from `memory.recall.ranking`, a superseded candidate
    replaced by its live successor (unless the filter includes superseded ones), each memory once."""
    memories = [c.memory for c in candidates]
    notes: list[list[str]] = [[] for _ in candidates]  # the cues that moved each candidate, for `explain`
    relevance = hybrid_relevance(
        candidates,
        weights.dense_share_for(query.cjk),
        query_cjk=query.cjk,
        cross_script_share=weights.cross_script_share,
    )
    relevance = cue_relevance(
        query,
        memories,
        relevance,
        speaker=weights.speaker,
        when=weights.when,
        notes=notes,
        now=flt.now,
        passed_plan=weights.passed_plan,
    )
    relevance = conversation_relevance(
        memories,
        relevance,
        context=weights.context,
        session=weights.session,
        question=weights.question,
        answer_lift=weights.answer_lift,
        notes=notes,
    )
    versions = await current_versions(store, scope, memories, namespaces, flt)
    hits: list[RecallHit] = []
    seen: set[str] = set()
    for candidate, similarity, cues in zip(candidates, relevance, notes, strict=True):
        memory, via = candidate.memory, None
        if memory.superseded_by is not None and not flt.include_superseded:
            current = versions.current.get(memory.id)
            if current is None:
                continue
            if current.id != memory.id:
                memory, via = current, candidate.memory.id
        if memory.id in seen:
            continue
        seen.add(memory.id)
        own = via is None
        parts = score(
            memory,
            similarity,
            flt.as_of or flt.now,  # recency as seen then
            weights,
            dense_similarity=candidate.similarity if own else None,
            keyword=candidate.keyword if own else None,
            cues=tuple(cues) if own else (),
        )
        hits.append(RecallHit(memory, parts, via, versions.ends.get(memory.id)))
    hits.sort(key=lambda h: h.scores.score, reverse=True)
    return hits

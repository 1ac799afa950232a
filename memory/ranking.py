"""Recall ranking helpers: which candidates a recall keeps, in what order, and the hybrid similarity part."""

from __future__ import annotations

from collections.abc import Sequence

from memory.models import Memory, RecallHit
from memory.ports import RecallFilter, ScoredMemory
from memory.scoring import estimate_tokens


def select_hits(hits: list[RecallHit], top_k: int, token_budget: int | None) -> list[RecallHit]:
    """The best hits, one per origin and per text, within `top_k` and the token budget (hits sorted best first)."""
    chosen: list[RecallHit] = []
    seen_origins: set[str] = set()
    seen_content: set[tuple[str, str]] = set()
    spent = 0
    for hit in hits:
        origin = hit.memory.origin_id or hit.memory.id
        same_text = (hit.memory.namespace, hit.memory.content_hash)
        if origin in seen_origins or same_text in seen_content:
            continue
        cost = estimate_tokens(hit.memory.content)
        if token_budget is not None and spent + cost > token_budget:
            continue
        seen_origins.add(origin)
        seen_content.add(same_text)
        spent += cost
        chosen.append(hit)
        if len(chosen) == top_k:
            break
    return chosen


def passes_filter(memory: Memory, namespaces: tuple[str, ...], flt: RecallFilter) -> bool:
    """Whether a memory reached through a supersession link meets the filters its search applied."""
    return not (
        (namespaces and memory.namespace not in namespaces)
        or (memory.expires_at is not None and memory.expires_at <= flt.now)
        or (flt.kinds and memory.kind not in flt.kinds)
        or (flt.tags and not set(flt.tags) & set(memory.tags))
        or (flt.session_id is not None and memory.session_id != flt.session_id)
        or (flt.since is not None and memory.created_at < flt.since)
        or (flt.until is not None and memory.created_at > flt.until)
    )


def rank_aligned_similarities(candidates: Sequence[ScoredMemory]) -> list[float]:
    """The similarity part of each hybrid candidate: its dense cosine, raised to the cosine found at its fused
    rank when keyword search placed it higher ("as relevant as the k-th best match by meaning"). So a memory
    found by an exact keyword (an order number, a name) competes with the best dense matches, and every value
    stays on the cosine scale. Candidates arrive in fused (reciprocal rank) order."""
    by_rank = sorted((c.similarity for c in candidates), reverse=True)
    return [max(c.similarity, by_rank[i]) for i, c in enumerate(candidates)]

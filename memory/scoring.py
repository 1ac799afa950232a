"""The recall score: `a·similarity + b·recency + c·importance + d·access_frequency` (DESIGN §4)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from memory.errors import InvalidArgument
from memory.models import Memory, ScoreParts


@dataclass(frozen=True, slots=True)
class ScoringWeights:
    similarity: float = 0.5
    recency: float = 0.2
    importance: float = 0.2
    access_frequency: float = 0.1
    recency_decay_per_hour: float = 0.01  # recency = exp(-λ · hours since last update)
    access_saturation: int = 50  # access_count at which access_frequency reaches 1

    def __post_init__(self) -> None:
        weights = (self.similarity, self.recency, self.importance, self.access_frequency)
        if not all(math.isfinite(w) for w in (*weights, self.recency_decay_per_hour)):
            raise InvalidArgument("scoring weights and the recency decay must be finite numbers")
        if any(w < 0 for w in weights) or sum(weights) <= 0:
            raise InvalidArgument("scoring weights must be non-negative and not all zero")
        if self.recency_decay_per_hour < 0 or self.access_saturation < 1:
            raise InvalidArgument("recency decay must be >= 0 and access saturation >= 1")


def score(
    memory: Memory,
    similarity: float,
    now: datetime,
    weights: ScoringWeights,
    *,
    dense_similarity: float | None = None,
) -> ScoreParts:
    """Score one candidate. `similarity` (a cosine, or for hybrid recall the cosine raised to that of the
    candidate's fused rank, see `memory.ranking.rank_aligned_similarities`) is clamped to [0, 1]; every part
    lies in [0, 1]. `dense_similarity`, the candidate's own cosine, is reported alongside, not scored."""
    sim = min(1.0, max(0.0, similarity))
    hours = max(0.0, (now - memory.updated_at).total_seconds() / 3600.0)
    recency = math.exp(-weights.recency_decay_per_hour * hours)
    frequency = min(1.0, math.log1p(memory.access_count) / math.log1p(weights.access_saturation))
    total = (
        weights.similarity * sim
        + weights.recency * recency
        + weights.importance * memory.importance
        + weights.access_frequency * frequency
    )
    return ScoreParts(
        similarity=sim,
        recency=recency,
        importance=memory.importance,
        access_frequency=frequency,
        score=total,
        dense_similarity=dense_similarity,
    )


def estimate_tokens(text: str) -> int:
    """A model-agnostic token estimate (about four characters per token, at least one per word)."""
    return max(len(text.split()), math.ceil(len(text) / 4))

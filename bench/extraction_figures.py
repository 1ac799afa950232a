"""The data of the extraction-quality stage (`bench.extraction_quality`): the datasets it writes (`Dataset`), the four
ways each conversation is written (`CONFIGS`, `LABELS`), what each question ranked in each of them (`Asked`) and the
figures per language and of the whole run (`LanguageFigures`, `Figures`)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from gateway.evaluation.formats import TurnFormat
from gateway.evaluation.locomo import Conversation
from gateway.evaluation.metrics import Tally, recall_at

TOP_K = 10
CONFIGS = ("raw", "both", "apart", "facts")
LABELS = {
    "raw": "raw turns",
    "both": "raw + extracted",
    "apart": "raw + extracted, facts in a session of their own",
    "facts": "extracted only",
}


@dataclass(frozen=True, slots=True)
class Dataset:
    key: str  # "en" / "zh"
    label: str
    conversations: tuple[Conversation, ...]
    fmt: TurnFormat  # how the raw turns are written
    exchanges: bool  # a turn is "query\nAI: reply" (MemoryBank): two events, the user's and the companion's


@dataclass(frozen=True, slots=True)
class Asked:
    """One question: the dialogue ids each namespace ranked (top 10 memories), and how many of its hits each
    namespace answered and how many of them were facts."""

    conversation: str
    question: str
    category: int
    evidence: tuple[str, ...]
    ranked: dict[str, list[str]]
    hits: dict[str, int]
    fact_hits: dict[str, int]
    both_top: tuple[tuple[str, str], ...] = ()  # ("fact"/"turn", text) of `both`'s hits, kept for a lost question

    def recall(self, config: str, k: int = TOP_K) -> float:
        return recall_at(self.ranked[config], self.evidence, k)


@dataclass
class LanguageFigures:
    key: str
    label: str
    fmt: str
    conversations: int = 0
    turns: int = 0
    questions: int = 0
    events: int = 0
    evidence_turns: int = 0  # distinct turns some question cites
    evidence_with_fact: int = 0
    turns_with_fact: int = 0
    facts: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    fact_writes: Counter[str] = field(default_factory=Counter)  # what the write path did with each fact (`both`)
    evidence_hidden: Counter[str] = field(default_factory=Counter)  # config -> evidence turns whose raw is hidden
    tallies: dict[str, Tally] = field(default_factory=lambda: {c: Tally() for c in CONFIGS})
    by_category: dict[str, dict[int, Tally]] = field(default_factory=lambda: {c: {} for c in CONFIGS})
    asked: list[Asked] = field(default_factory=list)
    # evidence turns lost from `both`'s top 10: hidden / rewritten / context (follows a fact) / outranked
    lost_causes: Counter[str] = field(default_factory=Counter)
    turns_after_fact: int = 0  # raw turns' memories of `both` written right after a fact of their session
    raw_memories: int = 0  # the memories the raw turns of `both` resolved to
    extract_seconds: float = 0.0
    wall_seconds: float = 0.0

    def means(self, config: str) -> dict[str, float]:
        return self.tallies[config].means()

    def fact_hit_share(self, config: str) -> float:
        """The share of a namespace's top-10 hits that were facts."""
        hits = sum(a.hits[config] for a in self.asked)
        return sum(a.fact_hits[config] for a in self.asked) / hits if hits else 0.0

    def changed(self, config: str = "both") -> tuple[int, int]:
        """Questions whose recall@10 the extracted facts lowered, and raised (in `config` against `raw`)."""
        lower = sum(1 for a in self.asked if a.recall(config) < a.recall("raw"))
        higher = sum(1 for a in self.asked if a.recall(config) > a.recall("raw"))
        return lower, higher


@dataclass
class Figures:
    languages: list[LanguageFigures]
    embedder: str
    quick: bool
    load_before: str
    load_after: str = ""
    wall_seconds: float = 0.0

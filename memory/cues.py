"""Cues a recall reads from text beside similarity: who a query asks about and whether it asks when; who spoke a
memory, whether it asks a question and whether it says when something happened (`memory.ranking` weighs them).

They follow how people talk about their lives, as counted on LoCoMo's development split (the same split the
weights were measured on, so `hindsight eval locomo` on other data is the fair check): a question naming a
person is answered by that person's own words (95 % of the evidence turns of such questions); a turn that ends
in a question tells little (11 % of evidence turns, 26 % of all turns) and is answered by the turn after it
(63 % of evidence turns follow a question, 30 % of all turns); a "when" question is answered by a turn that
says when (74 % of its evidence turns, 21 % of other top matches).
English and Chinese, pure and deterministic, and linear in the text (no pattern rescans a run of digits).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from memory.pipeline.text import has_cjk, normalize, split_speaker

_WORD = re.compile(r"[^\W_]+")
_ASKS_WHEN = re.compile(
    r"\bwhen\b|\bwhat\s+(?:date|time|day|month|year)\b|\bhow\s+long\s+ago\b|\bwhich\s+(?:day|month|year)\b"
    r"|什么时候|何时|哪天|哪一天|几号|几点|哪年|哪一年|哪个月",
    re.IGNORECASE,
)
_TIME_WORD_TEXT = """
    yesterday today tonight tomorrow ago last next recently earlier weekend week month year summer winter spring
    autumn january february march april june july august september october november december monday tuesday
    wednesday thursday friday saturday sunday morning afternoon evening"""
_TIME_WORDS = frozenset(_TIME_WORD_TEXT.split())
_LATIN_WORD = re.compile(r"[a-z]+")
_YEAR = re.compile(r"\b(?:1[89]|20)\d\d\b")
_CJK_TIME = re.compile(
    r"昨天|今天|明天|前天|后天|上周|下周|这周|本周|上个月|下个月|这个月|去年|明年|今年|最近|周末"
    # a run of digits is tried from its first one only, never given back (it was retried from each: quadratic)
    r"|(?<!\d)\d++\s*+[月号日]|(?:周|星期)[一二三四五六日天]"
)


@dataclass(frozen=True, slots=True)
class QueryCues:
    text: str  # normalised
    words: frozenset[str]
    asks_when: bool

    def names(self, speaker: str) -> bool:
        """Whether the query names this speaker (a whole word; inside the text for a CJK name)."""
        return speaker in self.text if has_cjk(speaker) else speaker in self.words


def query_cues(query: str) -> QueryCues:
    text = normalize(query)
    return QueryCues(text, frozenset(_WORD.findall(text)), _ASKS_WHEN.search(text) is not None)


# Each memory cue is computed only when a recall needs it; those read from the whole text are cached, since the
# same candidates come back across recalls (contents are at most a few KB each).
@lru_cache(maxsize=8192)
def speaker_of(content: str) -> str | None:
    """The normalised speaker of a "Name: text" turn, else None."""
    return split_speaker(content)[0]


def asks(content: str) -> bool:
    """Whether the memory holds a question."""
    return "?" in content or "？" in content


def ends_asking(content: str) -> bool:
    """Whether its last sentence is a question: it asks more than it tells."""
    return content.rstrip(" \"')]").endswith(("?", "？"))


@lru_cache(maxsize=8192)
def states_time(content: str) -> bool:
    """Whether it says when (a day, a month, a year, "yesterday", "last week"), its speaker prefix (which may
    hold the date it was said) left out."""
    body = normalize(split_speaker(content)[1])
    if not _TIME_WORDS.isdisjoint(_LATIN_WORD.findall(body)) or "the other day" in body or _YEAR.search(body):
        return True
    return has_cjk(body) and _CJK_TIME.search(body) is not None

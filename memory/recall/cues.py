"""Cues a recall reads from text beside similarity: who a query asks about and whether it asks when; who spoke a
memory, whether it asks a question and whether it says when something happened (`memory.recall.ranking` weighs them).

Who said a memory is answered here for the whole engine (`speaker_of`): the speaker of a "Name: text" turn, else
the speaker a write gives beside its text as `metadata.speaker` (an agent storing a user's own words as they
were said). Such a memory is read as "Name: text" (`attributed`) wherever the engine reads a turn: its keyword
document and dense embedding (and its turn context: `memory.write.writer`), the speaker cue at recall, and who "I"
is in its claims and conflicts (`memory.pipeline.conflict`). Its stored content stays as written.

When a memory happened is findable by keyword too: its keyword document also holds its day in words
(`date_words`: "27 March 2023", and "2023年3月27日 3月27号" for a Chinese memory, the day of its `occurred_at` in
the writer's zone, else of its writing), so a query naming a date ("what did Jon find on 1 February, 2023?", "in
August 2023", "5月4号的天气怎么样?") matches what was said that day whether or not the text says it, as it would
if the turn had been logged under a date header.

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
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any

from memory.text.patterns import bilingual
from memory.text.words import has_cjk, normalize, split_speaker

_WORD = re.compile(r"[^\W_]+")
_ASKS_WHEN = re.compile(
    r"\bwhen\b|\bwhat\s+(?:date|time|day|month|year)\b|\bhow\s+long\s+ago\b|\bwhich\s+(?:day|month|year)\b"
    r"|什么时候|何时|哪天|哪一天|几号|几点|哪年|哪一年|哪个月",
    re.IGNORECASE,
)
# A question about the present state of things ("where does she live now?", "is he still at Google?", "目前在哪工作"):
# the only questions a plan whose day has passed is history for (a question asked later about the plan itself, "when
# was the art show?", "what did she plan for May?", wants it at full weight).
_ASKS_NOW = bilingual(
    r"now|currently|current|these\s+days|nowadays|at\s+(?:the\s+)?(?:moment|present)|still|anymore|any\s+more|"
    r"upcoming|coming\s+up",
    r"现在|目前|当前|如今|眼下|还在|仍然|依然|接下来|即将",
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
    asks_now: bool = False  # about the present state of things (`_ASKS_NOW`)
    cjk: bool = False  # written in Chinese, Japanese or Korean (its own dense share: `ScoringWeights`)

    def names(self, speaker: str) -> bool:
        """Whether the query names this speaker (a whole word; inside the text for a CJK name)."""
        return speaker in self.text if has_cjk(speaker) else speaker in self.words


def query_cues(query: str) -> QueryCues:
    text = normalize(query)
    return QueryCues(
        text,
        frozenset(_WORD.findall(text)),
        _ASKS_WHEN.search(text) is not None,
        _ASKS_NOW.search(text) is not None,
        has_cjk(text),
    )


SPEAKER_KEY = "speaker"  # the metadata key a write names its speaker by, when its text has no "Name: " prefix
MAX_SPEAKER_CHARS = 40  # a given speaker is a name: longer values (a sentence, a JSON dump) are not one


def given_speaker(metadata: Mapping[str, Any] | None) -> str | None:
    """The speaker a write gives beside its text, `metadata["speaker"]`, its whitespace collapsed, as given: a
    non-empty string of at most `MAX_SPEAKER_CHARS` characters, else None."""
    value = metadata.get(SPEAKER_KEY) if metadata else None
    if not isinstance(value, str):
        return None
    name = " ".join(value.split())
    return name if 0 < len(name) <= MAX_SPEAKER_CHARS else None


def speaker_of(content: str, metadata: Mapping[str, Any] | None = None) -> str | None:
    """Who said a memory, normalised ("caroline"): the speaker of its "Name: text" prefix, else the speaker given in
    its `metadata` (`given_speaker`), else None. The one answer every rule that asks who said it uses."""
    prefixed = _prefix_speaker(content)
    if prefixed is not None:
        return prefixed
    name = given_speaker(metadata)
    return _normal_name(name) if name is not None else None


def attributed(content: str, metadata: Mapping[str, Any] | None = None) -> str:
    """The text the engine reads a memory as: its content, or "Name: content" when its speaker is given only in
    its `metadata`, as a chat log would show the turn (what its keyword document and embedding are made of). A
    name the prefix rule cannot read back ("Élodie", "3PO") still counts everywhere but in the turn context of
    `memory.pipeline.turns`, which asks the text itself."""
    if _prefix_speaker(content) is not None:
        return content
    name = given_speaker(metadata)
    return content if name is None else f"{name}: {content}"


# English month names whatever the process locale (`%B` follows it)
_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


def date_words(at: datetime, chinese: bool = False) -> str:
    """The day of `at` (in its own zone) as a query names a date: "27 March 2023", and for a Chinese memory also
    "2023年3月27日 3月27号" (a Chinese question names the month by its number: "5月4号我看了什么电影?")."""
    words = f"{at.day} {_MONTHS[at.month - 1]} {at.year}"
    return f"{words} {at.year}年{at.month}月{at.day}日 {at.month}月{at.day}号" if chinese else words


# Each memory cue is computed only when a recall needs it; those read from the whole text are cached, since the
# same candidates come back across recalls (contents are at most a few KB each).
@lru_cache(maxsize=8192)
def _prefix_speaker(content: str) -> str | None:
    """The normalised speaker of a "Name: text" turn, else None."""
    return split_speaker(content)[0]


@lru_cache(maxsize=1024)
def _normal_name(name: str) -> str:
    return normalize(name)


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

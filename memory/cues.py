"""Cues a recall reads from text beside similarity: who a query asks about and whether it asks when; who spoke a
memory, whether it asks a question and whether it says when something happened (`memory.ranking` weighs them).

They come from how people talk about their lives, measured on LoCoMo dev turns (not on its answers): a question
about a person is answered by that person's own words (95 % of evidence turns of the questions naming a speaker
are that speaker's); a turn that ends in a question tells little (11 % of evidence turns against 26 % of all
turns) and is answered by the turn after it (63 % of evidence turns follow a question, 30 % of all); a "when"
question is answered by a turn that says when (74 % of evidence turns state a time, 21 % of other top matches).
English and Chinese, pure and deterministic.
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
_MONTH_NAMES = "january|february|march|april|june|july|august|september|october|november|december"
_WEEKDAY_NAMES = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_STATES_TIME = re.compile(
    rf"\b(?:yesterday|today|tonight|tomorrow|ago|last|next|recently|earlier|the\s+other\s+day|weekend|week|month"
    rf"|year|summer|winter|spring|autumn|{_MONTH_NAMES}|{_WEEKDAY_NAMES}|\d{{4}})\b"
    r"|昨天|今天|明天|前天|后天|上周|下周|这周|本周|上个月|下个月|这个月|去年|明年|今年|最近|周末"
    r"|\d+\s*月|\d+\s*[号日]|(?:周|星期)[一二三四五六日天]",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class QueryCues:
    text: str  # normalised
    words: frozenset[str]
    asks_when: bool

    def names(self, speaker: str) -> bool:
        """Whether the query names this speaker (a whole word; inside the text for a CJK name)."""
        return speaker in self.text if has_cjk(speaker) else speaker in self.words


@dataclass(frozen=True, slots=True)
class TurnCues:
    speaker: str | None  # normalised, from a "Name: text" prefix
    asks: bool  # holds a question
    ends_asking: bool  # its last sentence is a question: it asks more than it tells
    states_time: bool  # says when (a day, a month, "yesterday", "last week"), the speaker prefix left out


def query_cues(query: str) -> QueryCues:
    text = normalize(query)
    return QueryCues(text, frozenset(_WORD.findall(text)), _ASKS_WHEN.search(text) is not None)


@lru_cache(maxsize=4096)  # candidates recur across recalls; contents are at most a few KB each
def turn_cues(content: str) -> TurnCues:
    speaker, body = split_speaker(content)
    body = normalize(body)
    return TurnCues(
        speaker=speaker,
        asks="?" in body,  # NFKC maps the full-width ？ to ?
        ends_asking=body.rstrip(" \"')]").endswith("?"),
        states_time=_STATES_TIME.search(body) is not None,
    )

"""Step 2 of the write pipeline (docs/DESIGN.md § "The write path"): a plan read from the text, and the day it is about.

Rule-based, English and Chinese: a fact about a coming day (a phrase of `memory.text.time_phrases`:
"tomorrow", "next Wednesday", "in 3 days", "下周三", "5月5日") is a plan until the end of that day, in the time zone
of the turn's own time (`occurred_at`, else now in UTC).

Only a prospective statement is a plan: a plan, appointment, deadline or reminder about a time after it was said
("I have a meeting tomorrow", "the report is due Friday", "我下周三要去北京出差", "提醒我5月6日给银行打电话").
Never a timestamp header or a date that dates the statement itself (a leading "[1:10 pm on 27 March, 2023]" is
cut off; a date on or before the statement's day sets nothing), past or ongoing events and lasting facts,
conditional sentences, reported or quoted speech, farewells ("see you tomorrow", "明天再聊"), questions, recurring
or permanent times ("every Monday", "每周一", "born on May 5"); `memory.pipeline.prospective` reads each sentence
once for these. Phrases that can only look ahead ("tomorrow", "next month", "in 3 days") need nothing more; those
that can also name the current day ("today", "this week", "on Friday", "周五") also need a cue of intent,
obligation or appointment in their sentence ("will", "need to", "meeting", "要", "打算", "开会") or a deadline
word ("by Friday", "周五前"). When unsure, no expiry: a wrong one hides a memory. Of several time-bound phrases,
the latest day wins. An explicit `ttl_seconds` always wins over the text.

What a plan means later (decided and measured, `python -m bench.expired_plans`): the write notes the end of its
day (`_pipeline.expiry.until`) and sets no `expires_at`, so a plan is never hidden; once the day has passed,
recall keeps it as history and marks it (`memory.lifecycle.hidden`), and lowers it for a question about the present only
if configured (`ScoringWeights.passed_plan`, off by default). On five samples written blind to these rules the plan
reading was right between a third and five sixths of the times it fired (bench/FINDINGS.md): not sure enough to
hide or lower a memory. On LoCoMo dev, passed plans as good as hidden gave recall@10 0.780, kept 0.792. An
explicit `ttl_seconds` is the only expiry that hides.

Linear in the text, whatever it holds: the phrases are found in linear time (`memory.text.time_phrases`),
the sentences are found once and each is tested for tense once, and a run of
punctuation is never rescanned (8,000 characters of "on Fri " cost 7.5 s before, ~6 ms now).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from memory.pipeline.prospective import PERMANENT, Quotes, Sentences, names_today, without_header
from memory.text.budget import CpuBudget
from memory.text.patterns import bilingual
from memory.text.time_phrases import AHEAD_ONLY, OFFSET, candidates
from memory.text.words import nfkc


@dataclass(frozen=True, slots=True)
class TimeBound:
    expires_at: datetime
    day: date  # the last day the fact is about
    phrase: str  # the text it was read from
    rule: str


def _end_of(day: date, reference: datetime) -> datetime:
    return datetime.combine(day + timedelta(days=1), time(0), tzinfo=reference.tzinfo)


_OTHERWISE = bilingual(r"otherwise|or\s+else", r"不然|否则")
_DEADLINE_WORDS = ("by", "before", "until", "till", "due")  # "send it by Thursday" ("周五前" in Chinese)


def _looks_ahead(rule: str, match: re.Match[str], day: date, today: date, sentences: Sentences) -> bool:
    """Whether the phrase `match`, resolved to `day`, states a plan about a time after the statement."""
    reading = sentences.reading(match.start(), match.end())
    if reading.refused:
        return False  # conditional, ongoing, reported, a farewell, a question
    if reading.holds_more:
        return False  # "I'm a shooting guard and our opener is next week", "I'm also hosting ... next month"
    if rule in AHEAD_ONLY:
        return True  # "tomorrow", "next week": the tense of the sentence does not matter
    if reading.past:
        return False  # "I went to the gym today", "we won on Friday", "finished in 3 days", "built in a day"
    if rule in OFFSET:
        return True  # "in 3 days", not in the past tense
    if rule == "date":
        return day > today  # a date after the statement looks ahead; one on its day dates it
    deadline = match.group(0).lower().startswith(_DEADLINE_WORDS) or sentences.text.startswith("前", match.end())
    if not (reading.cue or deadline):
        return False  # "the weather is bad today", "周五是我最喜欢的日子": no plan
    return not names_today(sentences.text, match.start())  # "today is Sunday"


def find_expiry(content: str, reference: datetime, budget: CpuBudget | None = None) -> TimeBound | None:
    """The expiry of a time-bound plan stated at `reference` (a timezone-aware time), or None. Linear in the
    text; with a `budget`, raises `BudgetExhausted` when it runs out (the caller then sets no expiry)."""
    text = without_header(" ".join(nfkc(content).split()))
    if PERMANENT.search(text):
        return None
    today = reference.date()
    sentences = Sentences(text)
    quotes = Quotes(text)
    best: TimeBound | None = None
    best_span = (0, 0)
    otherwise = [m.start() for m in _OTHERWISE.finditer(text)]  # found once; looked up by bisection
    for rule, match, day in candidates(text, today, budget):
        if day < today or quotes.inside(match.start()):
            continue
        if not _looks_ahead(rule, match, day, today, sentences):
            continue
        first = bisect_left(otherwise, sentences.around(match.start(), match.end())[0])
        if first < len(otherwise) and otherwise[first] < match.start():
            continue  # what happens otherwise: "by the end of the month, or it slips to next month"
        if best is None or day > best.day:
            best = TimeBound(_end_of(day, reference), day, match.group(0), rule)
            best_span = sentences.around(match.start(), match.end())
    if best is not None and any(r.lasting for r in sentences.others(best_span)):
        return None  # another sentence states a lasting fact or a past event: hiding the plan would hide it
    return best

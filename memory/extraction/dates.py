"""Relative dates made absolute: each time phrase of a sentence gets the day it names written after it, from the
day the sentence was said ("tomorrow" -> "tomorrow (2026-12-03)", "明天" -> "明天（2026-12-03）").

Phrases about days to come, weekdays, dates and spans come from `memory.text.time_phrases.candidates`; this
module adds the past it leaves out ("yesterday", "the day before yesterday", "last night", "last week", "last
weekend", "last month", "last year", "last Friday", "3 days ago", "two weeks ago", "昨天", "昨晚", "前天", "大前天",
"上周", "上周三", "上个月", "去年", "前年", "三天前", "两个月前").

What is written: a day as ISO ("2026-12-03"); a week as the week of its Monday ("week of 2026-11-23",
"2026-11-23起的一周"); a weekend by its Saturday ("weekend of 2026-11-28", "2026-11-28起的周末"); a month as
"2026-11"; a year as "2025"; a range as its last day ("until 2026-10-18", "至2026-10-18"). The tense of the
sentence decides what `time_phrases` cannot: in a past sentence a weekday is the last one ("on Friday" said on a
Wednesday is two days ago), an offset ("in 3 days") is a duration and gets nothing, and a span still ahead gets
nothing. A phrase that already holds a four-digit year, or is already followed by an annotation, is left alone.
English annotations follow a space and parentheses, Chinese ones full-width parentheses.

Linear in the text: `time_phrases` is; the patterns here are alternations of fixed words with possessive
spaces, run once per sentence; at most `MAX_ANNOTATIONS` are written.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, timedelta

from memory.pipeline.prospective import PAST
from memory.text.patterns import bilingual
from memory.text.time_phrases import AHEAD_ONLY, OFFSET, candidates, number

MAX_ANNOTATIONS = 8

_WEEKDAYS = {"mon": 0, "tues": 1, "wednes": 2, "thurs": 3, "fri": 4, "satur": 5, "sun": 6}
_ZH_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_FUTURE = bilingual(r"will|going\s+to|gonna|plan|plans|planning|tomorrow|next", r"要|会|打算|计划|准备|将")
_RANGE = re.compile(r"\d\s*[-–—~～]\s*\d|到|至|\b(?:to|through|thru|until|till)\b", re.IGNORECASE)
_YEAR = re.compile(r"\d{4}")
_WEEK_RULES = frozenset({"next_week", "this_week", "week_after_next"})
_WEEKEND_RULES = frozenset({"this_weekend", "next_weekend"})
_MONTH_RULES = frozenset({"this_month", "next_month"})
_WEEKDAY_RULES = frozenset({"this_weekday", "weekday"})
_NAMES_TODAY = re.compile(r"(?:今天|今日)(?:是|为)?$|\b(?:today\s+is|it'?s|it\s+is)\s*$", re.IGNORECASE)

Unit = str  # "day" | "week" | "weekend" | "month" | "year" | "until"


def _week_start(day: date) -> date:
    return day - timedelta(days=day.weekday())


def _months_back(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 - months
    return date(index // 12, index % 12 + 1, 1)


def _ago(count: int, unit: str, today: date) -> tuple[date, Unit] | None:
    unit = unit.lower()
    if count > 400:
        return None
    if unit in ("day", "天"):
        return today - timedelta(days=count), "day"
    if unit in ("week", "周", "个星期", "个礼拜"):
        return _week_start(today - timedelta(days=7 * count)), "week"
    if unit in ("month", "个月"):
        return _months_back(today, count), "month"
    return date(max(1, today.year - count), 1, 1), "year"


_NUM_EN = r"\d{1,3}|a\s++couple\s++of|couple\s++of|an?|one|two|three|four|five|six|seven|eight|nine|ten"
_NUM_ZH = r"\d{1,3}|[一二两三四五六七八九十]{1,3}"
# "晚上月亮", "马上周末": a 上 that ends another word is no "last"
_NOT_WORD = "(?<![晚早马路身手桌网线楼台床街车山天地班世以])"
_PAST_RULES: list[tuple[re.Pattern[str], Callable[[re.Match[str], date], tuple[date, Unit] | None]]] = [
    (re.compile(r"\b(?:the\s++)?day\s++before\s++yesterday\b"), lambda m, t: (t - timedelta(days=2), "day")),
    (re.compile(r"\byesterday\b|\blast\s++night\b"), lambda m, t: (t - timedelta(days=1), "day")),
    (re.compile(r"大前天"), lambda m, t: (t - timedelta(days=3), "day")),
    (re.compile(r"(?<!大)前天"), lambda m, t: (t - timedelta(days=2), "day")),
    (re.compile(r"昨[天日晚夜儿]"), lambda m, t: (t - timedelta(days=1), "day")),
    (
        re.compile(r"\blast\s++(mon|tues|wednes|thurs|fri|satur|sun)day\b"),
        lambda m, t: (t - timedelta(days=(t.weekday() - _WEEKDAYS[m.group(1).lower()] - 1) % 7 + 1), "day"),
    ),
    (
        re.compile(rf"{_NOT_WORD}上(?:个)?(?:周|星期|礼拜)([一二三四五六日天])"),
        lambda m, t: (_week_start(t) - timedelta(days=7 - _ZH_WEEKDAYS[m.group(1)]), "day"),
    ),
    (
        re.compile(rf"\blast\s++weekend\b|{_NOT_WORD}上(?:个)?周末"),
        lambda m, t: (_week_start(t) - timedelta(days=2), "weekend"),
    ),
    (
        re.compile(rf"\blast\s++week\b|{_NOT_WORD}上(?:个)?(?:周|星期|礼拜)(?![一二三四五六日天末])"),
        lambda m, t: (_week_start(t) - timedelta(days=7), "week"),
    ),
    (
        re.compile(rf"\blast\s++month\b|{_NOT_WORD}上(?:个)?月(?![\d一二三四五六七八九十]|份)"),
        lambda m, t: (_months_back(t, 1), "month"),
    ),
    (re.compile(r"\blast\s++year\b|去年"), lambda m, t: (date(t.year - 1, 1, 1), "year")),
    (re.compile(r"(?<![大\d])前年"), lambda m, t: (date(t.year - 2, 1, 1), "year")),
    (
        re.compile(rf"\b({_NUM_EN})\s++(day|week|month|year)s?\s++ago\b"),
        lambda m, t: _ago(number(m.group(1)), m.group(2), t),
    ),
    (
        re.compile(rf"({_NUM_ZH})\s*+(天|周|个星期|个礼拜|个月|年)(?:之|以)?前"),
        lambda m, t: _ago(number(m.group(1)), m.group(2), t),
    ),
]
_PAST_RULES = [(re.compile(p.pattern, re.IGNORECASE), fn) for p, fn in _PAST_RULES]
_PAST_NEEDLES = ("yesterday", "last", "ago", "前", "昨", "上", "去年")


def _label(day: date, unit: Unit, chinese: bool) -> str:
    if unit == "week":
        return f"{day.isoformat()}起的一周" if chinese else f"week of {day.isoformat()}"
    if unit == "weekend":
        return f"{day.isoformat()}起的周末" if chinese else f"weekend of {day.isoformat()}"
    if unit == "month":
        return f"{day.year:04d}-{day.month:02d}"
    if unit == "year":
        return f"{day.year:04d}"
    if unit == "until":
        return f"至{day.isoformat()}" if chinese else f"until {day.isoformat()}"
    return day.isoformat()


def is_past(sentence: str) -> bool:
    """Past tense without a word of the future (`memory.pipeline.prospective.PAST`)."""
    return PAST.search(sentence) is not None and _FUTURE.search(sentence) is None


def _ahead(sentence: str, today: date, past: bool) -> list[tuple[int, int, date, Unit]]:
    """The phrases of `time_phrases`, with the day or span each names as said in this sentence."""
    found: list[tuple[int, int, date, Unit]] = []
    for rule, match, day in candidates(sentence, today, None):
        text = match.group(0)
        if rule == "in_hours" or (past and rule in OFFSET) or _YEAR.search(text):
            continue
        if rule in _WEEKDAY_RULES and _NAMES_TODAY.search(sentence[max(0, match.start() - 12) : match.start()]):
            continue  # "今天是星期五", "today is Friday": the day it was said, whatever the calendar says
        if past and rule in _WEEKDAY_RULES and day > today:
            day -= timedelta(days=7)  # "I went there on Friday": the last one
        elif past and rule not in AHEAD_ONLY and rule not in _WEEKDAY_RULES and day > today:
            continue
        unit: Unit = "day"
        if rule in _WEEK_RULES:
            day, unit = day - timedelta(days=6), "week"
        elif rule in _WEEKEND_RULES:
            day, unit = day - timedelta(days=1), "weekend"
        elif rule in _MONTH_RULES:
            unit = "month"
        elif _RANGE.search(text):
            unit = "until"
        found.append((match.start(), match.end(), day, unit))
    return found


def _behind(sentence: str, today: date) -> list[tuple[int, int, date, Unit]]:
    lowered = sentence.lower()
    if not any(needle in lowered for needle in _PAST_NEEDLES):
        return []
    found: list[tuple[int, int, date, Unit]] = []
    for pattern, resolve in _PAST_RULES:
        for match in pattern.finditer(sentence):
            resolved = resolve(match, today)
            if resolved is not None:
                found.append((match.start(), match.end(), *resolved))
            if len(found) > 4 * MAX_ANNOTATIONS:
                break
    return found


def annotate(sentence: str, today: date) -> tuple[str, int]:
    """`sentence` with the absolute day written after each relative time phrase, and how many were written."""
    spans = _behind(sentence, today) + _ahead(sentence, today, is_past(sentence))
    spans.sort(key=lambda span: (span[0], -span[1]))
    first_day = {start: day for start, _, day, unit in reversed(spans) if unit == "day"}  # a range's first day
    pieces: list[str] = []
    written = cursor = 0
    for start, end, day, unit in spans:
        if start < cursor or written >= MAX_ANNOTATIONS:
            continue
        following = sentence[end : end + 3]
        if following[:1] == "（" or following[:2] == " (" or following[:1] == "(":
            continue  # already annotated, or a parenthesis of its own
        chinese = any("\u3400" <= c <= "\u9fff" for c in sentence[start:end])
        label = _label(day, unit, chinese)
        if unit == "until" and start in first_day and first_day[start] < day:
            label = f"{first_day[start].isoformat()}{'至' if chinese else ' to '}{day.isoformat()}"
        pieces.append(sentence[cursor:end])
        pieces.append(f"（{label}）" if chinese else f" ({label})")
        cursor = end
        written += 1
    pieces.append(sentence[cursor:])
    return "".join(pieces), written

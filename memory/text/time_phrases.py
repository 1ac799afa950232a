"""The time phrases a plan can name, in English and Chinese, and the day each resolves to: "tomorrow",
"next Wednesday", "this weekend", "in 3 days", "on May 5", "Oct 14–18", "2026-05-05", "明天", "后天",
"下周三", "下下周一到周三", "今晚", "5月5日", "月底". Weeks start on Monday: "next Wednesday" and "下周三" are
the Wednesday of the following week, "this Friday", "on Friday" and "周五" the coming one (today included); a
week, a month or a range runs to its last day. Whether a phrase is a plan is `memory.pipeline.expiry`'s to decide.

Linear in the text, whatever it holds: a rule scans only a text that has one of its words (`_NEEDLES`), and
examines at most `MAX_MATCHES_PER_RULE` matches.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable, Iterator
from datetime import date, timedelta
from itertools import islice

from memory.text.budget import CpuBudget, check
from memory.text.patterns import bilingual

_WEEKDAYS_EN = {
    "mon": 0,
    "monday": 0,
    "tue": 1,
    "tues": 1,
    "tuesday": 1,
    "wed": 2,
    "wednesday": 2,
    "thu": 3,
    "thur": 3,
    "thurs": 3,
    "thursday": 3,
    "fri": 4,
    "friday": 4,
    "sat": 5,
    "saturday": 5,
    "sun": 6,
    "sunday": 6,
}
_WEEKDAYS_ZH = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_MONTHS = {
    name: number
    for number, names in enumerate(
        [
            ("jan", "january"),
            ("feb", "february"),
            ("mar", "march"),
            ("apr", "april"),
            ("may",),
            ("jun", "june"),
            ("jul", "july"),
            ("aug", "august"),
            ("sep", "sept", "september"),
            ("oct", "october"),
            ("nov", "november"),
            ("dec", "december"),
        ],
        start=1,
    )
    for name in names
}
_NUMBER_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}
_NUMBER_WORDS |= {"eight": 8, "nine": 9, "ten": 10, "a couple of": 2, "couple of": 2}
_ZH_DIGITS = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10}

_WD = "|".join(sorted(_WEEKDAYS_EN, key=len, reverse=True))
_MON = "|".join(sorted(_MONTHS, key=len, reverse=True)).replace("may", "(?-i:May)")  # not the verb "may"
_NUM = r"\d{1,3}|" + "|".join(sorted(_NUMBER_WORDS, key=len, reverse=True))
_ZH_NUM = r"\d{1,3}|[一二两三四五六七八九十]{1,3}"
_RANGE_EN = r"(?:-|–|—|to|through|thru|until|till)"  # "Oct 14–18", "May 3 thru 9"
_RANGE_ZH = r"(?:到|至|-|–|~|～)"  # "下周一到周三"


def number(word: str) -> int:
    """The value of a number a time phrase counts with: digits, an English number word ("three", "a couple of",
    any case and spacing) or a Chinese numeral up to 99 ("三", "十一", "二十三")."""
    word = " ".join(word.lower().split())
    if word.isdigit():
        return int(word)
    if word in _NUMBER_WORDS:
        return _NUMBER_WORDS[word]
    if len(word) == 1:
        return _ZH_DIGITS[word]
    if word.startswith("十"):  # 十一 .. 十九
        return 10 + _ZH_DIGITS.get(word[1:], 0)
    tens = _ZH_DIGITS[word[0]] * 10  # 二十, 二十三
    return tens + (_ZH_DIGITS[word[2]] if len(word) > 2 else 0)


def _week_start(day: date) -> date:
    return day - timedelta(days=day.weekday())


def _coming(weekday: int, today: date) -> date:
    return today + timedelta(days=(weekday - today.weekday()) % 7)


def _month_end(year: int, month: int) -> date:
    return date(year, month, calendar.monthrange(year, month)[1])


def _nearest(month: int, day: int, today: date) -> date | None:
    """A date without a year: the occurrence nearest to today (so "Jan 3" said in December is next year's)."""
    options = []
    for year in (today.year - 1, today.year, today.year + 1):
        try:
            options.append(date(year, month, day))
        except ValueError:
            continue
    return min(options, key=lambda d: abs((d - today).days)) if options else None


def _full_date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


Rule = tuple[str, re.Pattern[str], Callable[[re.Match[str], date], date | None]]

_RULES: list[Rule] = [
    ("day_after_tomorrow", re.compile(r"\b(?:the\s+)?day\s+after\s+tomorrow\b"), lambda m, t: t + timedelta(days=2)),
    ("tomorrow", re.compile(r"\btomorrow\b|(?<!后)明[天日早晚]"), lambda m, t: t + timedelta(days=1)),
    ("in_three_days", re.compile(r"大后天"), lambda m, t: t + timedelta(days=3)),
    ("in_two_days", re.compile(r"(?<!大)后天"), lambda m, t: t + timedelta(days=2)),
    (
        "weekday_after_next_week",
        re.compile(r"下下(?:个)?(?:周|星期|礼拜)([一二三四五六日天])"),
        lambda m, t: _week_start(t) + timedelta(days=14 + _WEEKDAYS_ZH[m.group(1)]),
    ),
    (
        "next_weekday",
        re.compile(rf"\bnext\s+({_WD})\b|(?<!下)下(?:个)?(?:周|星期|礼拜)([一二三四五六日天])"),
        lambda m, t: (
            _week_start(t)
            + timedelta(days=7 + (_WEEKDAYS_EN[m.group(1).lower()] if m.group(1) else _WEEKDAYS_ZH[m.group(2)]))
        ),
    ),
    (
        "weekday_after_next_week",  # a range ends on its last day: "下下周一到周三"
        re.compile(
            rf"下下(?:个)?(?:周|星期|礼拜)[一二三四五六日天]\s*{_RANGE_ZH}\s*(?:周|星期|礼拜)?([一二三四五六日天])"
        ),
        lambda m, t: _week_start(t) + timedelta(days=14 + _WEEKDAYS_ZH[m.group(1)]),
    ),
    (
        "next_weekday",
        re.compile(
            rf"(?<!下)下(?:个)?(?:周|星期|礼拜)[一二三四五六日天]\s*{_RANGE_ZH}\s*(?:周|星期|礼拜)?([一二三四五六日天])"
        ),
        lambda m, t: _week_start(t) + timedelta(days=7 + _WEEKDAYS_ZH[m.group(1)]),
    ),
    (
        "this_weekday",
        re.compile(rf"\b(?:this|on|by|until|till|before|due|coming|this\s+coming)\s+({_WD})\b(?!s)"),
        lambda m, t: _coming(_WEEKDAYS_EN[m.group(1).lower()], t),
    ),
    (
        "this_weekday",
        re.compile(r"(?:这|本)(?:个)?(?:周|星期|礼拜)([一二三四五六日天])"),
        lambda m, t: _week_start(t) + timedelta(days=_WEEKDAYS_ZH[m.group(1)]),
    ),
    (
        "weekday",
        re.compile(r"(?<![上下这本每])(?:周|星期|礼拜)([一二三四五六日天])"),
        lambda m, t: _coming(_WEEKDAYS_ZH[m.group(1)], t),
    ),
    (
        "weekday_next_week",
        re.compile(rf"\b({_WD})\s+(?:of\s+)?next\s+week\b"),
        lambda m, t: _week_start(t) + timedelta(days=7 + _WEEKDAYS_EN[m.group(1).lower()]),
    ),
    (
        "day_this_month",
        re.compile(rf"(?:本|这个?)月\s*({_ZH_NUM})\s*[号日]"),
        lambda m, t: _full_date(t.year, t.month, number(m.group(1))),
    ),
    (
        "day_next_month",
        re.compile(rf"下(?:个)?月\s*({_ZH_NUM})\s*[号日]"),
        lambda m, t: _full_date(t.year + t.month // 12, t.month % 12 + 1, number(m.group(1))),
    ),
    (
        "next_weekend",
        re.compile(r"\bnext\s+weekend\b|下(?:个)?周末"),
        lambda m, t: _week_start(t) + timedelta(days=13),
    ),
    (
        "this_weekend",
        re.compile(r"\bthis\s+(?:coming\s+)?weekend\b|(?<![上下每])(?:这个|这|本)?周末"),
        lambda m, t: _week_start(t) + timedelta(days=6),
    ),
    (
        "week_after_next",
        re.compile(r"\bthe\s+week\s+after\s+next\b|下下(?:个)?(?:周|星期|礼拜)(?![一二三四五六日天末])"),
        lambda m, t: _week_start(t) + timedelta(days=20),
    ),
    (
        "next_week",
        re.compile(r"(?<!day\s)(?<!day\sof\s)\bnext\s+week\b|(?<!下)下(?:个)?(?:周|星期|礼拜)(?![一二三四五六日天末])"),
        lambda m, t: _week_start(t) + timedelta(days=13),
    ),
    (
        "this_week",
        re.compile(r"\bthis\s+week\b|(?:这|本)(?:个)?(?:周|星期)(?![一二三四五六日天末])"),
        lambda m, t: _week_start(t) + timedelta(days=6),
    ),
    (
        "this_month",
        re.compile(
            rf"\b(?:later\s+)?this\s+month\b|\b(?:by\s+)?(?:the\s+)?end\s+of\s+(?:the\s+|this\s+)?month\b"
            rf"|(?:这个|本)月(?:底)?(?!\s*(?:{_ZH_NUM})\s*[号日])|(?<![上个下\d一二三四五六七八九十])月底"
        ),
        lambda m, t: _month_end(t.year, t.month),
    ),
    (
        "day_next_month",
        re.compile(r"\b(?:the\s+)?(\d{1,2})(?:st|nd|rd|th)\s+of\s+next\s+month\b"),
        lambda m, t: _full_date(t.year + t.month // 12, t.month % 12 + 1, int(m.group(1))),
    ),
    (
        "next_month",
        re.compile(rf"(?<!(?:st|nd|rd|th)\sof\s)\bnext\s+month\b|下(?:个)?月(?!\s*(?:{_ZH_NUM})\s*[号日])"),
        lambda m, t: _month_end(t.year + t.month // 12, t.month % 12 + 1),
    ),
    (
        "in_days",
        re.compile(
            rf"\bin\s+({_NUM})\s+(day|week)s?\b|({_ZH_NUM})\s*(天|周|个星期|个礼拜)(?:之|以)?后|过({_ZH_NUM})天"
        ),
        lambda m, t: (
            t
            + timedelta(
                days=number((m.group(1) or m.group(3) or m.group(5)).lower())
                * (7 if (m.group(2) or m.group(4) or "天").lower() in ("week", "周", "个星期", "个礼拜") else 1)
            )
        ),
    ),
    ("in_hours", re.compile(rf"\bin\s+(?:{_NUM})\s+(?:hour|minute)s?\b|\bin\s+half\s+an\s+hour\b"), lambda m, t: t),
    (
        "date",
        re.compile(r"\b(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})\b|(\d{4})\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]"),
        lambda m, t: _full_date(*(int(g) for g in (m.groups()[:3] if m.group(1) else m.groups()[3:]))),
    ),
    (
        "date",
        re.compile(rf"\b({_MON})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?!\s*[:,]?\s*\d{{3,4}}\b)(?!:)"),
        lambda m, t: _nearest(_MONTHS[m.group(1).lower()], int(m.group(2)), t),
    ),
    (
        "date",
        re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MON})\b(?!,?\s*\d{{4}})"),
        lambda m, t: _nearest(_MONTHS[m.group(2).lower()], int(m.group(1)), t),
    ),
    (
        "date",  # a range of days ends on its last one: "Oct 14–18", "May 3 to 9"
        re.compile(rf"\b({_MON})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?\s*{_RANGE_EN}\s*(\d{{1,2}})(?:st|nd|rd|th)?\b(?!:)"),
        lambda m, t: _nearest(_MONTHS[m.group(1).lower()], int(m.group(2)), t),
    ),
    (
        "date",
        re.compile(r"(?<![年\d])(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]"),
        lambda m, t: _nearest(int(m.group(1)), int(m.group(2)), t),
    ),
    (
        "date",
        re.compile(rf"\b({_MON})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b"),
        lambda m, t: _full_date(int(m.group(3)), _MONTHS[m.group(1).lower()], int(m.group(2))),
    ),
    (
        "date",
        re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MON}),?\s+(\d{{4}})\b"),
        lambda m, t: _full_date(int(m.group(3)), _MONTHS[m.group(2).lower()], int(m.group(1))),
    ),
]
_RULES = [(name, re.compile(pattern.pattern, re.IGNORECASE), fn) for name, pattern, fn in _RULES]
# Rules whose phrase can only name a day to come; the others ("this week", "on Friday", "today", a date) can
# also name the current or a past one, which the tense of their sentence decides.
AHEAD_ONLY = frozenset(
    {"day_after_tomorrow", "tomorrow", "in_three_days", "in_two_days", "next_weekday", "next_weekend", "next_week"}
    | {"next_month", "weekday_next_week", "day_next_month", "weekday_after_next_week", "week_after_next"}
)
# An offset from now unless the sentence is in the past tense, where it is a duration ("finished it in 3 days").
OFFSET = frozenset({"in_days", "in_hours"})
_SAME_DAY = bilingual(r"today|tonight|this\s+(?:morning|afternoon|evening)", r"今[天日晚早夜]")


# At most this many matches of each rule are examined: a text that repeats a time phrase hundreds of times ("Dec
# 5 Dec 5 ...") says nothing more than its first ones, and each match costs a resolution and a sentence look-up.
MAX_MATCHES_PER_RULE = 32


_WEEKDAY_NEEDLES = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_MONTH_NEEDLES = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
# For each rule of `_RULES`, in order: words one of which its every match contains (lowercase). A text without
# any of them is not scanned by the rule, so most texts pay for a few of the twenty scans only.
_NEEDLES: list[tuple[str, ...]] = [
    ("tomorrow",),
    ("tomorrow", "明"),
    ("大后天",),
    ("后天",),
    ("下下",),
    ("next", "下"),
    ("下下",),
    ("下",),
    _WEEKDAY_NEEDLES,
    ("这", "本"),
    ("周", "星期", "礼拜"),
    ("next",),
    ("本", "这"),
    ("下",),
    ("weekend", "周末"),
    ("weekend", "周末"),
    ("after", "下下"),
    ("next", "下"),
    ("this", "这", "本"),
    ("month", "月"),
    ("next",),
    ("next", "下"),
    ("day", "week", "后", "过"),
    ("hour", "minute"),
    ("-", "/", ".", "年"),
    _MONTH_NEEDLES,
    _MONTH_NEEDLES,
    _MONTH_NEEDLES,
    ("月",),
    _MONTH_NEEDLES,
    _MONTH_NEEDLES,
]
_SAME_DAY_NEEDLES = ("today", "tonight", "this", "今")


def _lowered(text: str) -> str:
    """`text` in lowercase, with the two letters `re.IGNORECASE` also matches to i and s ("ı", "ſ")."""
    return text.lower().replace("ı", "i").replace("ſ", "s")


def candidates(text: str, today: date, budget: CpuBudget | None) -> Iterator[tuple[str, re.Match[str], date]]:
    lowered = _lowered(text)
    for (name, pattern, resolve), needles in zip(_RULES, _NEEDLES, strict=True):
        if not any(needle in lowered for needle in needles):
            continue
        for match in islice(pattern.finditer(text), MAX_MATCHES_PER_RULE):
            check(budget)
            day = resolve(match, today)
            if day is not None:
                yield name, match, day
    if not any(needle in lowered for needle in _SAME_DAY_NEEDLES):
        return
    for match in islice(_SAME_DAY.finditer(text), MAX_MATCHES_PER_RULE):
        check(budget)
        yield "today", match, today

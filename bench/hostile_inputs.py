"""Hostile texts at the 8,000-character content limit: each repeats the trigger of a text rule (a date, a weekday,
a claim shape, a Chinese time word), or is built to make a pattern backtrack (one long word, a run of digits,
spaces after a letter, a run of punctuation or numerals) or to grow under NFKC. Measured by `bench/hostile.py`;
the CPU-bound tests (tests/memory/pipeline/test_hostile_text.py) run each of them."""

from __future__ import annotations

LIMIT = 8_000


def repeated(fragment: str, size: int = LIMIT) -> str:
    """`fragment` repeated to exactly `size` characters."""
    return (fragment * (size // len(fragment) + 1))[:size]


# a word of each rule's word list (`expiry._NEEDLES`, `importance._NEEDLES`) after a long text none of them
# matches: the rules that skip a text without their words all scan this one
_EVERY_WORD = " by like name remember how next tomorrow mon jan 明 下 周 这 月 today weekend hour day in 我 过 后"

FAMILIES: dict[str, str] = {
    "Dec 5": repeated("Dec 5 "),
    "on Fri": repeated("on Fri "),
    "tomorrow": repeated("tomorrow "),
    "next week": repeated("next week "),
    "in 3 days": repeated("in 3 days "),
    "ISO dates": repeated("2026-05-05 "),
    "3 Jan": repeated("3 Jan "),
    "明天": repeated("明天"),
    "下周三": repeated("下周三"),
    "5月5日": repeated("5月5日"),
    "3天后": repeated("3天后"),
    "I live in": repeated("I live in "),
    "我住在": repeated("我住在"),
    "my favourite": repeated("my favourite color is "),
    "I like": repeated("I like "),
    "switched": repeated("we switched "),
    "one long word": "a" * LIMIT,
    "long word ending -ed": repeated("abced"),
    "digits": "1" * LIMIT,
    "short numbers": repeated("12 "),
    "CJK run": repeated("我们今天去北京看天安门"),
    "punctuation": repeated(".,!?"),
    "one punctuation run": repeated("!?", LIMIT - 8) + "tomorrow",
    "CJK numerals": repeated("一"),
    "digits then CJK": "1" * (LIMIT - 1) + "我",
    "mixed": repeated("Dec 5 明天 on Fri 我住在 next week 12 I live in X "),
    "emoji": repeated("😀👍🏽"),
    "zero-width": repeated("a\u200bb\u200d"),
    "spaces after a letter": "a" + " " * (LIMIT - 1),
    "speaker colon": repeated("Ab: "),
    "hyphens": repeated("a-"),
    "tabs": repeated("a\t"),
    "NFKC 18-fold": "\ufdfa" * LIMIT,
    "every rule's word": repeated("a-", LIMIT - len(_EVERY_WORD)) + _EVERY_WORD,
}

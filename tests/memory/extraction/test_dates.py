"""Relative dates made absolute from the day a sentence was said (a Wednesday, 2026-12-02, in these tests)."""

from __future__ import annotations

from datetime import date

import pytest

from memory.extraction.dates import MAX_ANNOTATIONS, annotate

WEDNESDAY = date(2026, 12, 2)


@pytest.mark.parametrize(
    ("sentence", "annotated"),
    [
        ("I have a dentist appointment tomorrow.", "I have a dentist appointment tomorrow (2026-12-03)."),
        ("要明天上午的航班", "要明天（2026-12-03）上午的航班"),
        ("我下周三要去北京出差", "我下周三（2026-12-09）要去北京出差"),
        ("We're going camping next month.", "We're going camping next month (2027-01)."),
        ("The report is due in 3 days.", "The report is due in 3 days (2026-12-05)."),
        ("I'll call you next week.", "I'll call you next week (week of 2026-12-07)."),
        ("This weekend I will paint.", "This weekend (weekend of 2026-12-05) I will paint."),
        ("Today I start my new job.", "Today (2026-12-02) I start my new job."),
    ],
)
def test_days_ahead_get_their_date_written_after_them(sentence: str, annotated: str) -> None:
    assert annotate(sentence, WEDNESDAY) == (annotated, 1)


@pytest.mark.parametrize(
    ("sentence", "annotated"),
    [
        ("I went to a support group yesterday.", "I went to a support group yesterday (2026-12-01)."),
        ("The day before yesterday it rained.", "The day before yesterday (2026-11-30) it rained."),
        ("I ran a charity race last Saturday.", "I ran a charity race last Saturday (2026-11-28)."),
        ("We met up last week!", "We met up last week (week of 2026-11-23)!"),
        ("I moved here last month.", "I moved here last month (2026-11)."),
        ("I started transitioning three years ago.", "I started transitioning three years ago (2023)."),
        ("I adopted her 10 days ago.", "I adopted her 10 days ago (2026-11-22)."),
        ("昨天晚上我做了宫保鸡丁", "昨天（2026-12-01）晚上我做了宫保鸡丁"),
        ("前天下了雨", "前天（2026-11-30）下了雨"),
        ("上周三去了公园", "上周三（2026-11-25）去了公园"),
        ("上个月搬家了", "上个月（2026-11）搬家了"),
        ("我去年毕业了", "我去年（2025）毕业了"),
        ("三天前我见过他", "三天前（2026-11-29）我见过他"),
    ],
)
def test_past_phrases_get_their_date_from_the_extractors_own_resolver(sentence: str, annotated: str) -> None:
    assert annotate(sentence, WEDNESDAY) == (annotated, 1)


def test_in_a_past_sentence_a_weekday_is_the_last_one_and_an_offset_is_a_duration() -> None:
    assert annotate("I saw him on Friday.", WEDNESDAY)[0] == "I saw him on Friday (2026-11-27)."
    assert annotate("See you on Friday.", WEDNESDAY)[0] == "See you on Friday (2026-12-04)."
    assert annotate("I finished it in 3 days.", WEDNESDAY) == ("I finished it in 3 days.", 0)


def test_a_weekday_that_names_the_day_it_was_said_gets_no_other_date() -> None:
    assert annotate("今天是星期五，感觉有些累", WEDNESDAY) == ("今天（2026-12-02）是星期五，感觉有些累", 1)
    assert annotate("Today is Friday!", WEDNESDAY) == ("Today (2026-12-02) is Friday!", 1)


def test_a_range_is_written_from_its_first_to_its_last_day() -> None:
    assert annotate("下周一到周三出差", WEDNESDAY)[0] == "下周一到周三（2026-12-07至2026-12-09）出差"
    assert annotate("Oct 14–18 trip", WEDNESDAY)[0] == "Oct 14–18 (2026-10-14 to 2026-10-18) trip"


def test_a_date_with_its_year_or_an_annotation_already_is_left_alone() -> None:
    assert annotate("We met on 2026-05-05.", WEDNESDAY) == ("We met on 2026-05-05.", 0)
    once, _ = annotate("明天和昨天", WEDNESDAY)
    assert annotate(once, WEDNESDAY) == (once, 0)


def test_words_that_merely_end_in_shang_are_not_last_week_or_month() -> None:
    assert annotate("晚上月亮很圆，马上周末了", WEDNESDAY) == ("晚上月亮很圆，马上周末了", 0)


def test_at_most_a_bounded_number_of_phrases_are_annotated() -> None:
    text, written = annotate("yesterday " * 1000, WEDNESDAY)
    assert written == MAX_ANNOTATIONS
    assert len(text) == len("yesterday " * 1000) + MAX_ANNOTATIONS * len(" (2026-12-01)")

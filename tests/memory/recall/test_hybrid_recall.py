"""Hybrid recall through `MemoryService`: dense and BM25 keyword candidates from two searches, rescored with
the dense cosine (raised to the cosine of the fused rank), in English and Chinese."""

from __future__ import annotations

from typing import Any

import pytest

from memory.clock import ManualClock
from memory.embedders import WordLlamaEmbedder
from memory.recall.scoring import ScoringWeights
from memory.requests import RecallRequest, WriteRequest
from memory.scope import NamespaceScope
from memory.service import MemoryService
from memory.stores.edge import EdgeVectorStore

pytestmark = pytest.mark.anyio

ORDERS = [
    "Order ZX-4470 was delivered",
    "Order ZX-4417 shipped today",
    "Order ZX-4472 is delayed",
    "Order ZX-7441 was returned",
    "Order XZ-1447 is paid",
    "Order AB-1180 was delivered to the Lisbon office",
    "Order QK-2093 is delayed because of a strike",
    "Refund for order PT-7710 was approved",
]
CRATE = "Note for the logistics team: the crate from the Shenzhen supplier, ZX-4471, must be relabelled on arrival"
CHINESE = [
    "我住在上海浦东",
    "我女儿在杭州上学",
    "公司年会定在三亚",
    "我的护照放在书房抽屉里",
    "周末喜欢去西湖散步",
    "我对花生过敏",
    "老板下个月去深圳出差",
]


def services(store: EdgeVectorStore, embedder: WordLlamaEmbedder, clock: ManualClock) -> dict[str, MemoryService]:
    return {
        "dense": MemoryService(store, embedder, clock, hybrid=False),
        "hybrid": MemoryService(store, embedder, clock),
    }


async def load(service: MemoryService, who: NamespaceScope, contents: list[str]) -> None:
    for content in contents:  # the same importance for all, so only retrieval decides
        await service.write(who, WriteRequest(content=content, subject="agent-1", importance=0.5))


async def recalled(service: MemoryService, who: NamespaceScope, query: str, **kwargs: Any) -> list[str]:
    return [h.memory.content for h in await service.recall(who, RecallRequest(query=query, **kwargs))]


async def test_hybrid_recall_finds_an_exact_rare_order_number_that_dense_alone_ranks_low(
    store: EdgeVectorStore, embedder: WordLlamaEmbedder, clock: ManualClock, me: NamespaceScope
) -> None:
    by_mode = services(store, embedder, clock)
    await load(by_mode["hybrid"], me, [*ORDERS, CRATE])

    dense = await recalled(by_mode["dense"], me, "Where is order ZX-4471?", top_k=9)
    hybrid = await recalled(by_mode["hybrid"], me, "Where is order ZX-4471?", top_k=3)

    assert dense.index(CRATE) >= 4  # the look-alike order numbers are nearer by meaning
    assert CRATE in hybrid


async def test_hybrid_recall_finds_a_chinese_keyword(
    store: EdgeVectorStore, embedder: WordLlamaEmbedder, clock: ManualClock, me: NamespaceScope
) -> None:
    by_mode = services(store, embedder, clock)
    await load(by_mode["hybrid"], me, [*CHINESE, *ORDERS])

    assert (await recalled(by_mode["hybrid"], me, "浦东", top_k=1)) == ["我住在上海浦东"]
    assert (await recalled(by_mode["hybrid"], me, "护照在哪里", top_k=1)) == ["我的护照放在书房抽屉里"]
    assert (await recalled(by_mode["hybrid"], me, "谁对花生过敏？", top_k=1)) == ["我对花生过敏"]
    assert (await recalled(by_mode["hybrid"], me, "Has ZX-4417 shipped?", top_k=1)) == ["Order ZX-4417 shipped today"]


async def test_hybrid_score_parts_report_the_cosine_and_bm25_score_beside_a_relevance_topped_at_one(
    store: EdgeVectorStore, embedder: WordLlamaEmbedder, clock: ManualClock, me: NamespaceScope
) -> None:
    service = MemoryService(store, embedder, clock)
    await load(service, me, [*ORDERS, CRATE])

    hits = await service.recall(me, RecallRequest(query="Where is order ZX-4471?", top_k=9, explain=True))

    crate = next(h for h in hits if h.memory.content == CRATE)
    assert hits[0] is crate
    assert crate.scores.similarity == pytest.approx(1.0)  # the best candidate's relevance
    assert crate.scores.keyword is not None and crate.scores.keyword > 0  # the order number matched
    for hit in hits:
        assert hit.scores.dense_similarity is not None and hit.scores.keyword is not None
        assert 0.0 <= hit.scores.similarity <= 1.0
        if hit is not crate:
            assert hit.scores.keyword < crate.scores.keyword


async def test_a_memory_without_any_shared_keyword_is_still_found_by_meaning(
    store: EdgeVectorStore, embedder: WordLlamaEmbedder, clock: ManualClock, me: NamespaceScope
) -> None:
    service = MemoryService(store, embedder, clock)
    await load(service, me, ["The user's favourite programming language is Rust", *ORDERS])

    assert (await recalled(service, me, "Which coding languages does she enjoy?", top_k=1)) == [
        "The user's favourite programming language is Rust"
    ]


async def test_a_chinese_query_whose_cosine_counts_for_nothing_is_answered_from_its_keyword_matches_only(
    store: EdgeVectorStore, embedder: WordLlamaEmbedder, clock: ManualClock, me: NamespaceScope
) -> None:
    keywords_first = MemoryService(store, embedder, clock, weights=ScoringWeights(cjk_dense_share=0.0))
    by_meaning_too = MemoryService(store, embedder, clock, weights=ScoringWeights(cjk_dense_share=0.3))
    await load(keywords_first, me, [*CHINESE, *ORDERS])

    assert (await recalled(keywords_first, me, "护照在哪里", top_k=10)) == ["我的护照放在书房抽屉里"]
    answered = await recalled(by_meaning_too, me, "护照在哪里", top_k=10)
    assert answered[0] == "我的护照放在书房抽屉里" and len(answered) == 10  # the nearest by meaning fill the rest

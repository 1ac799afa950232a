"""What a memory's keyword vector is built from: its text and day for every memory, and for a semantic memory
consolidation wrote only the terms of its statement that its sources contain (never the statement's frame, "often
talks about ... (3 mentions, Jan-Mar 2026)", whose words would weigh in the namespace's BM25 statistics)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memory.clock import ManualClock
from memory.consolidation import consolidate
from memory.embedders.sparse import Bm25Encoder
from memory.models import CONSOLIDATED, Memory, Source
from memory.requests import RecallRequest
from memory.scope import NamespaceScope
from memory.service import MemoryService
from memory.text.keyword_document import INDEX_TERMS, keyword_vector
from memory.text.words import tokenize
from tests.memory.conftest import START, make_memory
from tests.memory.consolidation.test_consolidation import (
    CHINESE,
    ENGLISH,
    consolidated_a_day_ago,
    interleaved,
    semantic_memories,
    write_all,
)

pytestmark = pytest.mark.anyio
ENCODER = Bm25Encoder()


async def source_terms(service: MemoryService, who: NamespaceScope, memory: Memory) -> set[str]:
    return {t for i in memory.metadata["sources"] for t in tokenize((await service.get(who, i)).content)}


@pytest.mark.parametrize(
    ("language", "kept", "frame"),
    [
        (ENGLISH, {"short", "answer", "prefer"}, {"concis", "briefly", "mention", "jan", "2026"}),
        (CHINESE, {"简短", "回答"}, {"铺垫", "提及", "简明"}),
    ],
    ids=["english", "chinese"],
)
async def test_a_consolidated_memory_is_indexed_by_the_terms_its_sources_contain_not_by_its_frame(
    service: MemoryService,
    admin: NamespaceScope,
    clock: ManualClock,
    language: dict[str, tuple[str, ...]],
    kept: set[str],
    frame: set[str],
) -> None:
    await write_all(service, admin, clock, interleaved(language))
    await consolidate(service, admin, "user:1")
    semantic = await semantic_memories(service, admin)
    assert len(semantic) == 3
    for memory in semantic:
        terms = memory.metadata[INDEX_TERMS]
        assert terms and set(terms) <= await source_terms(service, admin, memory)
    [style] = [m for m in semantic if m.metadata["sources"] and ("short" in m.content or "简短" in m.content)]
    assert kept <= set(style.metadata[INDEX_TERMS])
    assert not frame & set(style.metadata[INDEX_TERMS]) and frame <= set(tokenize(style.content))


async def test_recall_finds_a_consolidated_memory_by_its_sources_words_and_not_by_its_frame_words(
    service: MemoryService, admin: NamespaceScope, clock: ManualClock
) -> None:
    await consolidated_a_day_ago(service, admin, clock)

    async def keyword_score(query: str) -> float | None:
        hits = await service.recall(admin, RecallRequest(query=query, namespaces=["user:1"], top_k=20))
        [hit] = [h for h in hits if h.memory.source.tool == CONSOLIDATED and "short" in h.memory.content]
        return hit.scores.keyword

    assert (await keyword_score("short answers without preamble") or 0.0) > 0.0
    assert not await keyword_score("concise mentions briefly")  # in its statement, in none of its sources


def test_index_terms_count_only_for_a_memory_consolidation_wrote() -> None:
    text = "The user often talks about yoga (3 mentions, Jan 2026)"
    terms = {INDEX_TERMS: ["user", "yoga"]}
    consolidated = make_memory(text, tenant="t", metadata=terms, source=Source(subject="c", tool=CONSOLIDATED))
    forged = make_memory(text, tenant="t", metadata=terms, source=Source(subject="agent", tool="write_memory"))
    plain = make_memory(text, tenant="t", source=Source(subject="agent", tool="write_memory"))

    assert keyword_vector(ENCODER, consolidated, text, None, 0.5) == ENCODER.terms(["user", "yoga"])
    assert keyword_vector(ENCODER, forged, text, None, 0.5) == keyword_vector(ENCODER, plain, text, None, 0.5)
    later = make_memory(
        text, tenant="t", at=START + timedelta(days=400), metadata=terms, source=Source(subject="c", tool=CONSOLIDATED)
    )
    assert keyword_vector(ENCODER, later, text, None, 0.5) == keyword_vector(ENCODER, consolidated, text, None, 0.5)

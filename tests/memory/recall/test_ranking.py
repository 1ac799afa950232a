"""Recall ranking: the hybrid relevance (cosine and BM25 mixed after scaling), the cues (the speaker a query
names, a time for a "when" query, a turn that only asks), the lift by conversation context (the turn after a
match, the turn before it, the match's session), and per-tenant weights."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memory.clock import ManualClock
from memory.embedders import WordLlamaEmbedder
from memory.models import EXTRACTED, Memory, RecallHit, ScoreParts, Source
from memory.pipeline import for_embedder
from memory.ports import RecallFilter, ScoredMemory
from memory.recall.cues import query_cues
from memory.recall.ranking import (
    MIN_COSINE_SPREAD,
    QUESTION_CONTEXT_FACTOR,
    conversation_relevance,
    cue_relevance,
    hybrid_relevance,
    select_hits,
)
from memory.recall.scoring import ScoringWeights
from memory.requests import RecallRequest, WriteRequest
from memory.scope import NamespaceScope
from memory.service import MemoryService
from memory.stores.edge import EdgeVectorStore
from tests.memory.conftest import START, make_memory, scope

pytestmark = pytest.mark.anyio


def memory(content: str, *, session: str | None = None, follows: Memory | None = None, at: int = 0) -> Memory:
    return make_memory(
        content,
        tenant="t",
        at=START + timedelta(seconds=at),
        session_id=session,
        follows=follows.id if follows else None,
    )


def test_hybrid_relevance_scales_the_cosines_over_the_candidates_and_bm25_by_the_best_score() -> None:
    a, b, c = memory("a"), memory("b"), memory("c")
    candidates = [ScoredMemory(a, 0.9, 0.0), ScoredMemory(b, 0.5, 4.0), ScoredMemory(c, 0.7, 2.0)]

    assert hybrid_relevance(candidates, 0.5) == pytest.approx([0.5, 0.5, 0.5 * 0.5 + 0.5 * 0.5])
    assert hybrid_relevance(candidates, 1.0) == pytest.approx([1.0, 0.0, 0.5])
    assert hybrid_relevance(candidates, 0.0) == pytest.approx([0.0, 1.0, 0.5])


def test_a_memory_in_the_other_script_is_weighed_by_its_cosine_alone_when_a_cross_script_share_is_set() -> None:
    chinese, english, other = memory("我女儿在学小提琴"), memory("Lily plays the violin"), memory("We own a shiba")
    candidates = [ScoredMemory(chinese, 0.9, 0.0), ScoredMemory(english, 0.5, 4.0), ScoredMemory(other, 0.7, 2.0)]

    usual = hybrid_relevance(candidates, 0.5, query_cjk=False)
    crossed = hybrid_relevance(candidates, 0.5, query_cjk=False, cross_script_share=0.7)
    asked_in_chinese = hybrid_relevance(candidates, 0.5, query_cjk=True, cross_script_share=0.7)

    assert usual == pytest.approx([0.5, 0.5, 0.5])  # the Chinese memory loses its keyword half to BM25's blindness
    assert crossed == pytest.approx([0.7, 0.5, 0.5])  # ...unless the cosine stands in for it
    assert asked_in_chinese == pytest.approx([0.5, 0.0, 0.7 * 0.5])  # now the English ones are across


def test_near_equal_cosines_are_not_stretched_over_the_whole_range() -> None:
    a, b = memory("a"), memory("b")

    relevance = hybrid_relevance([ScoredMemory(a, 0.80, 0.0), ScoredMemory(b, 0.79, 0.0)], 1.0)

    assert relevance == pytest.approx([0.01 / MIN_COSINE_SPREAD, 0.0])


def test_without_keyword_matches_the_order_is_the_cosines_order() -> None:
    items = [ScoredMemory(memory(str(i)), cos, 0.0) for i, cos in enumerate((0.3, 0.9, 0.6))]

    relevance = hybrid_relevance(items, 0.5)

    assert sorted(range(3), key=lambda i: -relevance[i]) == [1, 2, 0]


def test_a_turn_after_a_match_is_lifted_by_the_context_weight_and_the_turn_before_by_a_third_of_it() -> None:
    question = memory("q", session="s", at=0)
    answer = memory("a", session="s", follows=question, at=1)
    stranger = memory("x", at=2)

    lifted = conversation_relevance([question, answer, stranger], [1.0, 0.2, 0.5], context=0.3, session=0.0)

    raw = [1.0 + 0.1 * 0.2, 0.2 + 0.3 * 1.0, 0.5]
    assert lifted == pytest.approx([r / max(raw) for r in raw])


def test_a_matching_question_lifts_its_answer_twice_as_much_as_a_matching_statement_lifts_the_turn_after_it() -> None:
    question = memory("Caroline: Which team did you sign with?", session="s", at=0)
    answer = memory("John: The Minnesota Wolves!", session="s", follows=question, at=1)
    statement = memory("Tim: I signed with a new team.", session="t", at=2)
    reply = memory("John: Congrats, man", session="t", follows=statement, at=3)

    lifted = conversation_relevance([question, answer, statement, reply], [1.0, 0.0, 1.0, 0.0], context=0.3, session=0)

    assert lifted[1] == pytest.approx(QUESTION_CONTEXT_FACTOR * lifted[3])
    assert lifted[3] == pytest.approx(0.3 / (1 + 0.1 * 0.0))


def test_a_turn_that_ends_in_a_question_is_lowered_by_the_question_share_after_the_lifts() -> None:
    asking = memory("Caroline: Do you have any pets?")
    telling = memory("Melanie: We have a cat called Bailey")
    mixed = memory("Melanie: Where were you? We looked everywhere.")  # asks, but ends telling

    lifted = conversation_relevance([asking, telling, mixed], [1.0, 1.0, 1.0], context=0.0, session=0, question=0.2)

    assert lifted == pytest.approx([0.8, 1.0, 1.0])


def test_a_memory_spoken_by_the_person_the_query_names_is_lifted_by_the_speaker_weight() -> None:
    hers = memory("Melanie: We got another cat")
    his = memory("Caroline: My cat is called Oscar")
    plain = memory("Cats need a vet visit every year")

    lifted = cue_relevance(
        query_cues("What pets does Melanie have?"), [hers, his, plain], [0.5, 0.5, 0.5], speaker=0.4, when=0.2
    )

    assert lifted == pytest.approx([0.7, 0.5, 0.5])


def test_a_memory_whose_speaker_is_given_in_metadata_is_lifted_for_a_query_naming_that_speaker() -> None:
    hers = make_memory("We got another cat", tenant="t", metadata={"speaker": "Melanie"})
    his = make_memory("My cat is called Oscar", tenant="t", metadata={"speaker": "Caroline"})
    nobodys = make_memory("Cats need a vet visit every year", tenant="t")

    lifted = cue_relevance(
        query_cues("What pets does Melanie have?"), [hers, his, nobodys], [0.5, 0.5, 0.5], speaker=0.4, when=0.2
    )

    assert lifted == pytest.approx([0.7, 0.5, 0.5])


def test_a_memory_that_says_when_is_lifted_only_for_a_query_that_asks_when() -> None:
    dated = memory("Caroline: I went to the support group yesterday")
    undated = memory("Caroline: The support group was great")
    memories, relevance = [dated, undated], [0.5, 0.5]

    asks_when = cue_relevance(
        query_cues("When did Caroline go to the group?"), memories, relevance, speaker=0.0, when=0.2
    )
    asks_what = cue_relevance(query_cues("What did Caroline think?"), memories, relevance, speaker=0.0, when=0.2)

    assert asks_when == pytest.approx([0.6, 0.5])
    assert asks_what == pytest.approx([0.5, 0.5])


def test_the_cues_that_moved_each_memory_are_noted_for_explain() -> None:
    question = memory("Caroline: Which team did Melanie sign with?", session="s", at=0)
    answer = memory("Melanie: The Wolves, last week", session="s", follows=question, at=1)
    other = memory("Jon: I like the Wolves", at=2)
    memories = [question, answer, other]
    notes: list[list[str]] = [[], [], []]

    relevance = cue_relevance(
        query_cues("When did Melanie sign?"), memories, [1.0, 0.5, 0.5], speaker=0.4, when=0.2, notes=notes
    )
    conversation_relevance(memories, relevance, context=0.3, session=0.0, question=0.15, notes=notes)

    assert notes == [["ends_asking"], ["speaker", "when", "answers_question"], []]


def test_a_sessions_best_match_lifts_its_other_memories_and_a_memory_without_session_lifts_only_itself() -> None:
    best = memory("best", session="s", at=0)
    same_session = memory("other", session="s", at=5)
    loner = memory("loner", at=6)

    lifted = conversation_relevance([best, same_session, loner], [1.0, 0.2, 0.2], context=0.0, session=0.5)

    raw = [1.0 + 0.5, 0.2 + 0.5, 0.2 + 0.1]
    assert lifted == pytest.approx([r / max(raw) for r in raw])
    assert max(lifted) == pytest.approx(1.0)


def test_a_link_to_a_memory_outside_the_candidates_lifts_nothing() -> None:
    gone = memory("not a candidate", session="s")
    answer = memory("a", session="s", follows=gone, at=1)

    assert conversation_relevance([answer], [0.4], context=0.3, session=0.0) == pytest.approx([1.0])


def test_when_no_candidate_stands_out_all_are_equally_relevant() -> None:
    a, b = memory("a"), memory("b")

    assert conversation_relevance([a, b], [0.0, 0.0], context=0.3, session=0.3) == [1.0, 1.0]


async def test_a_write_in_a_session_follows_the_previous_memory_of_that_session(
    store: EdgeVectorStore, embedder: WordLlamaEmbedder, clock: ManualClock, me: NamespaceScope
) -> None:
    service = MemoryService(store, embedder, clock)
    first = await service.write(
        me, WriteRequest(subject="agent-1", content="Did you finish the quarterly report?", session_id="chat")
    )
    clock.advance(1)
    elsewhere = await service.write(
        me, WriteRequest(subject="agent-1", content="Dentist appointment is on Friday", session_id="other")
    )
    clock.advance(1)
    second = await service.write(
        me, WriteRequest(subject="agent-1", content="Yes, I sent it to Maria yesterday", session_id="chat")
    )
    alone = await service.write(me, WriteRequest(subject="agent-1", content="The office wifi password changed"))

    assert first.memory.follows is None
    assert second.memory.follows == first.memory.id
    assert elsewhere.memory.follows is None and alone.memory.follows is None


QUESTION = "Caroline: Did you finish the quarterly budget report for the board?"
ANSWER = "Melanie: Yes, I sent it to Maria yesterday afternoon"
FILLERS = ("Maria loves hiking in the Alps", "We sent the invitations for the party", "Melanie bought a bike")


async def conversation_then_fillers(service: MemoryService, me: NamespaceScope, clock: ManualClock) -> None:
    for turn in (QUESTION, ANSWER):
        await service.write(me, WriteRequest(subject="agent-1", content=turn, session_id="chat-1", importance=0.5))
        clock.advance(1)
    for filler in FILLERS:
        await service.write(me, WriteRequest(subject="agent-1", content=filler, importance=0.5))
        clock.advance(1)


async def top_two(service: MemoryService, me: NamespaceScope) -> list[str]:
    hits = await service.recall(me, RecallRequest(query="Who received the quarterly budget report?", top_k=2))
    return [h.memory.content for h in hits]


async def test_the_answer_to_a_matching_question_is_lifted_into_the_results_at_recall(
    store: EdgeVectorStore, embedder: WordLlamaEmbedder, clock: ManualClock, me: NamespaceScope
) -> None:
    # only the recall-time lift acts: each turn is stored with its own vectors
    own_vectors = for_embedder(embedder.model_id, turn_context_weight=0.0, turn_context_keyword_weight=0.0)
    service = MemoryService(store, embedder, clock, pipeline=own_vectors)
    await conversation_then_fillers(service, me, clock)
    no_lift = ScoringWeights(context=0.0, session=0.0)

    without = await top_two(MemoryService(store, embedder, clock, weights=no_lift, pipeline=own_vectors), me)

    assert await top_two(service, me) == [QUESTION, ANSWER]
    assert ANSWER not in without  # by its own words the answer does not make it


async def test_a_dialogue_turn_is_stored_in_the_context_of_the_turn_before_it(
    store: EdgeVectorStore, embedder: WordLlamaEmbedder, clock: ManualClock, me: NamespaceScope
) -> None:
    service = MemoryService(store, embedder, clock)
    await conversation_then_fillers(service, me, clock)
    no_lift = ScoringWeights(context=0.0, session=0.0)

    found = await top_two(MemoryService(store, embedder, clock, weights=no_lift), me)

    assert ANSWER in found  # its stored vector carries the question it answers
    [plain] = await embedder.embed_documents([ANSWER])
    stored = await store.search(me, ("user:1",), plain, 8, RecallFilter(now=clock.now()))
    answer = next(h for h in stored if h.memory.content == ANSWER)
    filler = next(h for h in stored if h.memory.content == FILLERS[0])
    assert answer.similarity < 0.99  # not its own vector...
    assert filler.similarity < answer.similarity  # ...but still closest to what it says


async def test_each_tenant_is_ranked_with_its_own_weights(
    store: EdgeVectorStore, embedder: WordLlamaEmbedder, clock: ManualClock, acme: str, globex: str
) -> None:
    by_recency = ScoringWeights(similarity=0.01, recency=1.0, importance=0.0, access_frequency=0.0)
    service = MemoryService(store, embedder, clock, tenant_weights={globex: by_recency})
    for tenant in (acme, globex):
        who = scope(tenant, write=["user:1"])
        await service.write(
            who, WriteRequest(subject="agent-1", content="The user drinks green tea every morning", importance=0.5)
        )
    clock.advance(3 * 86_400)
    for tenant in (acme, globex):
        await service.write(
            scope(tenant, write=["user:1"]),
            WriteRequest(subject="agent-1", content="Parking is on level 2", importance=0.5),
        )

    def first(hits: list[RecallHit]) -> str:
        return hits[0].memory.content

    query = RecallRequest(query="What does the user drink in the morning?", top_k=2)
    assert first(await service.recall(scope(acme, write=["user:1"]), query)).startswith("The user drinks")
    assert first(await service.recall(scope(globex, write=["user:1"]), query)) == "Parking is on level 2"


async def test_through_recall_the_named_speakers_memory_gains_the_speaker_lift_and_a_memory_about_them_does_not(
    store: EdgeVectorStore, embedder: WordLlamaEmbedder, clock: ManualClock, me: NamespaceScope
) -> None:
    about_her = "Caroline: Melanie told me the camping trip was amazing, the kids loved the camping trip"
    by_her = "Melanie: We went camping and saw the meteor shower"
    service = MemoryService(store, embedder, clock)
    for turn in (about_her, by_her):
        await service.write(me, WriteRequest(subject="agent-1", content=turn, importance=0.5))
        clock.advance(1)
    query = RecallRequest(query="What did Melanie say about the camping trip?", top_k=2)

    plain = await MemoryService(store, embedder, clock, weights=ScoringWeights(speaker=0.0)).recall(me, query)
    cued = await MemoryService(store, embedder, clock, weights=ScoringWeights(speaker=0.4)).recall(me, query)

    assert [h.memory.content for h in plain] == [about_her, by_her]
    assert [h.scores.similarity for h in cued] == pytest.approx([1.0, 1.4 * plain[1].scores.similarity])
    assert [h.scores.cues for h in cued] == [(), ("speaker",)] and plain[1].scores.cues == ()


@pytest.mark.parametrize(
    ("query", "factor"),
    [
        ("Where is Ana flying to now?", 0.5),
        ("Is Ana still going to Berlin?", 0.5),
        ("安娜现在在哪里？", 0.5),
        ("When did Ana fly to Berlin?", 1.0),
        ("What did Ana plan for the conference?", 1.0),
        ("安娜什么时候去的柏林？", 1.0),
    ],
)
def test_a_passed_plan_is_marked_always_but_lowered_only_for_a_question_about_the_present(
    query: str, factor: float
) -> None:
    plan = make_memory(
        "Ana flies to Berlin tomorrow", tenant="acme", metadata={"_pipeline": {"expiry": {"until": START.isoformat()}}}
    )
    notes: list[list[str]] = [[]]

    lifted = cue_relevance(
        query_cues(query), [plan], [1.0], speaker=0, when=0, notes=notes, now=START + timedelta(days=1), passed_plan=0.5
    )

    assert lifted == [factor]
    assert notes == [["passed_plan"]]


def ranked(*memories: Memory) -> list[RecallHit]:
    return [
        RecallHit(m, ScoreParts(similarity=1.0, recency=0.0, importance=0.0, access_frequency=0.0, score=1.0 - i / 10))
        for i, m in enumerate(memories)
    ]


def extracted(content: str, *, session: str | None = None, at: int = 0) -> Memory:
    return make_memory(
        content,
        tenant="t",
        at=START + timedelta(seconds=at),
        session_id=session,
        source=Source(subject="a", tool=EXTRACTED),
    )


def test_a_fact_extracted_from_a_turn_and_that_turn_take_one_place_whichever_ranks_first() -> None:
    turn = memory("Melanie: I just got some new shoes for running!", session="s1", at=4)
    fact = extracted("Melanie just got some new shoes for running!", session="s1", at=4)
    other = memory("Melanie: We went camping at the beach last week.", session="s1", at=9)

    assert [h.memory.id for h in select_hits(ranked(turn, fact, other), 2, None)] == [turn.id, other.id]
    assert [h.memory.id for h in select_hits(ranked(fact, turn, other), 2, None)] == [fact.id, other.id]


def test_a_fact_restating_a_turn_with_its_speaker_and_dates_resolved_still_takes_one_place() -> None:
    turn = memory("帮我查一下北京到上海的航班，要明天上午的", session="s1", at=4)
    fact = extracted("用户请助手查北京到上海的航班，要明天（2026-12-03）上午的", session="s1", at=4)

    assert [h.memory.id for h in select_hits(ranked(turn, fact), 5, None)] == [turn.id]
    assert [h.memory.id for h in select_hits(ranked(fact, turn), 5, None)] == [fact.id]


def test_a_fact_from_another_turn_never_leaves_out_a_turn_whose_words_it_shares() -> None:
    # LoCoMo conv-26: the fact came from D2:3; the turn it shares "Caroline" and "research" with is D2:8, the
    # evidence for "What did Caroline research?"
    fact = extracted("Caroline is off to go do some research.", session="s2", at=3)
    turn = memory("Caroline: Researching adoption agencies, it's been a dream to have a family.", session="s2", at=8)
    elsewhere = memory("Caroline: Researching adoption agencies, it's been a dream to have a family.", at=3)

    assert [h.memory.id for h in select_hits(ranked(fact, turn), 5, None)] == [fact.id, turn.id]
    assert [h.memory.id for h in select_hits(ranked(fact, elsewhere), 5, None)] == [fact.id, elsewhere.id]


def test_a_fact_whose_words_a_better_ranked_memory_holds_is_left_out_whatever_turn_it_came_from() -> None:
    turn = memory("Caroline: Researching adoption agencies, it's been a dream to have a family.", session="s2", at=8)
    fact = extracted("Caroline is off to go do some research.", session="s2", at=3)

    assert [h.memory.id for h in select_hits(ranked(turn, fact), 5, None)] == [turn.id]


def test_similar_memories_that_are_not_extracted_facts_are_all_kept() -> None:
    first = memory("Melanie: I just got some new shoes for running!")
    second = memory("Melanie just got some new shoes for running!")
    fact = extracted("Caroline adopted a dog named Pepper last spring.")

    chosen = select_hits(ranked(first, second, fact), 5, None)

    assert [h.memory.id for h in chosen] == [first.id, second.id, fact.id]


def fact_of(content: str, *events: str) -> Memory:
    fact = extracted(content)
    fact.metadata = {"source_event_ids": list(events)}
    return fact


def test_a_second_fact_of_the_same_turn_is_ranked_by_half_its_score_and_shows_that_score() -> None:
    shoes = fact_of("Melanie got new running shoes.", "D7:18")
    color = fact_of("Melanie's new shoes are purple.", "D7:18")  # the same turn, and ranked second (0.9)
    turn = memory("Caroline: For walking or running?")  # 0.8
    other = fact_of("Melanie signed up for a pottery class.", "D5:4")  # 0.7
    weak = memory("Caroline: See you soon!")  # 0.4 after those four: below the lowered 0.45

    chosen = select_hits(ranked(shoes, color, turn, other, *[memory(f"filler {n}") for n in range(2)], weak), 8, None)
    ids = [h.memory.id for h in chosen]

    assert ids[:3] == [shoes.id, turn.id, other.id]
    assert ids.index(color.id) < ids.index(weak.id)
    lowered = chosen[ids.index(color.id)].scores
    assert lowered.score == pytest.approx(0.45)
    assert "same_turn" in lowered.cues
    assert [h.scores.score for h in chosen] == sorted((h.scores.score for h in chosen), reverse=True)
    top_three = select_hits(ranked(shoes, color, turn, other), 3, None)
    assert [h.memory.id for h in top_three] == [shoes.id, turn.id, other.id]

"""The write pipeline through `MemoryService` (real store, real embedder, `ManualClock`): chit-chat skipped,
time-bound facts expiring, importance by rules, near-duplicates updated in place and contradicted facts
superseded, in English and Chinese; what is indexed beside the text (a speaker given in metadata, the day)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import numpy as np
import pytest

from memory.clock import ManualClock
from memory.embedders import WordLlamaEmbedder
from memory.errors import InvalidArgument
from memory.lifecycle.hidden import plan_until
from memory.models import Memory, WriteOutcome, WriteStatus
from memory.pipeline import PIPELINE_KEY, PipelineSettings
from memory.pipeline.turns import in_context
from memory.ports import RecallFilter
from memory.requests import ListRequest, RecallRequest, WriteRequest
from memory.scope import NamespaceScope
from memory.service import MemoryService
from memory.stores.edge import EdgeVectorStore
from tests.memory.conftest import START, everything, scope

pytestmark = pytest.mark.anyio


async def write(service: MemoryService, who: NamespaceScope, content: str, **kwargs: Any) -> WriteOutcome:
    return await service.write(who, WriteRequest(content=content, subject="agent-1", **kwargs))


async def recalled(service: MemoryService, who: NamespaceScope, query: str, **kwargs: Any) -> list[str]:
    return [h.memory.content for h in await service.recall(who, RecallRequest(query=query, **kwargs))]


async def listed(service: MemoryService, who: NamespaceScope) -> list[Memory]:
    return (await service.list(who, ListRequest(include_deleted=True))).memories


# -- 1. density ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("content", ["ok", "Thanks so much!", "lol", "👍", "好的", "明白了", "谢谢"])
async def test_chit_chat_is_skipped_with_a_low_information_reason_and_nothing_stored(
    service: MemoryService, store: EdgeVectorStore, me: NamespaceScope, acme: str, content: str
) -> None:
    outcome = await write(service, me, content)

    assert outcome.status is WriteStatus.SKIPPED
    assert outcome.reason is not None and outcome.reason.startswith("low_information: ")
    assert (outcome.stored, outcome.id) == (False, None)
    assert await everything(store, acme) == []


async def test_force_stores_chit_chat_anyway(service: MemoryService, me: NamespaceScope) -> None:
    outcome = await write(service, me, "ok", force=True)

    assert outcome.status is WriteStatus.CREATED
    assert (await service.get(me, outcome.memory.id)).content == "ok"


async def test_the_density_filter_can_be_switched_off(store: EdgeVectorStore, embedder: WordLlamaEmbedder) -> None:
    service = MemoryService(store, embedder, ManualClock(START), pipeline=PipelineSettings(density_filter=False))
    who = scope(f"acme-{START.timestamp():.0f}-off", write=["user:1"])

    assert (await write(service, who, "thanks")).status is WriteStatus.CREATED


# -- 2. time-bound facts ---------------------------------------------------------------------------------------


async def hits(service: MemoryService, who: NamespaceScope, query: str) -> list[tuple[str, bool]]:
    found = await service.recall(who, RecallRequest(query=query))
    return [(h.memory.content, "passed_plan" in h.scores.cues) for h in found]


async def test_a_plan_lasts_to_the_end_of_the_day_it_names_then_is_recalled_as_history_below_the_present(
    service: MemoryService, clock: ManualClock, me: NamespaceScope
) -> None:
    # START is Thursday 2026-01-01 12:00 UTC: "tomorrow" is Friday, so the plan lasts until Saturday 00:00
    outcome = await write(service, me, "I have a dentist appointment tomorrow at 9")
    assert outcome.memory.expires_at is None  # never hidden: a plan's day is only a note
    assert outcome.memory.metadata[PIPELINE_KEY]["expiry"] == {
        "rule": "tomorrow",
        "phrase": "tomorrow",
        "day": "2026-01-02",
        "until": "2026-01-03T00:00:00+00:00",
    }
    assert outcome.reason is not None and "time_bound" in outcome.reason
    clock.advance(timedelta(hours=35, minutes=59).total_seconds())
    before = await hits(service, me, "dentist appointment")

    clock.advance(60)
    await write(service, me, "I have a dentist appointment next Friday at 10")
    after = await hits(service, me, "dentist appointment")

    assert before == [("I have a dentist appointment tomorrow at 9", False)]
    assert after == [
        ("I have a dentist appointment next Friday at 10", False),  # the plan to come first
        ("I have a dentist appointment tomorrow at 9", True),  # the passed one kept as history, marked
    ]


async def test_the_expiry_is_relative_to_occurred_at_in_its_time_zone(
    service: MemoryService, me: NamespaceScope
) -> None:
    shanghai = datetime(2026, 1, 1, 23, 0, tzinfo=UTC).astimezone(
        datetime.fromisoformat("2026-01-02T07:00+08:00").tzinfo
    )

    outcome = await write(service, me, "明天下午三点开会", occurred_at=shanghai)  # Friday 2 January, 07:00 in Shanghai

    assert plan_until(outcome.memory) == datetime.fromisoformat("2026-01-04T00:00+08:00")


async def test_an_explicit_ttl_wins_over_the_text(service: MemoryService, me: NamespaceScope) -> None:
    outcome = await write(service, me, "I have a meeting next Wednesday", ttl_seconds=600)

    assert outcome.memory.expires_at == START + timedelta(seconds=600)
    assert outcome.memory.metadata[PIPELINE_KEY]["expiry"] == {"rule": "ttl_seconds"}


# -- 3. importance ---------------------------------------------------------------------------------------------


async def test_importance_comes_from_rules_when_not_given_and_the_rules_are_recorded(
    service: MemoryService, me: NamespaceScope
) -> None:
    remembered = await write(service, me, "Remember that the user is allergic to peanuts")
    chatter = await write(service, me, "haha how are you doing?")
    given = await write(service, me, "I prefer aisle seats", importance=0.3)

    assert remembered.memory.importance >= 0.9
    assert "explicit" in remembered.memory.metadata[PIPELINE_KEY]["importance"]["rules"]
    assert chatter.memory.importance == 0.2
    assert given.memory.importance == 0.3
    assert "importance" not in given.memory.metadata.get(PIPELINE_KEY, {})


# -- 4. conflicts ----------------------------------------------------------------------------------------------


async def test_a_near_duplicate_updates_the_existing_memory_in_place(
    service: MemoryService, store: EdgeVectorStore, embedder: WordLlamaEmbedder, clock: ManualClock, me: NamespaceScope
) -> None:
    first = await write(service, me, "The user prefers tea over coffee", tags=["drinks"])
    clock.advance(60)

    again = await write(service, me, "User prefers tea to coffee", tags=["prefs"])

    assert again.status is WriteStatus.UPDATED
    assert again.memory.id == first.memory.id
    assert again.reason is not None and again.reason.startswith(f"near_duplicate of {first.memory.id}")
    stored = await service.get(me, first.memory.id)
    assert stored.content == "User prefers tea to coffee"
    assert (stored.created_at, stored.updated_at) == (START, START + timedelta(seconds=60))
    assert stored.tags == ["drinks", "prefs"]
    assert stored.metadata[PIPELINE_KEY]["conflict"]["previous_content"] == "The user prefers tea over coffee"
    assert len(await everything(store, me.tenant)) == 1
    # the vector was replaced too: the stored vector is the new content's
    vector = await embedder.embed_query("User prefers tea to coffee")
    [hit] = await store.search(me, ("user:1",), vector, 1, RecallFilter(now=START + timedelta(minutes=2)))
    assert hit.similarity == pytest.approx(1.0, abs=1e-4)
    assert float(np.dot(vector, await embedder.embed_query("The user prefers tea over coffee"))) < 0.99


async def test_a_contradicting_fact_supersedes_the_old_one_which_recall_hides_unless_asked(
    service: MemoryService, clock: ManualClock, me: NamespaceScope
) -> None:
    old = await write(service, me, "My favourite colour is blue")
    clock.advance(3600)

    new = await write(service, me, "My favourite colour is green now")

    assert new.status is WriteStatus.CREATED
    assert new.superseded == [old.memory.id]
    assert new.memory.supersedes == [old.memory.id]
    assert new.reason is not None and "fav:color changed from 'blue' to 'green'" in new.reason
    kept = await service.get(me, old.memory.id)
    assert kept.superseded_by == new.memory.id
    assert kept.metadata[PIPELINE_KEY]["superseded"]["by"] == new.memory.id
    assert await recalled(service, me, "what is the user's favourite colour?") == ["My favourite colour is green now"]
    assert set(await recalled(service, me, "favourite colour", include_superseded=True)) == {
        "My favourite colour is blue",
        "My favourite colour is green now",
    }
    assert [m.id for m in (await service.list(me, ListRequest())).memories] == [new.memory.id]


@pytest.mark.parametrize(
    ("old", "new", "query"),
    [
        ("We use MySQL for the orders database", "We migrated the orders database to PostgreSQL", "orders database"),
        ("I live in Berlin", "I moved to Paris", "where does the user live"),
        ("我住在北京", "我搬到上海了", "住在哪里"),
        ("我喜欢喝咖啡", "我不喜欢喝咖啡了", "喝咖啡"),
    ],
)
async def test_supersession_in_english_and_chinese_keeps_only_the_current_fact_in_recall(
    service: MemoryService, clock: ManualClock, me: NamespaceScope, old: str, new: str, query: str
) -> None:
    first = await write(service, me, old)
    clock.advance(60)

    second = await write(service, me, new)

    assert second.superseded == [first.memory.id]
    assert await recalled(service, me, query) == [new]


async def test_facts_that_can_both_hold_are_both_kept(service: MemoryService, me: NamespaceScope) -> None:
    await write(service, me, "The user likes tea")
    outcome = await write(service, me, "The user likes jazz")

    assert (outcome.status, outcome.superseded) == (WriteStatus.CREATED, [])
    assert len(await recalled(service, me, "what does the user like")) == 2


async def test_a_forced_write_is_never_merged_into_a_near_duplicate(service: MemoryService, me: NamespaceScope) -> None:
    first = await write(service, me, "The user prefers tea over coffee")

    forced = await write(service, me, "User prefers tea to coffee", force=True)

    assert forced.status is WriteStatus.CREATED
    assert forced.memory.id != first.memory.id


async def test_a_new_value_shared_to_the_same_namespace_supersedes_the_old_copy_there(
    service: MemoryService, acme: str
) -> None:
    both = scope(acme, write=["user:1", "team:1"])
    await write(service, both, "I live in Berlin", share_to=["team:1"])

    moved = await write(service, both, "I moved to Paris", share_to=["team:1"])

    team = scope(acme, read=["team:1"])
    [new_copy] = [m for m in await listed(service, team) if m.content == "I moved to Paris"]
    [old_copy] = [m for m in await listed(service, team) if m.content == "I live in Berlin"]
    assert old_copy.superseded_by == new_copy.id  # a link the team reader can follow, never the private id
    assert new_copy.supersedes == [old_copy.id]
    assert moved.memory.id not in {old_copy.superseded_by, *new_copy.supersedes}
    assert await recalled(service, team, "where does the user live") == ["I moved to Paris"]
    assert await recalled(service, both, "where does the user live") == ["I moved to Paris"]


async def test_a_new_value_kept_private_leaves_the_shared_copy_as_the_team_was_told(
    service: MemoryService, acme: str
) -> None:
    both = scope(acme, write=["user:1", "team:1"])
    await write(service, both, "I live in Berlin", share_to=["team:1"])

    await write(service, both, "I moved to Paris")

    team = scope(acme, read=["team:1"])
    assert await recalled(service, team, "where does the user live") == ["I live in Berlin"]
    assert await recalled(service, scope(acme, read=["user:1"]), "where does the user live") == ["I moved to Paris"]


async def test_an_old_statement_imported_later_is_stored_as_superseded_by_the_newer_fact(
    service: MemoryService, me: NamespaceScope
) -> None:
    current = await write(service, me, "I live in Paris")

    old = await write(service, me, "I live in Berlin", occurred_at=START - timedelta(days=365))

    assert (old.status, old.superseded, old.memory.superseded_by) == (WriteStatus.CREATED, [], current.memory.id)
    assert (await service.get(me, current.memory.id)).supersedes == [old.memory.id]
    assert await recalled(service, me, "where does the user live") == ["I live in Paris"]


async def test_a_query_matching_only_the_old_wording_is_answered_by_the_memory_that_superseded_it(
    service: MemoryService, clock: ManualClock, me: NamespaceScope
) -> None:
    old = await write(service, me, "We use MySQL for the orders database")
    clock.advance(60)
    new = await write(service, me, "We migrated the orders database to PostgreSQL")

    [hit] = await service.recall(me, RecallRequest(query="Is MySQL still used?", top_k=1))

    assert (hit.memory.id, hit.via) == (new.memory.id, old.memory.id)
    assert hit.scores.dense_similarity is None  # the similarity is that of the matched, superseded wording


async def test_a_successor_outside_the_recall_filters_does_not_stand_in_for_its_superseded_memory(
    service: MemoryService, clock: ManualClock, me: NamespaceScope
) -> None:
    await write(service, me, "We use MySQL for the orders database", tags=["db"])
    clock.advance(60)
    await write(service, me, "We migrated the orders database to PostgreSQL", tags=["infra"])

    assert await recalled(service, me, "Is MySQL still used?", tags=["db"]) == []


async def test_a_grace_period_keeps_a_time_bound_fact_recallable_for_whole_days_after_its_day(
    store: EdgeVectorStore, embedder: WordLlamaEmbedder, clock: ManualClock, me: NamespaceScope
) -> None:
    service = MemoryService(store, embedder, clock, pipeline=PipelineSettings(time_bound_grace_days=2))

    outcome = await write(service, me, "I have a dentist appointment tomorrow at 9")

    assert plan_until(outcome.memory) == datetime(2026, 1, 5, tzinfo=UTC)


@pytest.mark.parametrize(
    "moment",
    [
        datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=14))),
        datetime(9999, 12, 31, 23, 59, tzinfo=timezone(timedelta(hours=-14))),
        datetime(1969, 12, 31, tzinfo=UTC),
    ],
)
async def test_an_occurred_at_the_engine_could_not_read_back_is_refused_and_nothing_stored(
    service: MemoryService, store: EdgeVectorStore, me: NamespaceScope, acme: str, moment: datetime
) -> None:
    with pytest.raises(InvalidArgument, match="occurred_at"):
        await write(service, me, "The meeting is tomorrow", occurred_at=moment)

    assert await everything(store, acme) == []


# -- 5. what is indexed beside the text ------------------------------------------------------------------------


async def test_a_memory_whose_speaker_is_given_in_metadata_is_recalled_for_a_question_naming_that_speaker(
    service: MemoryService, me: NamespaceScope
) -> None:
    for text, speaker in [("We adopted a puppy last month", "Melanie"), ("We adopted a kitten last month", "Caroline")]:
        await write(service, me, text, metadata={"speaker": speaker})

    [top, other] = await service.recall(me, RecallRequest(query="What pet did Melanie adopt?", top_k=2, explain=True))

    assert top.memory.content == "We adopted a puppy last month"  # stored as written, no name added
    assert "speaker" in top.scores.cues and "speaker" not in other.scores.cues
    assert top.scores.keyword is not None and other.scores.keyword is not None
    assert top.scores.keyword > other.scores.keyword  # her name is in its keyword document


async def test_a_speaker_given_in_metadata_counts_only_when_the_text_has_no_speaker_of_its_own(
    service: MemoryService, me: NamespaceScope
) -> None:
    await write(service, me, "Jon: We opened the studio", metadata={"speaker": "Melanie"})

    [hit] = await service.recall(me, RecallRequest(query="What did Melanie open?", top_k=1, explain=True))

    assert "speaker" not in hit.scores.cues


async def test_turns_whose_speakers_are_given_in_metadata_are_embedded_in_the_context_of_the_turn_before(
    service: MemoryService, store: EdgeVectorStore, embedder: WordLlamaEmbedder, me: NamespaceScope
) -> None:
    question = await write(service, me, "Did you send the report?", session_id="chat", metadata={"speaker": "Ana"})
    answer = await write(service, me, "Yes, to Maria", session_id="chat", metadata={"speaker": "Jon"})

    # stored as the turn "Jon: Yes, to Maria" mixed with the turn "Ana: Did you send the report?" it answers
    own, before = await embedder.embed_documents(["Jon: Yes, to Maria", "Ana: Did you send the report?"])
    expected = in_context(own, before, service.pipeline.turn_context_weight)
    hits = await store.search(me, ("user:1",), expected, 2, RecallFilter(now=START, session_id="chat"))
    assert answer.memory.follows == question.memory.id
    assert hits[0].memory.id == answer.memory.id
    assert hits[0].similarity == pytest.approx(1.0, abs=1e-4)


async def test_a_question_naming_a_date_finds_what_was_said_that_day_in_the_writers_zone(
    service: MemoryService, me: NamespaceScope
) -> None:
    pacific = timezone(timedelta(hours=-8))
    said = {  # the lamp is bought late on 3 February in the writer's zone: already 4 February in UTC
        "I bought a new lamp for the studio": datetime(2023, 2, 3, 23, 30, tzinfo=pacific),
        "I bought a new rug for the studio": datetime(2023, 2, 4, 10, 0, tzinfo=pacific),
    }
    for text, at in said.items():
        await write(service, me, text, occurred_at=at)

    assert await recalled(service, me, "What did I buy on 3 February, 2023?", top_k=1) == [
        "I bought a new lamp for the studio"
    ]
    assert await recalled(service, me, "What did I buy on February 4 2023?", top_k=1) == [
        "I bought a new rug for the studio"
    ]

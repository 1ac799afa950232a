"""Consolidation a person would recognise (issue #20): the ten-memory example in English and Chinese gives exactly
three semantic memories (short answers, the FastAPI service on Python 3.11, the dog Pepper) and none for the single
note about Japanese lessons; statements that share only "the user" never cluster; an unchanged cluster is not
rewritten; a changed one supersedes its own older version, never an episode; recall ranks the semantic memory above
its sources for a general question."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memory.clock import ManualClock
from memory.consolidation import SUBJECT, consolidate, consolidate_now
from memory.models import Memory, MemoryKind
from memory.requests import ListRequest, RecallRequest, WriteRequest
from memory.scope import NamespaceScope
from memory.service import MemoryService

pytestmark = pytest.mark.anyio

ENGLISH = {
    "style": (
        "The user prefers short answers without preamble",
        "The user asked again for shorter replies",
        "The user dislikes verbose responses",
    ),
    "fastapi": (
        "The user is building a FastAPI service",
        "The service runs on Python 3.11",
        "The user deploys the FastAPI app with uvicorn",
    ),
    "pepper": (
        "The user's dog Pepper is a beagle",
        "Pepper needs a walk every morning",
        "The user took Pepper to the vet",
    ),
    "single": ("The user started Japanese lessons",),
}
CHINESE = {
    "style": ("用户喜欢简短的回答，不要开场白", "用户再次要求回复更短一些", "用户不喜欢冗长的回答"),
    "fastapi": ("用户正在开发一个 FastAPI 服务", "这个服务运行在 Python 3.11 上", "用户用 uvicorn 部署 FastAPI 应用"),
    "pepper": ("用户的狗 Pepper 是一只比格犬", "Pepper 每天早上都要散步", "用户带 Pepper 去看了兽医"),
    "single": ("用户开始上日语课",),
}
UNRELATED = (
    "The user's passport number ends in 7731",
    "The user's gym locker code is 4417",
    "The user's cat sleeps on the sofa",
    "The user said thanks for the help",
)


async def write_all(
    service: MemoryService, who: NamespaceScope, clock: ManualClock, texts: list[str], namespace: str = "user:1"
) -> dict[str, str]:
    """Write each text a week after the previous one (so the evidence spans months); text -> id."""
    ids: dict[str, str] = {}
    for text in texts:
        clock.advance(7 * 86_400)
        outcome = await service.write(who, WriteRequest(content=text, subject="agent", namespace=namespace))
        assert outcome.id is not None
        ids[text] = outcome.id
    return ids


def interleaved(groups: dict[str, tuple[str, ...]]) -> list[str]:
    """The statements in the order a user would say them over weeks: the topics interleaved."""
    longest = max(len(g) for g in groups.values())
    return [g[i] for i in range(longest) for g in groups.values() if i < len(g)]


async def consolidated_a_day_ago(service: MemoryService, admin: NamespaceScope, clock: ManualClock) -> None:
    """The English example written over weeks and consolidated, then a day passed."""
    await write_all(service, admin, clock, interleaved(ENGLISH))
    await consolidate(service, admin, "user:1")
    clock.advance(timedelta(days=1).total_seconds())


async def semantic_memories(service: MemoryService, who: NamespaceScope, namespace: str = "user:1") -> list[Memory]:
    page = await service.list(who, ListRequest(namespace=namespace, kind="semantic", limit=100))
    return page.memories


@pytest.mark.parametrize("language", [ENGLISH, CHINESE], ids=["english", "chinese"])
async def test_the_ten_memory_example_gives_three_semantic_memories_and_none_for_the_single_note(
    service: MemoryService, admin: NamespaceScope, clock: ManualClock, language: dict[str, tuple[str, ...]]
) -> None:
    ids = await write_all(service, admin, clock, interleaved(language))
    before = {i: await service.get(admin, i) for i in ids.values()}
    result = await consolidate(service, admin, "user:1")
    assert len(result.written) == 3
    semantic = await semantic_memories(service, admin)
    by_sources = {frozenset(m.metadata["sources"]): m for m in semantic}
    expected = {name: frozenset(ids[t] for t in texts) for name, texts in language.items() if name != "single"}
    assert set(by_sources) == set(expected.values())
    assert ids[language["single"][0]] not in {s for m in semantic for s in m.metadata["sources"]}
    style, fastapi, pepper = (by_sources[expected[n]].content for n in ("style", "fastapi", "pepper"))
    if language is ENGLISH:
        assert style.startswith("The user prefers short, concise answers") and "(3 mentions, " in style
        assert "FastAPI" in fastapi and "Python 3.11" in fastapi
        assert "dog named Pepper" in pepper
    else:
        assert style.startswith("用户偏好简短") and "（3 次提及，" in style
        assert "FastAPI" in fastapi and "Python 3.11" in fastapi
        assert "狗" in pepper and "Pepper" in pepper
    for memory in semantic:
        assert memory.kind is MemoryKind.SEMANTIC and memory.source.subject == SUBJECT
        for source in memory.metadata["sources"]:
            episode = await service.get(admin, source)
            assert episode.kind is MemoryKind.EPISODIC and episode.superseded_by is None
            assert episode == before[source]  # consolidation never changes an episode


async def test_statements_that_share_only_the_user_are_never_clustered(
    service: MemoryService, admin: NamespaceScope, clock: ManualClock
) -> None:
    await write_all(service, admin, clock, [*UNRELATED, *ENGLISH["single"]])
    result = await consolidate(service, admin, "user:1")
    assert (result.clusters, result.written) == (0, [])


async def test_an_evidence_span_names_the_months_of_the_first_and_last_mention(
    service: MemoryService, admin: NamespaceScope, clock: ManualClock
) -> None:
    clock.set(clock.now().replace(year=2026, month=1, day=5))
    for text in ENGLISH["style"]:
        await service.write(admin, WriteRequest(content=text, subject="agent", namespace="user:1"))
        clock.advance(30 * 86_400)
    await consolidate(service, admin, "user:1")
    [memory] = await semantic_memories(service, admin)
    assert (
        memory.content
        == "The user prefers short, concise answers without preamble: answer briefly (3 mentions, Jan-Mar 2026)"
    )


async def test_an_unchanged_cluster_does_not_rewrite_its_semantic_memory(
    service: MemoryService, admin: NamespaceScope, clock: ManualClock
) -> None:
    await write_all(service, admin, clock, interleaved(ENGLISH))
    first = await consolidate(service, admin, "user:1")
    before = {m.id: m.updated_at for m in await semantic_memories(service, admin)}
    clock.advance(7 * 86_400)
    again = await consolidate(service, admin, "user:1")
    assert (again.written, again.unchanged) == ([], 3)
    assert {m.id: m.updated_at for m in await semantic_memories(service, admin)} == before
    assert len(first.written) == 3


async def test_a_grown_cluster_supersedes_its_own_older_version_and_keeps_it_as_history(
    service: MemoryService, admin: NamespaceScope, clock: ManualClock
) -> None:
    await write_all(service, admin, clock, interleaved(ENGLISH))
    await consolidate(service, admin, "user:1")
    [old] = [m for m in await semantic_memories(service, admin) if "Pepper" in m.content]
    await write_all(service, admin, clock, ["The user bought Pepper a new leash"])
    again = await consolidate(service, admin, "user:1")
    assert again.superseded == [old.id]
    [new] = [m for m in await semantic_memories(service, admin) if "Pepper" in m.content]
    assert new.id != old.id and old.id in new.supersedes and len(new.metadata["sources"]) == 4
    history = await service.get(admin, old.id)
    assert history.superseded_by == new.id and history.deleted_at is None
    hidden = await service.list(admin, ListRequest(namespace="user:1", hidden="superseded", limit=50))
    assert [m.id for m in hidden.memories] == [old.id]  # only the old semantic version, never an episode


async def test_recall_ranks_the_semantic_memory_above_its_sources_for_a_general_question(
    service: MemoryService, admin: NamespaceScope, clock: ManualClock
) -> None:
    await consolidated_a_day_ago(service, admin, clock)
    hits = await service.recall(admin, RecallRequest(query="how should I answer this user?", namespaces=["user:1"]))
    kinds = [h.memory.kind for h in hits]
    assert kinds[0] is MemoryKind.SEMANTIC and "short, concise answers" in hits[0].memory.content


async def test_an_admin_s_run_now_consolidates_every_namespace_or_the_one_named(
    service: MemoryService, admin: NamespaceScope, clock: ManualClock
) -> None:
    for namespace in ("user:1", "user:2"):
        await write_all(service, admin, clock, list(ENGLISH["fastapi"]), namespace=namespace)
    one = await consolidate_now(service, admin, "user:1")
    every = await consolidate_now(service, admin)
    assert (one.clusters, len(one.written)) == (1, 1)
    assert (every.clusters, len(every.written), every.unchanged) == (2, 1, 1)  # user:1's says it already
    assert [len(await semantic_memories(service, admin, ns)) for ns in ("user:1", "user:2")] == [1, 1]

"""The hidden states of `memory.lifecycle.hidden` on the real engine: listing one state pages through a long run of
other memories, an unknown state is refused, and each write tells the observer what it hid."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory.errors import InvalidArgument
from memory.lifecycle import hidden
from memory.requests import ListRequest, WriteRequest
from memory.service import MemoryService
from tests.memory.conftest import make_memory, scope

pytestmark = pytest.mark.anyio

WHO = scope("acme", write=["user:1"])


async def test_a_hidden_state_is_listed_past_a_long_run_of_other_memories_by_its_cursor(
    service: MemoryService,
) -> None:
    ids = []
    for n in range(hidden.SCAN_PAGES + 2):
        outcome = await service.write(WHO, WriteRequest(content=f"Fact number {n} is {n * 7}", subject="a", force=True))
        ids.append(outcome.id)
    await service.forget(WHO, ids[-1], "no longer true")

    first = await service.list(WHO, ListRequest(hidden="forgotten", limit=1))
    second = await service.list(WHO, ListRequest(hidden="forgotten", limit=1, cursor=first.next_cursor))

    assert first.memories == [] and first.next_cursor is not None  # 20 store pages read, none forgotten
    assert [m.id for m in second.memories] == [ids[-1]]
    assert (await service.list(WHO, ListRequest(hidden="superseded"))).memories == []


async def test_an_unknown_hidden_state_is_refused(service: MemoryService) -> None:
    with pytest.raises(InvalidArgument, match="hidden must be one of"):
        await service.list(WHO, ListRequest(hidden="skipped"))


async def test_each_write_tells_the_observer_what_it_hid(service: MemoryService) -> None:
    told: list[tuple[str, int]] = []
    service.on_hidden = lambda reason, count: told.append((reason, count))
    for content in ["ok thanks!", "I live in Berlin", "I live in Berlin!", "I moved to Paris", "I moved to Paris"]:
        await service.write(WHO, WriteRequest(content=content, subject="a"))

    assert told == [("skipped", 1), ("merged", 1), ("superseded", 1)]  # an exact repeat hides nothing


@pytest.mark.parametrize("until", ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:00-14:00", "2026-01-01", "soon", 7])
def test_a_plan_day_no_write_could_have_noted_reads_as_no_plan(until: object) -> None:
    memory = make_memory("Dentist tomorrow", tenant="acme", metadata={"_pipeline": {"expiry": {"until": until}}})

    assert hidden.plan_until(memory) is None
    assert not hidden.is_passed_plan(memory, datetime(2026, 6, 1, tzinfo=UTC))

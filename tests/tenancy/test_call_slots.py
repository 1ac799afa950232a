"""`tenancy.concurrency.CallSlots`: at most so many calls of a subject and of a tenant run at once; the others
wait their turn in order, up to a bounded wait, then `TooManyCalls` (rate_limited, retryable); other tenants are
never held up; nothing is kept for a subject with no call."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest

from gateway.errors import failure_from_exception
from tenancy.concurrency import CallSlots
from tenancy.errors import TooManyCalls

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def holding(
    slots: CallSlots, tenant: str, subject: str, *, per_subject: int = 2, per_tenant: int = 2, wait: float = 5.0
) -> AsyncIterator[anyio.Event]:
    """A call of `subject` that holds its turn until the yielded event is set."""
    release, holds = anyio.Event(), anyio.Event()

    async def call() -> None:
        async with slots.turn(tenant, subject, per_subject=per_subject, per_tenant=per_tenant, wait_seconds=wait):
            holds.set()
            await release.wait()

    async with anyio.create_task_group() as group:
        group.start_soon(call)
        await holds.wait()
        try:
            yield release
        finally:
            release.set()


async def test_a_tenant_at_its_cap_waits_and_runs_as_soon_as_a_call_ends() -> None:
    slots = CallSlots()
    order: list[str] = []
    async with holding(slots, "acme", "a") as first, holding(slots, "acme", "b"):
        assert slots.running("acme") == 2

        async def third() -> None:
            async with slots.turn("acme", "c", per_subject=2, per_tenant=2, wait_seconds=5):
                order.append("third ran")

        async with anyio.create_task_group() as group:
            group.start_soon(third)
            await anyio.wait_all_tasks_blocked()
            assert order == []  # waiting for a turn
            first.set()
    assert order == ["third ran"]


async def test_a_turn_that_does_not_come_within_the_wait_is_refused_as_rate_limited() -> None:
    slots = CallSlots()
    async with holding(slots, "acme", "a", per_tenant=1):
        with pytest.raises(TooManyCalls, match="this tenant already has 1 tool calls running") as refused:
            async with slots.turn("acme", "b", per_subject=2, per_tenant=1, wait_seconds=0.05):
                pytest.fail("ran beyond the tenant's cap")

    failure = failure_from_exception(refused.value, "recall_memory")
    assert (failure.code, failure.retryable) == ("rate_limited", True)


async def test_a_subject_at_its_cap_waits_while_its_tenant_still_has_room_for_others() -> None:
    slots = CallSlots()
    async with holding(slots, "acme", "a", per_subject=1, per_tenant=4):
        with pytest.raises(TooManyCalls, match="this token"):
            async with slots.turn("acme", "a", per_subject=1, per_tenant=4, wait_seconds=0.05):
                pytest.fail("ran beyond the subject's cap")
        async with slots.turn("acme", "b", per_subject=1, per_tenant=4, wait_seconds=0.05):
            assert slots.running("acme") == 2


async def test_another_tenant_is_never_held_up_by_a_tenant_at_its_cap() -> None:
    slots = CallSlots()
    async with holding(slots, "acme", "a", per_tenant=1):
        with anyio.fail_after(1):
            async with slots.turn("globex", "a", per_subject=1, per_tenant=1, wait_seconds=0.01):
                assert slots.running("globex") == 1


async def test_a_refused_wait_holds_no_turn_and_idle_keys_are_dropped() -> None:
    slots = CallSlots()
    async with holding(slots, "acme", "a", per_subject=1, per_tenant=1):
        with pytest.raises(TooManyCalls):
            async with slots.turn("acme", "b", per_subject=1, per_tenant=1, wait_seconds=0.01):
                pass
        assert slots.running("acme", "b") == 0
    assert slots.running("acme") == 0
    assert slots._slots == {}  # nothing kept for tenants and subjects with no call


async def test_a_call_stepping_aside_leaves_its_turn_and_queues_for_it_again() -> None:
    slots = CallSlots()
    order: list[str] = []
    answer, other_ran = anyio.Event(), anyio.Event()

    async def waiting_on_a_service() -> None:
        async with slots.turn("acme", "a", per_subject=1, per_tenant=1, wait_seconds=1) as turn:
            order.append("first runs")
            async with turn.step_aside():  # e.g. the LLM: no CPU of ours meanwhile
                await answer.wait()
            order.append("first back")

    async def other() -> None:
        async with slots.turn("acme", "b", per_subject=1, per_tenant=1, wait_seconds=1):
            order.append("other runs")
            other_ran.set()
            await answer.wait()  # still running when the first call's answer comes: it waits its turn again
            await anyio.wait_all_tasks_blocked()
            assert slots.running("acme") == 1
            order.append("other done")

    async with anyio.create_task_group() as group:
        group.start_soon(waiting_on_a_service)
        await anyio.wait_all_tasks_blocked()
        group.start_soon(other)
        await other_ran.wait()
        answer.set()

    assert order == ["first runs", "other runs", "other done", "first back"]
    assert slots._slots == {}

"""`memory.cpu_meter`: a call is charged the thread CPU time of its own steps on the event loop and of its
worker-thread hops, never the CPU of other tasks that ran while it waited; values, exceptions and cancellation
pass through the metering as through a plain `await`."""

from __future__ import annotations

import time

import anyio
import anyio.lowlevel
import pytest

from memory.cpu_meter import CpuMeter, current_meter, run_metered, run_sync

pytestmark = pytest.mark.anyio


def burn(seconds: float) -> float:
    """Spend `seconds` of this thread's CPU time (real work, no sleeping)."""
    started = time.thread_time()
    spins = 0
    while time.thread_time() - started < seconds:
        spins += sum(range(200))
    return time.thread_time() - started


async def test_the_steps_and_worker_hops_of_a_call_are_counted_and_nothing_else() -> None:
    meter = CpuMeter()
    other_spent: list[float] = []

    async def call() -> str:
        burn(0.02)  # a step on the event loop
        await anyio.lowlevel.checkpoint()  # the other task runs here: not ours
        burn(0.02)
        await run_sync(burn, 0.03)  # a worker-thread hop
        await anyio.lowlevel.checkpoint()
        return "done"

    async def neighbour() -> None:
        for _ in range(3):
            other_spent.append(burn(0.02))
            await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as group:
        group.start_soon(neighbour)
        answer = await run_metered(meter, call())

    assert answer == "done"
    assert sum(other_spent) >= 0.04  # the neighbour really ran between the call's steps
    assert 0.07 <= meter.seconds < 0.07 + 0.015  # the call's own 70 ms, give or take the clock reads and awaits


async def test_outside_a_metered_call_run_sync_is_a_plain_worker_thread_hop() -> None:
    assert current_meter() is None
    assert await run_sync(lambda a, b: a + b, 2, 3) == 5


async def test_the_meter_is_the_calls_only_while_it_runs() -> None:
    meter = CpuMeter()

    async def call() -> CpuMeter | None:
        return current_meter()

    assert await run_metered(meter, call()) is meter
    assert current_meter() is None


async def test_an_exception_of_the_call_comes_out_as_raised_with_its_cpu_counted() -> None:
    meter = CpuMeter()

    async def failing() -> None:
        burn(0.01)
        await anyio.lowlevel.checkpoint()
        raise LookupError("not there")

    with pytest.raises(LookupError, match="not there"):
        await run_metered(meter, failing())
    assert meter.seconds >= 0.01


async def test_a_cancelled_call_sees_the_cancellation_and_runs_its_cleanup() -> None:
    meter = CpuMeter()
    cleaned: list[bool] = []
    started = anyio.Event()

    async def waiting() -> None:
        try:
            started.set()
            await anyio.sleep_forever()
        finally:
            cleaned.append(True)

    async with anyio.create_task_group() as group:

        async def run() -> None:
            await run_metered(meter, waiting())

        group.start_soon(run)
        await started.wait()
        group.cancel_scope.cancel()

    assert cleaned == [True]


async def test_a_cancel_scope_inside_the_call_works_as_without_metering() -> None:
    meter = CpuMeter()

    async def bounded() -> str:
        with anyio.move_on_after(0.01):
            await anyio.sleep_forever()
        return "moved on"

    assert await run_metered(meter, bounded()) == "moved on"


async def test_worker_hops_of_several_calls_at_once_go_to_each_calls_own_meter() -> None:
    meters = [CpuMeter(), CpuMeter()]

    async def call(seconds: float) -> None:
        await run_sync(burn, seconds)

    async with anyio.create_task_group() as group:
        group.start_soon(run_metered, meters[0], call(0.01))
        group.start_soon(run_metered, meters[1], call(0.04))

    assert 0.01 <= meters[0].seconds < 0.02
    assert 0.04 <= meters[1].seconds < 0.05


async def test_background_work_a_call_starts_is_not_the_calls_and_nothing_counts_once_it_is_done() -> None:
    """A task started under the call (an access-count flush it schedules) inherits its context but not its meter;
    a meter counts nothing after its call returned (it has been charged)."""
    meter = CpuMeter()
    later = anyio.Event()

    async with anyio.create_task_group() as group:

        async def background() -> None:
            await run_sync(burn, 0.02)  # while the call still runs
            await later.wait()
            await run_sync(burn, 0.02)  # once the call is done

        async def call() -> None:
            group.start_soon(background)
            await run_sync(burn, 0.01)
            await anyio.wait_all_tasks_blocked()

        await run_metered(meter, call())
        later.set()

    assert 0.01 <= meter.seconds < 0.02

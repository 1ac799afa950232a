"""The CPU time one call spends, measured where it is spent (issue #32: each request is charged what it costs).

A `CpuMeter` is opened around a call (`run_metered`, by the gateway's tool boundary). Two things add to it:

- the call's own steps on the event loop: `run_metered` drives the call's coroutine step by step and adds the
  thread CPU time of each step (`time.thread_time` before and after it: only this coroutine runs in between, so
  the time of other requests' steps is never counted);
- the engine's worker-thread hops: `run_sync` is `anyio.to_thread.run_sync` that adds the thread CPU time of the
  job in its worker thread to the meter of the call that asked for it (found through a context variable, which
  anyio copies into the worker). Every CPU-heavy hop of the engine goes through it (embedding, text analysis,
  store writes, conflict decisions); outside a metered call it is plain `anyio.to_thread.run_sync`. Small work it
  is asked to run `inline` (a short query's analysis, a recall's searches on the embedded store, a short answer)
  runs on the event loop and is counted by the steps.

A call that waits on another service (the LLM, a remote embedder) or on another call (a namespace lock it must
queue for, another attempt's idempotency claim) spends no CPU meanwhile: `waiting_elsewhere` steps it out of its
turn among its tenant's running calls (`step_aside`, set by the gateway) until the wait is over. So a call that
holds a lock or claim while it waits on the LLM never waits in turn for a call that waits on that lock or claim.

Not counted: threads a native library runs on its own (qdrant-edge spreads part of a query over its threads:
about 1 ms per search at a few hundred memories), and the MCP SDK's serialising of an answer once the tool has
returned it. Two clock reads per step or hop: well under a microsecond each.
"""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Generator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from contextvars import ContextVar
from typing import Any, Generic, TypeVar

import anyio
import anyio.to_thread
from anyio import CapacityLimiter

T = TypeVar("T")


class CpuMeter:
    """Seconds of CPU time added by the steps and hops of one call (from any thread), until it is closed."""

    __slots__ = ("_closed", "_lock", "_seconds", "step_aside", "task")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seconds = 0.0
        self._closed = False
        self.task: int | None = None  # the task running the call (`run_metered`): only its hops count
        # leaves the call's turn to others while it waits elsewhere (`waiting_elsewhere`); None: it holds none
        self.step_aside: Callable[[], AbstractAsyncContextManager[None]] | None = None

    def add(self, seconds: float) -> None:
        with self._lock:
            if not self._closed:
                self._seconds += max(0.0, seconds)

    def close(self) -> None:
        """Count nothing more: the call is done (and charged)."""
        with self._lock:
            self._closed = True

    @property
    def seconds(self) -> float:
        return self._seconds


_METER: ContextVar[CpuMeter | None] = ContextVar("hindsight_cpu_meter", default=None)


def current_meter() -> CpuMeter | None:
    """The meter of the call this task is running, if it is metered. A task started under the call (a background
    flush it scheduled) inherits the context variable but is not the call: its work is not the call's."""
    meter = _METER.get()
    if meter is None or meter.task != anyio.get_current_task().id:
        return None
    return meter


async def run_metered(meter: CpuMeter, work: Coroutine[Any, Any, T]) -> T:
    """Await `work`, adding to `meter` the thread CPU time of each of its steps and of the worker-thread hops
    it makes through `run_sync` (in this task), then close the meter."""
    meter.task = anyio.get_current_task().id
    token = _METER.set(meter)
    try:
        return await _Stepped(work, meter)
    finally:
        _METER.reset(token)
        meter.close()


class _Stepped(Generic[T]):
    """Awaits a coroutine as `await` would (values sent, exceptions thrown and closing passed through), timing
    each step in the thread that runs it."""

    __slots__ = ("_coro", "_meter")

    def __init__(self, coro: Coroutine[Any, Any, T], meter: CpuMeter) -> None:
        self._coro = coro
        self._meter = meter

    def __await__(self) -> Generator[Any, Any, T]:
        coro, meter = self._coro, self._meter
        sent: Any = None
        thrown: BaseException | None = None
        while True:
            started = time.thread_time()
            try:
                yielded = coro.send(sent) if thrown is None else coro.throw(thrown)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
            finally:
                meter.add(time.thread_time() - started)
            try:
                sent, thrown = (yield yielded), None
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:  # a cancellation (or any exception thrown in): passed on to the call
                sent, thrown = None, exc


@asynccontextmanager
async def waiting_elsewhere() -> AsyncIterator[None]:
    """Around a wait on another service: the metered call running in this task leaves its turn meanwhile."""
    meter = current_meter()
    if meter is None or meter.step_aside is None:
        yield
        return
    async with meter.step_aside():
        yield


async def run_sync(fn: Callable[..., T], *args: Any, limiter: CapacityLimiter | None = None, inline: bool = False) -> T:
    """`anyio.to_thread.run_sync(fn, *args)`, the job's thread CPU time added to the calling call's meter; or,
    `inline`, `fn(*args)` on the calling thread, counted by the step that runs it: for small work that holds the GIL
    throughout (the embedded engine's calls, pure Python), where a worker-thread hop would cost more CPU than it
    frees (`memory.stores.edge_search`)."""
    if inline:
        return fn(*args)
    meter = current_meter()
    if meter is None:
        return await anyio.to_thread.run_sync(fn, *args, limiter=limiter)

    def timed() -> T:
        started = time.thread_time()
        try:
            return fn(*args)
        finally:
            meter.add(time.thread_time() - started)

    return await anyio.to_thread.run_sync(timed, limiter=limiter)

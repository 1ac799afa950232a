"""`CallSlots`: how many tool calls one subject and one tenant may have running at once in this process (issue
#32), so one tenant's work cannot take every worker thread, nor keep the event loop busy with more calls at once
than its share, while other tenants wait.

A call takes a turn from its subject's slots, then from its tenant's (both FIFO: `anyio.Semaphore`), waiting for
both together at most `wait_seconds`; when no turn comes free by then it is refused with `TooManyCalls`
(`rate_limited`, retryable), having held nothing. A call that waits on another service (the LLM, a remote
embedder) steps out of its turn meanwhile (`Turn.step_aside`) and queues again for it afterwards, without a
deadline: it is half done. The slots are per process on purpose: what they protect (the event loop, the worker
threads, the cores) is the process's, so each replica counts its own. A key's semaphore exists while some call
holds, waits for or has stepped out of it, so idle subjects cost nothing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio

from tenancy.errors import TooManyCalls


@dataclass(slots=True)
class _Slots:
    semaphore: anyio.Semaphore
    size: int
    users: int = 0  # calls holding, waiting for or stepped out of a turn


class Turn:
    """One call's turn: its subject's slot and its tenant's, and whether it had to wait for them."""

    def __init__(self, slots: list[tuple[_Slots, str]]) -> None:
        self._slots = slots
        self._held: list[_Slots] = []
        self.waited = False

    async def _take(self, deadline: float | None) -> None:
        """Take the slots not held yet, in order; by `deadline` (else `TooManyCalls`) or, without one, whenever."""
        for slots, who in self._slots[len(self._held) :]:
            if slots.semaphore.value == 0:
                self.waited = True
            if deadline is None:
                await slots.semaphore.acquire()
            else:
                acquired = False
                with anyio.move_on_after(max(0.0, deadline - anyio.current_time())):
                    await slots.semaphore.acquire()
                    acquired = True
                if not acquired:
                    raise TooManyCalls(
                        f"{who} already has {slots.size} tool calls running and none ended in time; retry shortly"
                    )
            self._held.append(slots)

    def _give_back(self) -> None:
        while self._held:
            self._held.pop().semaphore.release()

    @asynccontextmanager
    async def step_aside(self) -> AsyncIterator[None]:
        """Leave the turn to the next call while the block waits on another service, then queue for it again."""
        self._give_back()
        try:
            yield
        finally:
            await self._take(None)


class CallSlots:
    def __init__(self) -> None:
        self._slots: dict[tuple[str, ...], _Slots] = {}

    @asynccontextmanager
    async def turn(
        self, tenant: str, subject: str, *, per_subject: int, per_tenant: int, wait_seconds: float
    ) -> AsyncIterator[Turn]:
        """Hold a turn of `subject` (at most `per_subject` at once) and of `tenant` (at most `per_tenant`) while
        the block runs; raises `TooManyCalls` when both are not free within `wait_seconds`."""
        keys = [
            (("s", tenant, subject), per_subject, "this token"),
            (("t", tenant), per_tenant, "this tenant"),
        ]
        used = [(key, self._use(key, size)) for key, size, _ in keys]
        turn = Turn([(slots, who) for (_, slots), (_, _, who) in zip(used, keys, strict=True)])
        try:
            await turn._take(anyio.current_time() + wait_seconds)
            yield turn
        finally:
            turn._give_back()
            for key, slots in used:
                slots.users -= 1
                if slots.users == 0 and self._slots.get(key) is slots:
                    del self._slots[key]

    def running(self, tenant: str, subject: str | None = None) -> int:
        """How many calls hold a turn of the tenant (or of one of its subjects) now."""
        key = ("t", tenant) if subject is None else ("s", tenant, subject)
        slots = self._slots.get(key)
        if slots is None:
            return 0
        return slots.size - slots.semaphore.value

    def _use(self, key: tuple[str, ...], size: int) -> _Slots:
        slots = self._slots.get(key)
        if slots is None:
            slots = self._slots[key] = _Slots(anyio.Semaphore(size), size)
        slots.users += 1
        return slots

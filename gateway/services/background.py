"""`Supervisor`: what keeps the gateway's background work from taking it down, and what tells a supervisor
(Kubernetes, compose) when it is down anyway.

- `contain(task, tenant=..., namespace=...)` wraps one iteration of a background job (one maintenance pass of a
  tenant, one store flush, one gauge sample): any `Exception` is logged with where it happened and counted
  (`hindsight_background_errors_total{task}`), and the loop carries on. Cancellation is a `BaseException` and
  passes through untouched, so shutdown still works. `finished(task)` counts the rounds of each loop
  (`hindsight_background_rounds_total{task}`), failed or not: a loop whose rounds stop counting is stuck.
- `watch(name, task_group)` puts a sentinel task into a task group the gateway cannot serve without (the
  runtime's, the lifespan's, which also sits inside the MCP session manager's). Whatever ends the group, a
  failure or a cancellation, ends the sentinel, and `problems()` names it from then on: `/livez` answers 503 so
  the gateway is restarted instead of kept.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import anyio
import anyio.abc

from memory.errors import MemoryEngineError

logger = logging.getLogger("hindsight.background")


class Supervisor:
    def __init__(
        self, count_error: Callable[[str], None] | None = None, count_round: Callable[[str], None] | None = None
    ) -> None:
        self._count_error = count_error
        self._count_round = count_round
        self._alive: dict[str, bool] = {}
        self._stopping = False
        self.scopes: dict[str, anyio.CancelScope] = {}  # each watched group's scope: cancelling it ends the gateway

    @contextmanager
    def contain(self, task: str, *, tenant: str | None = None, namespace: str | None = None) -> Iterator[None]:
        """Log and count any exception of the enclosed job iteration instead of letting it end the task group."""
        try:
            yield
        except Exception as exc:
            where = "".join(f" {k}={v}" for k, v in (("tenant", tenant), ("namespace", namespace)) if v is not None)
            if isinstance(exc, MemoryEngineError):  # expected (a backend down, a bad value): no stack needed
                logger.warning("background %s failed%s: %s: %s", task, where, exc.code, exc.message)
            else:
                logger.exception("background %s failed%s", task, where)
            self.count(task)

    def count(self, task: str, errors: int = 1) -> None:
        """Count background errors that were already handled and logged where they happened."""
        if self._count_error is None or errors <= 0:
            return
        for _ in range(errors):
            try:
                self._count_error(task)
            except Exception:  # a broken metric must not turn a contained error into a fatal one
                logger.exception("counting a background error of %s failed", task)
                return

    def finished(self, task: str) -> None:
        """One round of a background loop is over (whatever failed in it was contained)."""
        if self._count_round is None:
            return
        try:
            self._count_round(task)
        except Exception:
            logger.exception("counting a round of %s failed", task)

    async def watch(self, name: str, task_group: anyio.abc.TaskGroup) -> None:
        """Mark the gateway not serving as soon as `task_group` ends, for whatever reason."""
        self._stopping = False  # a (re)started lifespan
        self.scopes[name] = task_group.cancel_scope
        await task_group.start(self._sentinel, name, name=f"liveness sentinel: {name}")

    def stopping(self) -> None:
        """The lifespan is shutting down on purpose: the watched groups ending is expected from now on."""
        self._stopping = True

    def problems(self) -> list[str]:
        """Why the gateway cannot serve; empty while it can. Cheap: no backend is called."""
        if not self._alive:
            return ["not started"]
        found = [f"{name} ended" for name, alive in self._alive.items() if not alive]
        if self._stopping:
            found.append("shutting down")
        return found

    async def _sentinel(self, name: str, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        self._alive[name] = True
        task_status.started()
        try:
            await anyio.sleep_forever()
        finally:
            self._alive[name] = False
            if not self._stopping:
                logger.critical("the %s task group ended: the gateway cannot serve (/livez answers 503)", name)

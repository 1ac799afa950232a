"""Cost-aware fairness between tenants (issue #32): every tool call is charged the CPU time it spends, against
CPU budgets per subject and per tenant beside the call counts, and a tenant has only so many calls running at once.

- **CPU budgets.** Token buckets of CPU-milliseconds (`TenantLimits.subject_cpu_ms_per_second`,
  `tenant_cpu_ms_per_second`, holding `cpu_burst_seconds` worth), kept by the rate limiter (in process or on
  Redis, shared by the replicas) under `hs:{tenant}:cpu:s:<subject>` and `hs:{tenant}:cpu:t`. What a call costs
  is known only once it is done, so the gate (`gateway.web.rate_limit_gate`) takes `ADMISSION_MS` up front, which a
  bucket in debt cannot give (429 with `Retry-After`: the time until it has refilled), and the tool boundary
  charges the rest of what the call was measured to spend (`memory.cpu_meter`: the thread CPU time of its steps
  on the event loop and of its worker-thread hops) once it is done, successful or not, pushing the buckets into
  debt when it spent more than they held. A recall at every bound is charged about 18 ms: against the default
  100 ms/s of a subject, about five such calls a second are served, whatever the call counts allow.
- **Concurrency.** `tenancy.concurrency.CallSlots`, per process: at most `subject_concurrency` calls of one subject
  and `tenant_concurrency` of one tenant run at once (one and one by default), the others waiting their turn up to
  `concurrency_wait_seconds` (then `rate_limited`, retryable). Calls waiting for a turn hold no CPU; what one
  tenant runs at a time bounds how much of the event loop and the cores it takes from the others, and how far a
  budget can be overdrawn before its debt is charged (at most that many calls in flight). A call waiting on the
  LLM or a remote embedder, or on another call (a namespace lock, an idempotency claim), leaves its turn to the
  tenant's next call meanwhile (`memory.cpu_meter.waiting_elsewhere`), so one slow answer never holds a tenant up
  and no two calls wait on each other. A call that waited for its turn is admitted by its budgets again once it has
  it: the calls ahead of it were charged meanwhile.

The charge is what the meter saw of the call: its steps and its engine hops, about 60% of the CPU the process
spends on the request (measured: 7 of 12-14 ms for a plain recall, 18 of 30 ms for a recall at every bound); the
rest is HTTP and MCP framing, the answer's serialisation, qdrant-edge's own threads and the deferred access-count
flush. The defaults are in those units: 100 ms per second per subject, 200 per tenant, 2 s of burst.

Both apply with rate limits (`rate_limit_enabled`); off, calls are neither measured against budgets nor queued.

What no budget can share is the interpreter itself, so `hindsight serve` settles two things of it
(`settle_interpreter`):
- a full garbage collection walks every object the process holds (some 150,000 once the models and libraries are
  loaded: 130 ms, measured) and pauses every request; one tenant's allocations bring it on for everyone. What
  startup made is kept out of the collector's sight (`gc.freeze`): such a pause falls to about a millisecond;
- a thread running Python (a worker thread analysing a batch) keeps the interpreter lock until another thread has
  waited the switch interval (5 ms by default) for it, and the event loop waits that long at each of the dozen
  wake-ups of a request. At 1 ms, another tenant's recall waits a fifth as long behind a busy worker thread
  (`bench.fairness`: the victim's p95 under batch writes 127 -> 63 ms).
- the young generation is collected every `YOUNG_COLLECTION_ALLOCATIONS` container allocations instead of 700: a
  recall allocates thousands, and each collection of an older generation walks what the search cache holds
  (`memory.stores.point_cache`): the collector's time per recall at 100k memories fell from 0.63-0.68 ms to
  0.26-0.27 ms (in process, 800 recalls of distinct queries).
"""

from __future__ import annotations

import gc
import logging
import math
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, nullcontext

import anyio

from memory.cpu_meter import CpuMeter
from memory.errors import BackendUnavailable
from ops.config import Settings, TenantLimits
from ops.redis_client import redis_deadline
from tenancy import Principal
from tenancy.concurrency import CallSlots
from tenancy.errors import CpuBudgetSpent
from tenancy.limits import Bucket, RateDecision, RateLimiter, tenant_prefix

logger = logging.getLogger("hindsight.ratelimit")

ADMISSION_MS = 1.0  # what the gate takes from the CPU buckets before a call: refused only by a bucket in debt


SWITCH_INTERVAL_SECONDS = 0.001  # how long a thread waits for the interpreter lock before asking for it
YOUNG_COLLECTION_ALLOCATIONS = 10_000  # the collector's first threshold (CPython's default: 700)


def settle_interpreter() -> None:
    """For a server process that has started (see the module docstring): collect once, then keep every object
    alive now (the models, libraries and runtime) out of later collections (`gc.freeze`), so a full collection
    walks what requests made, not the whole process; and switch threads after `SWITCH_INTERVAL_SECONDS`. Not for
    a process that builds apps over and over (the tests): frozen objects are never collected, so it would keep
    each one's garbage. The young generation is collected less often (`YOUNG_COLLECTION_ALLOCATIONS`)."""
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION_ALLOCATIONS, middle, old)
    sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)


def tenant_limits(settings: Settings, tenant: str) -> TenantLimits:
    return settings.rate_limits.rate_limit_tenants.get(tenant, settings.rate_limits.rate_limit_default)


def cpu_buckets(principal: Principal, limits: TenantLimits) -> list[Bucket]:
    """The CPU buckets a call of `principal` is charged to: its subject's and its tenant's (one hash tag)."""
    prefix = f"{tenant_prefix(principal.tenant)}:cpu"
    return [
        _bucket(f"{prefix}:s:{principal.subject}", limits.subject_cpu_ms_per_second, limits.cpu_burst_seconds),
        _bucket(f"{prefix}:t", limits.tenant_cpu_ms_per_second, limits.cpu_burst_seconds),
    ]


def _bucket(key: str, ms_per_second: float, burst_seconds: float) -> Bucket:
    return Bucket(key, max(ADMISSION_MS, ms_per_second * burst_seconds), ms_per_second)


async def admit(limiter: RateLimiter, principal: Principal, settings: Settings) -> RateDecision:
    """Whether the caller's CPU buckets are out of debt: takes `ADMISSION_MS` from both, or refuses with the
    time until both have refilled that far."""
    return await limiter.acquire(cpu_buckets(principal, tenant_limits(settings, principal.tenant)), ADMISSION_MS)


async def charge(
    limiter: RateLimiter, principal: Principal, limits: TenantLimits, cpu_seconds: float, taken_ms: float
) -> None:
    """Charge what a call spent beyond the `taken_ms` its admissions took; a limiter that cannot answer is logged
    (the call is done)."""
    cost = cpu_seconds * 1000 - taken_ms
    if not (cost > 0 and math.isfinite(cost)):
        return
    with anyio.CancelScope(shield=True):  # a call cancelled half-way spent its CPU all the same
        try:
            await limiter.charge(cpu_buckets(principal, limits), cost)
        except BackendUnavailable as exc:
            logger.warning("rate limiter unavailable, %.1f ms of CPU not charged: %s", cost, exc.message)


class Fairness:
    """The tool boundary's side: a call's turn (`CallSlots`), its CPU measured, and the charge once it is done."""

    def __init__(self) -> None:
        self.slots = CallSlots()

    @asynccontextmanager
    async def turn(
        self, limiter: RateLimiter | None, settings: Settings, principal: Principal
    ) -> AsyncIterator[CpuMeter]:
        """Run the block as one call of `principal`: in its subject's and tenant's turn, its CPU time (what it
        adds to the yielded meter) charged to their budgets afterwards. Without a limiter (rate limits off) the
        block runs at once and is only measured."""
        meter = CpuMeter()
        if limiter is None:
            yield meter
            return
        limits = tenant_limits(settings, principal.tenant)
        taken = ADMISSION_MS  # by the gate
        async with self.slots.turn(
            principal.tenant,
            principal.subject,
            per_subject=limits.subject_concurrency,
            per_tenant=limits.tenant_concurrency,
            wait_seconds=limits.concurrency_wait_seconds,
        ) as turn:
            if turn.waited:  # admitted before the calls ahead of it were charged: admitted again
                await self._still_in_budget(limiter, settings, principal, limits)
                taken += ADMISSION_MS
            meter.step_aside = turn.step_aside  # while it waits on the LLM or a remote embedder
            try:
                yield meter
            finally:  # before the turn passes on: the call queued next is admitted again on this charge
                # one Redis cannot take is logged
                with redis_deadline(settings.backends.redis_fail_open_timeout_seconds):
                    await charge(limiter, principal, limits, meter.seconds, taken)

    @staticmethod
    async def _still_in_budget(
        limiter: RateLimiter, settings: Settings, principal: Principal, limits: TenantLimits
    ) -> None:
        """Admit a call that waited for its turn again once it has it: it was admitted before the calls ahead of it
        ran and were charged, and the calls queued behind a tenant's must not all run on the budget of one moment."""
        fail_open = settings.rate_limits.rate_limit_fail_open  # then Redis is waited for briefly (ops.redis_client)
        try:
            with redis_deadline(settings.backends.redis_fail_open_timeout_seconds) if fail_open else nullcontext():
                decision = await limiter.acquire(cpu_buckets(principal, limits), ADMISSION_MS)
        except BackendUnavailable as exc:
            if fail_open:
                logger.warning("rate limiter unavailable, failing open: %s", exc.message)
                return
            raise
        if not decision.allowed:
            wait = math.ceil(decision.retry_after_seconds)
            raise CpuBudgetSpent(f"this token or its tenant has used up its CPU budget; retry in {wait} s")

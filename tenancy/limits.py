"""Seams for shared request state: `IdempotencyStore` and `RateLimiter`, with the key layout both backends use.

Redis keys are `hs:{tenant}:...`: the braces are a Redis Cluster hash tag, so all keys of a tenant live in one
slot and multi-key scripts stay legal.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, Protocol


def tenant_prefix(tenant: str) -> str:
    return f"hs:{{{tenant}}}"


@dataclass(frozen=True, slots=True)
class IdempotencyKey:
    tenant: str
    subject: str
    tool: str
    request_id: str

    @property
    def redis_key(self) -> str:
        digest = hashlib.sha256(f"{self.subject}\x00{self.tool}\x00{self.request_id}".encode()).hexdigest()[:32]
        return f"{tenant_prefix(self.tenant)}:idem:{digest}"


@dataclass(frozen=True, slots=True)
class Started:
    """This call is the first with its key: run the tool, then `complete` (or `abandon` on failure)."""


@dataclass(frozen=True, slots=True)
class Replay:
    """A call with this key and the same arguments already finished: answer with its stored response."""

    response: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Conflict:
    """The key was used with other arguments."""


Claim = Started | Replay | Conflict


class IdempotencyStore(Protocol):
    @property
    def lease_seconds(self) -> float:
        """How long a claim lasts unless its call renews it (`renew`; `tenancy.idempotency.run_claimed`)."""
        ...

    async def begin(self, key: IdempotencyKey, fingerprint: str) -> Claim:
        """Claim `key` atomically for a call whose arguments hash to `fingerprint`. If another call with the
        same key is in flight, wait (bounded by the store's wait timeout) until it completes and return its
        `Replay`; if it is abandoned meanwhile, or its lease runs out unrenewed (its call died), claim it
        (`Started`): of racing callers exactly one. Raises `BackendUnavailable` when the store cannot answer or
        the wait times out."""
        ...

    async def renew(self, key: IdempotencyKey) -> bool:
        """Extend the lease of the claim this store's `begin` took on `key` by `lease_seconds` from now; False
        when it holds none (completed, abandoned, or run out and taken over)."""
        ...

    async def complete(self, key: IdempotencyKey, fingerprint: str, response: dict[str, Any]) -> None:
        """Store the first response for the retention period (24 h by default)."""
        ...

    async def done_response(self, key: IdempotencyKey) -> dict[str, Any] | None:
        """The response stored for `key` by a completed call, else None (no record, or a call still running):
        a read-only look that never claims, waits or renews. Raises `BackendUnavailable` when the store cannot
        answer."""
        ...

    async def abandon(self, key: IdempotencyKey) -> None:
        """Release a claim whose call failed, so a retry can run it again."""
        ...

    async def erase(self, tenant: str, *, subjects: Collection[str] = (), mentions: Collection[str] = ()) -> int:
        """Remove the completed records of `tenant` whose key's subject is one of `subjects`, or whose stored
        response holds one of `mentions` as a string value at any depth (a memory id, a namespace); claims of
        calls still running are left alone. Returns how many records were removed."""
        ...

    async def ping(self) -> None: ...

    async def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Bucket:
    """A token bucket: `capacity` tokens, refilled at `refill_per_second`; one request costs one token."""

    key: str
    capacity: float
    refill_per_second: float


@dataclass(frozen=True, slots=True)
class RateDecision:
    allowed: bool
    retry_after_seconds: float  # 0 when allowed


class RateLimiter(Protocol):
    async def acquire(self, buckets: Sequence[Bucket], cost: float = 1.0) -> RateDecision:
        """Take `cost` tokens (one request: 1) from every bucket atomically, or none if any bucket holds fewer
        than `min(cost, capacity)` (then say how long until all of them do). A cost over a bucket's capacity (a
        batch larger than the burst) is let through once the bucket is full and leaves it in debt: the tokens
        are taken all the same, and the next call waits until the debt is refilled."""
        ...

    async def charge(self, buckets: Sequence[Bucket], cost: float) -> None:
        """Take `cost` tokens (>= 0) from every bucket whatever they hold: a cost known only once the work is done
        (the CPU time a call spent, issue #32). A bucket may go below zero, into debt; `acquire` then refuses until
        it has refilled (and the bucket is kept until then)."""
        ...

    async def ping(self) -> None: ...

    async def close(self) -> None: ...

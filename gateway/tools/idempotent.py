"""Idempotent mutating calls: the same `request_id` (or `Idempotency-Key` header) and arguments give the stored
first answer and write nothing again, also when retries race; other arguments give `idempotency_conflict`.

Key = tenant + subject + tool + request_id; the fingerprint is a hash of the canonical JSON of the arguments
(without the request id). Only successful answers are kept; a failed call releases its claim so a retry runs.
`Claims` runs this for a single call (`run_idempotent`, one key) and for a batch (`gateway.tools.batch`, one key
per item with a request id): claim or replay or conflict, run renewing the claims, store the answers, release the
rest.

The stored answer is not the whole guarantee: a first attempt that died after writing (SIGKILL, a lost Redis
reply, a failover that lost the answer) leaves no answer, and its retry runs again. So the engine finds what a
request already wrote by its request id (a memory by its `source`, an event by the event store's request index)
and completes and answers it instead of writing it again. A key given only as the `Idempotency-Key` header is
passed on to the tool as its `request_id`, so the engine sees it too.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import anyio
from mcp_types import CallToolResult

from gateway.errors import ok_result
from gateway.services.runtime import Runtime
from gateway.web.request_context import idempotency_key_header
from memory.errors import BackendUnavailable
from memory.validation import check_request_id
from ops.redis_client import redis_deadline
from tenancy import Principal
from tenancy.errors import IdempotencyConflict
from tenancy.idempotency import run_claimed
from tenancy.limits import Conflict, IdempotencyKey, Replay

logger = logging.getLogger("hindsight.idempotency")

T = TypeVar("T")


def fingerprint(arguments: dict[str, Any]) -> str:
    canonical = {k: v for k, v in arguments.items() if k != "request_id"}
    encoded = json.dumps(canonical, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(encoded.encode()).hexdigest()


def idempotency_key(principal: Principal, tool: str, request_id_argument: object) -> IdempotencyKey | None:
    """The key of a mutating call: its `request_id` argument, else the request's `Idempotency-Key` header;
    None without either. Raises `InvalidArgument` on a malformed id. The tool and the rate-limit gate (which
    looks for a stored answer before taking a write token) both build keys here."""
    request_id = check_request_id(request_id_argument or idempotency_key_header.get())
    if request_id is None:
        return None
    return IdempotencyKey(principal.tenant, principal.subject, tool, request_id)


class Claims:
    """The idempotency claims one call holds (one for a single call, one per item with a request id for a batch):
    `begin` claims a key or finds its stored answer, `run` runs the call renewing every claim, `complete` stores a
    key's answer; `claims` releases every claim left open when the call ends, so a retry runs it again."""

    def __init__(self, runtime: Runtime) -> None:
        self._store = runtime.idempotency
        self._release_timeout = runtime.settings.backends.redis_fail_open_timeout_seconds
        self._open: dict[IdempotencyKey, str] = {}  # claimed key -> its arguments' fingerprint

    async def begin(self, key: IdempotencyKey, arguments: dict[str, Any]) -> Replay | None:
        """Claim `key` for a call with `arguments` (None), or its stored answer (`Replay`); `IdempotencyConflict`
        when the key was used with other arguments."""
        digest = fingerprint(arguments)
        claim = await self._store.begin(key, digest)
        if isinstance(claim, Conflict):
            raise IdempotencyConflict(
                f"request_id {key.request_id!r} was already used for {key.tool} with other arguments; "
                "use a new request_id"
            )
        if isinstance(claim, Replay):
            return claim
        self._open[key] = digest
        return None

    async def run(self, operation: Callable[[], Awaitable[T]]) -> T:
        """Run `operation`, renewing the open claims until it returns (`tenancy.idempotency.run_claimed`: the claims
        of a call that died run out, and a retry takes them over); its exceptions propagate unchanged."""
        if not self._open:
            return await operation()
        return await run_claimed(self._store, list(self._open), operation)

    async def complete(self, key: IdempotencyKey, answer: dict[str, Any]) -> None:
        """Store `answer` as the answer of the claimed `key`."""
        digest = self._open.pop(key)
        try:
            await self._store.complete(key, digest, answer)
        except BackendUnavailable:  # the write happened: answer it; a retry may then repeat it, so say so in the log
            logger.error(
                "write done but its idempotency record was not stored (%s, request %s)", key.tool, key.request_id
            )

    async def release(self) -> None:
        """Abandon the claims not completed (a failed item, a call that failed, was cancelled or crashed)."""
        with anyio.CancelScope(shield=True), redis_deadline(self._release_timeout):  # else its lease ends it
            for key in list(self._open):
                del self._open[key]
                try:
                    await self._store.abandon(key)
                except BackendUnavailable:
                    logger.warning("could not release idempotency claim for %s; it expires by itself", key.tool)


@asynccontextmanager
async def claims(runtime: Runtime) -> AsyncIterator[Claims]:
    """The claims of one call, those left open released when it ends."""
    held = Claims(runtime)
    try:
        yield held
    finally:
        await held.release()


async def run_idempotent(
    runtime: Runtime,
    principal: Principal,
    tool: str,
    arguments: dict[str, Any],
    operation: Callable[[], Awaitable[dict[str, Any]]],
) -> tuple[CallToolResult, dict[str, Any]]:
    key = idempotency_key(principal, tool, arguments.get("request_id"))
    if key is None:
        body = await operation()
        return ok_result(body), body
    if "request_id" in arguments and arguments["request_id"] is None:
        arguments["request_id"] = key.request_id  # a key sent as the header reaches the engine as the request id
    async with claims(runtime) as held:
        replay = await held.begin(key, arguments)
        if replay is not None:
            return ok_result(replay.response, replayed=True), replay.response
        body = await held.run(operation)
        await held.complete(key, body)
    return ok_result(body), body

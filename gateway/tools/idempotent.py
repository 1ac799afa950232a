"""Idempotent mutating calls: the same `request_id` (or `Idempotency-Key` header) and arguments give the stored
first answer and write nothing again, also when retries race; other arguments give `idempotency_conflict`.

Key = tenant + subject + tool + request_id; the fingerprint is a hash of the canonical JSON of the arguments
(without the request id). Only successful answers are kept; a failed call releases its claim so a retry runs.

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
from collections.abc import Awaitable, Callable
from typing import Any

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
    request_id = key.request_id
    if "request_id" in arguments and arguments["request_id"] is None:
        arguments["request_id"] = request_id  # a key sent as the header reaches the engine as the request id
    digest = fingerprint(arguments)
    claim = await runtime.idempotency.begin(key, digest)
    if isinstance(claim, Conflict):
        raise IdempotencyConflict(
            f"request_id {request_id!r} was already used for {tool} with other arguments; use a new request_id"
        )
    if isinstance(claim, Replay):
        return ok_result(claim.response, replayed=True), claim.response
    try:
        body = await run_claimed(runtime.idempotency, key, operation)  # renews the claim while it runs
    except BaseException:
        try:
            with redis_deadline(runtime.settings.backends.redis_fail_open_timeout_seconds):  # else its lease ends it
                await runtime.idempotency.abandon(key)
        except BackendUnavailable:
            logger.warning("could not release idempotency claim for %s; it expires by itself", tool)
        raise
    try:
        await runtime.idempotency.complete(key, digest, body)
    except BackendUnavailable:  # the write happened: answer it; a retry may then repeat it, so say so in the log
        logger.error("write done but its idempotency record was not stored (%s, request %s)", tool, request_id)
    return ok_result(body), body

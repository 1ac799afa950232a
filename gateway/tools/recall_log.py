"""The recall log's gateway side (issue 18, item 2): `log_recall`, called by `recall_memory` once its answer is
built, appends what the recall asked and returned to `runtime.recall_log` when the caller's tenant is listed in
`recall_log_tenants` (never otherwise); `entry_json` is how an entry is shown to the tenant's admins (the
`recall_log` and `debug_session` tools, `/debug/sessions/{id}`). A failed log write never fails the recall: it
is logged (logger `hindsight.recall_log`) and the answer goes out, and the write waits for Redis at most
`redis_fail_open_timeout_seconds`."""

from __future__ import annotations

import logging
from typing import Any, cast

from typing_extensions import TypedDict

from gateway.answers.serialize import SCORE_DIGITS, iso, score_parts
from gateway.answers.shapes import Instant, ScoreParts
from gateway.tools.boundary import ToolCall
from memory.errors import MemoryEngineError
from memory.models import RecallHit
from memory.recall_log import LoggedHit, RecallLogEntry
from ops.redis_client import redis_deadline

logger = logging.getLogger("hindsight.recall_log")


class LoggedMemory(TypedDict):
    id: str
    namespace: str
    score: float
    scores: ScoreParts


class RecallLogEntryJson(TypedDict):
    at: Instant
    subject: str
    query: str
    arguments: dict[str, Any]
    memories: list[LoggedMemory]


def logging_enabled(call: ToolCall) -> bool:
    runtime = call.runtime
    return runtime.recall_log is not None and call.principal.tenant in runtime.settings.observability.recall_log_tenants


async def log_recall(call: ToolCall, query: str, returned: list[RecallHit], **arguments: Any) -> None:
    """Append the recall to the tenant's log when it opted in: the arguments given (None ones left out) and the
    memories the answer returned, in its order, with their score parts. Never raises an `Exception`."""
    recall_log = call.runtime.recall_log
    if recall_log is None or not logging_enabled(call):
        return
    try:
        entry = RecallLogEntry(
            at=call.runtime.memories.clock.now(),
            subject=call.principal.subject,
            query=query,
            arguments={name: value for name, value in arguments.items() if value is not None},
            hits=tuple(
                LoggedHit(hit.memory.id, hit.memory.namespace, round(hit.scores.score, SCORE_DIGITS), score_parts(hit))
                for hit in returned
            ),
        )
        with redis_deadline(call.runtime.settings.backends.redis_fail_open_timeout_seconds):  # a failure is logged only
            await recall_log.append(call.scope, entry)
    except Exception as exc:
        if isinstance(exc, MemoryEngineError):  # expected (a backend down): no stack needed
            logger.warning("recall log write failed tenant=%s: %s: %s", call.scope.tenant, exc.code, exc.message)
        else:
            logger.exception("recall log write failed tenant=%s", call.scope.tenant)


def entry_json(entry: RecallLogEntry) -> RecallLogEntryJson:
    return {
        "at": iso(entry.at) or "",
        "subject": entry.subject,
        "query": entry.query,
        "arguments": entry.arguments,
        "memories": [
            {"id": h.id, "namespace": h.namespace, "score": h.score, "scores": cast(ScoreParts, h.parts)}
            for h in entry.hits
        ],
    }

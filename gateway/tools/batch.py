"""`write_memories`: up to `HINDSIGHT_MAX_BATCH_ITEMS` statements in one call, each answered as `write_memory`
would answer it, for an agent importing history.

- **Validation.** The call's shape is checked strictly by the boundary like any tool's arguments: an unknown
  field in an item, a wrong JSON type, a missing `content`, more items than the limit or two items sharing a
  `request_id` refuse the whole call (`invalid_argument` naming `items.<i>.<field>`; nothing is written). What
  the engine checks of each item's values (bounds, namespace grants, timestamps) is that item's own `error`;
  the other items are written.
- **Outcomes.** One entry per item, in order, with its `index`: the `write_memory` answer (`status`, `id`,
  `namespace`, `superseded`, `reason`) or an `error` with the stable code of `gateway.errors`. The engine writes
  the items in order with the outcomes of single writes (`memory.write.batch`): a repeat within the batch is
  skipped, a later value supersedes an earlier one. A backend failure stops the batch; that item and the later
  ones answer `backend_unavailable` (retryable) and were not written.
- **Idempotency per item.** An item's `request_id` is a `write_memory` request id: the key is tenant + subject +
  `write_memory` + request id, the fingerprint that of the `write_memory` arguments the item stands for (the
  batch's `namespace` filled in, `explain` false). So a retried batch replays the items already done
  (`replayed: true`, their first answers) and writes the rest, and a `write_memory` retry of one item replays it
  too. Each item's claim is held (and renewed) while the batch runs and completed as soon as the batch returns;
  after a crash mid-batch the claims run out and the retry runs the undone items, the engine completing any
  whose memory was stored before its record (`memory.write.writer`, step 2). The call itself keeps no answer: the
  `Idempotency-Key` header does not apply to it (the boundary skips whole-call idempotency for this tool).
- **Rate limits.** A batch costs one write token per item (`gateway.web.rate_limit_gate`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, cast

from mcp.server.mcpserver import MCPServer
from pydantic import WithJsonSchema

from gateway.answers.batch import BatchWriteAnswer, ItemAnswer
from gateway.errors import failure_from_exception
from gateway.operations import WriteArguments
from gateway.tools.boundary import PER_ITEM_IDEMPOTENCY_META, WRITES, ToolCall, current_call
from gateway.tools.idempotent import claims
from memory.errors import InvalidArgument, MemoryEngineError
from memory.models import WriteOutcome
from memory.requests import WriteRequest
from memory.validation import check_request_id
from tenancy.errors import IdempotencyConflict
from tenancy.limits import IdempotencyKey

ITEM_TOOL = "write_memory"  # an item is a write_memory call: its request id, provenance and stored answer


WriteItem = WriteArguments  # one statement of a batch: write_memory's arguments but explain


# What write_memories publishes of its items: objects with write_memory's arguments, said in a few words rather
# than repeating write_memory's schema (some 185 tokens in every agent's context, issue #30); `WriteItem` still
# checks each item as strictly as write_memory checks its arguments.
ITEMS_SCHEMA: dict[str, Any] = {
    "type": "array",
    "items": {"type": "object", "required": ["content"]},
    "description": "Each: write_memory's arguments but explain.",
}


def register_batch_tools(server: MCPServer) -> None:
    @server.tool(annotations=WRITES, meta={PER_ITEM_IDEMPOTENCY_META: True})
    async def write_memories(
        items: Annotated[list[WriteItem], WithJsonSchema(ITEMS_SCHEMA)],
        namespace: str | None = None,
    ) -> BatchWriteAnswer:
        """Write many memories in one call (importing history), each as write_memory would."""
        return await write_items(current_call(), items, namespace)


async def write_items(call: ToolCall, items: Sequence[WriteItem], namespace: str | None) -> BatchWriteAnswer:
    limit = call.runtime.memories.limits.max_batch_items
    if len(items) > limit:
        raise InvalidArgument(f"write_memories: at most {limit} items per call (HINDSIGHT_MAX_BATCH_ITEMS)")
    _refuse_shared_request_ids(items)
    results: list[ItemAnswer | None] = [None] * len(items)
    keys: dict[int, IdempotencyKey] = {}
    async with claims(call.runtime) as held:
        for index, item in enumerate(items):
            if item.request_id is None:
                continue
            key = IdempotencyKey(call.principal.tenant, call.principal.subject, ITEM_TOOL, item.request_id)
            try:
                replay = await held.begin(key, _write_memory_arguments(item, namespace))
            except IdempotencyConflict as exc:
                results[index] = _error(index, exc)
                continue
            if replay is not None:
                results[index] = cast(ItemAnswer, {"index": index, **replay.response, "replayed": True})
            else:
                keys[index] = key
        todo: list[tuple[int, WriteRequest]] = []
        for index, item in enumerate(items):
            if results[index] is None:
                try:
                    todo.append((index, _request(call, item, namespace)))
                except MemoryEngineError as exc:
                    results[index] = _error(index, exc)
        written = await held.run(lambda: call.runtime.memories.write_many(call.scope, [request for _, request in todo]))
        for (index, _), outcome in zip(todo, written, strict=True):
            results[index] = _answer(index, outcome)
        for index, key in keys.items():
            answer = results[index]
            if answer is not None and "error" not in answer:
                await held.complete(key, {k: v for k, v in answer.items() if k != "index"})
    done = [answer for answer in results if answer is not None]
    return {
        "results": done,
        "created": sum(1 for a in done if a.get("status") == "created"),
        "updated": sum(1 for a in done if a.get("status") == "updated"),
        "skipped": sum(1 for a in done if a.get("status") == "skipped"),
        "failed": sum(1 for a in done if "error" in a),
    }


def _refuse_shared_request_ids(items: Sequence[WriteItem]) -> None:
    seen: dict[str, int] = {}
    for index, item in enumerate(items):
        if item.request_id is None:
            continue
        check_request_id(item.request_id)
        if item.request_id in seen:
            raise InvalidArgument(
                f"write_memories: items.{seen[item.request_id]} and items.{index} share a request_id; "
                "each item needs its own"
            )
        seen[item.request_id] = index


def _write_memory_arguments(item: WriteItem, namespace: str | None) -> dict[str, Any]:
    """The arguments of the `write_memory` call the item stands for, as that tool's boundary checks them."""
    arguments = item.model_dump()
    arguments["namespace"] = item.namespace if item.namespace is not None else namespace
    arguments["explain"] = False
    return arguments


def _request(call: ToolCall, item: WriteItem, namespace: str | None) -> WriteRequest:
    return item.request(call.principal.subject, namespace=namespace, tool=ITEM_TOOL)


def _answer(index: int, outcome: WriteOutcome | MemoryEngineError) -> ItemAnswer:
    if isinstance(outcome, MemoryEngineError):
        return _error(index, outcome)
    answer: ItemAnswer = {
        "index": index,
        "status": outcome.status.value,
        "id": outcome.id,
        "namespace": outcome.memory.namespace,
        "superseded": outcome.superseded,
    }
    if outcome.reason:
        answer["reason"] = outcome.reason
    return answer


def _error(index: int, exc: Exception) -> ItemAnswer:
    failure = failure_from_exception(exc, "write_memories")
    return {"index": index, "error": {"code": failure.code, "message": failure.message, "retryable": failure.retryable}}

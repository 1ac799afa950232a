"""The MCP tools (docs/TOOLS.md § "The MCP tools: reference"). Names, arguments and answers (`gateway.answers.shapes`)
are a contract: clients and tests depend on them.

Each tool only translates its arguments into an engine request and the engine's answer into JSON; scopes,
idempotency, audit, metrics and errors are the boundary's (`gateway.tools.boundary`), validation the engine's and
`gateway.tools.arguments`'.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, cast

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

from gateway.answers.serialize import memory_json, session_json, write_explanation
from gateway.answers.shapes import (
    ChangedAnswer,
    ListAnswer,
    RecallAnswer,
    SessionAnswer,
    TurnAnswer,
    WhoamiAnswer,
    WriteAnswer,
)
from gateway.operations import RecallArguments, WriteArguments, taking
from gateway.operations.sessions import ListArguments, StateArguments, TurnArguments
from gateway.operations.signature import option
from gateway.recall_answer import (
    INLINE_ANSWER_HITS,
    recall_answer,
    session_namespace,
)
from gateway.recall_answer.provenance import policy_for, with_authors, withheld_untrusted
from gateway.tools.boundary import READ_ONLY, WRITES, Namespace, RequestId, SessionId, current_call
from gateway.tools.recall_log import log_recall
from memory import cpu_meter
from memory.requests import ListRequest, StateUpdate, TurnRequest

Tool = Callable[..., Awaitable[Any]]
TOOLS: list[tuple[Tool, ToolAnnotations]] = []  # every tool of this module, in the order tools/list shows them


def tool(annotations: ToolAnnotations) -> Callable[[Tool], Tool]:
    """Declare a module-level function an MCP tool (registered by `register_tools`)."""

    def declare(function: Tool) -> Tool:
        TOOLS.append((function, annotations))
        return function

    return declare


def register_tools(server: MCPServer) -> None:
    for function, hints in TOOLS:
        server.tool(annotations=hints)(function)


@tool(WRITES)
@taking(WriteArguments, option("explain", bool, False))
async def write_memory(explain: bool = False, **fields: Any) -> WriteAnswer:
    """Remember a fact, preference, decision or event: one self-contained statement per call."""
    call = current_call()
    arguments = WriteArguments.model_construct(**fields)
    outcome = await call.runtime.memories.write(call.scope, arguments.request(call.principal.subject))
    answer: dict[str, Any] = {
        "status": outcome.status.value,
        "id": outcome.id,  # None when nothing was stored (low-information content)
        "namespace": outcome.memory.namespace,
        "superseded": outcome.superseded,
    }
    if outcome.reason:
        answer["reason"] = outcome.reason
    if explain:
        answer["explain"] = write_explanation(outcome)
    return cast(WriteAnswer, answer)


@tool(READ_ONLY)
@taking(RecallArguments)
async def recall_memory(**fields: Any) -> RecallAnswer:
    """Recall what you know about a question or task, before answering when past conversations, preferences
    or decisions may matter: lines "[n] score content" under their day, best first (format context: after
    the session's state and turns)."""
    call = current_call()
    arguments = RecallArguments.model_construct(**fields)
    view = arguments.view(call.runtime.memories.limits)
    hits = await call.runtime.memories.recall(call.scope, arguments.request(view))
    context = arguments.format == "context"
    policy = policy_for(call.runtime.settings, call.scope.tenant)
    hits, withheld = withheld_untrusted(hits, policy, call.principal.subject, context=context)
    hits = with_authors(hits, call.principal.subject)
    session = None
    if context and arguments.session_id is not None:
        where = session_namespace(arguments.namespaces, call.scope.default_write_namespace)
        session = await call.runtime.sessions.get(call.scope, arguments.session_id, where)
    # a few hits' lines on the event loop (~0.1 ms for 8), where a worker-thread hop would cost more CPU than it
    # frees (memory.stores.edge_search); more in a worker thread (50 hits fitted to a budget: 3-6 ms)
    answer = await cpu_meter.run_sync(
        recall_answer, hits, view, session, withheld, inline=len(hits) <= INLINE_ANSWER_HITS
    )
    call.say(answer.text)
    await log_recall(call, arguments.query, answer.returned, **arguments.logged())  # opted-in tenants only
    return answer.body


@tool(WRITES)
async def forget_memory(
    id: str,
    reason: str | None = None,
    request_id: RequestId = None,
) -> ChangedAnswer:
    """Forget a wrong or outdated memory, or one the user wants forgotten."""
    call = current_call()
    memory = await call.runtime.memories.forget(call.scope, id, reason)
    return {"status": "forgotten", "id": memory.id, "namespace": memory.namespace}


@tool(WRITES)
async def restore_memory(
    id: str,
    request_id: RequestId = None,
) -> ChangedAnswer:
    """Bring back a forgotten or archived memory."""
    call = current_call()
    memory = await call.runtime.memories.restore(call.scope, id)
    return {"status": "restored", "id": memory.id, "namespace": memory.namespace}


@tool(READ_ONLY)
@taking(ListArguments)
async def list_memories(**fields: Any) -> ListAnswer:
    """Page through stored memories, oldest first."""
    call = current_call()
    page = await call.runtime.memories.list(
        call.scope, ListArguments.model_construct(**fields).engine_request(ListRequest)
    )
    return {"memories": [memory_json(m) for m in page.memories], "next_cursor": page.next_cursor}


@tool(WRITES)
@taking(TurnArguments)
async def record_turn(**fields: Any) -> TurnAnswer:
    """Add a conversation turn to a session's working memory; older turns become memories."""
    call = current_call()
    request = TurnArguments.model_construct(**fields).engine_request(TurnRequest, subject=call.principal.subject)
    outcome = await call.runtime.sessions.record_turn(call.scope, request)
    return {"turns": len(outcome.session.turns), "extracted": outcome.extracted}


@tool(READ_ONLY)
async def get_working_memory(
    session_id: SessionId,
    namespace: Namespace = None,
) -> SessionAnswer:
    """Read a session's working memory: its state and recent turns."""
    call = current_call()
    return session_json(await call.runtime.sessions.get(call.scope, session_id, namespace))


@tool(WRITES)
@taking(StateArguments)
async def update_working_memory(**fields: Any) -> SessionAnswer:
    """Save a session's task state (goals, open questions) between turns."""
    call = current_call()
    update = StateArguments.model_construct(**fields).engine_request(StateUpdate, subject=call.principal.subject)
    return session_json(await call.runtime.sessions.update_state(call.scope, update))


@tool(READ_ONLY)
async def whoami() -> WhoamiAnswer:
    """Show who this token is and which namespaces it may read and write."""
    call = current_call()
    return {
        "subject": call.principal.subject,
        "tenant": call.principal.tenant,
        "namespaces": {"read": list(call.scope.all_readable), "write": list(call.scope.writable)},
        "scopes": sorted(call.principal.scopes),
    }

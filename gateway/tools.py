"""The MCP tools of DESIGN §5. Names, arguments and answers (`gateway.answers`) are a contract: clients and
tests depend on them.

Each tool only translates its arguments into an engine request and the engine's answer into JSON; scopes,
idempotency, audit, metrics and errors are the boundary's (`gateway.tool_support`), validation the engine's and
`gateway.arguments`'.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, cast

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations
from pydantic import Field

from gateway.answers import (
    ChangedAnswer,
    Hit,
    ListAnswer,
    RecallAnswer,
    SessionAnswer,
    TurnAnswer,
    WhoamiAnswer,
    WriteAnswer,
)
from gateway.context_block import Order, context_answer, memories_answer, session_namespace
from gateway.recall_logging import log_recall
from gateway.serialize import hit_json, memory_json, session_json, write_explanation
from gateway.tool_support import current_call
from memory.models import RecallHit
from memory.requests import ListRequest, RecallRequest, StateUpdate, TurnRequest, WriteRequest
from memory.validation import check_token_budget, parse_instant

Kind = Literal["episodic", "semantic"]
RequestId = Annotated[
    str | None,
    Field(description="Client-chosen id for this write (letters, digits, ':_.@-'); recorded as provenance."),
]
SessionId = Annotated[str, Field(description="The conversation/session this belongs to (1-128 chars).")]
Namespace = Annotated[
    str | None,
    Field(description="Memory namespace, e.g. 'user:42'. Omit to use the token's default write namespace."),
]

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)


def register_tools(server: MCPServer) -> None:
    @server.tool(annotations=WRITES)
    async def write_memory(
        content: Annotated[str, Field(description="The fact, event, decision or preference, as one statement.")],
        namespace: Namespace = None,
        kind: Annotated[
            Kind,
            Field(description="episodic: something that happened or was said; semantic: a lasting fact or preference."),
        ] = "episodic",
        importance: Annotated[float | None, Field(description="0..1; how much this matters later.")] = None,
        tags: Annotated[list[str] | None, Field(description="Short labels to filter by later.")] = None,
        ttl_seconds: Annotated[int | None, Field(description="Forget automatically after this many seconds.")] = None,
        session_id: Annotated[str | None, Field(description="Session the memory came from.")] = None,
        occurred_at: Annotated[str | None, Field(description="ISO 8601 time it happened (imported history).")] = None,
        share_to: Annotated[
            list[str] | None, Field(description="Also write a linked copy to these shared namespaces.")
        ] = None,
        metadata: Annotated[
            dict[str, Any] | None,
            Field(
                description="JSON object stored as is. 'speaker' (a name, at most 40 chars) says who said the "
                "content when it has no 'Name: ' prefix: first person is theirs, and recall finds it by their name."
            ),
        ] = None,
        force: Annotated[
            bool, Field(description="Store it as a new memory whatever it repeats, and change no other memory.")
        ] = False,
        explain: Annotated[
            bool, Field(description="Also return what each rule decided (chit-chat, expiry, importance, conflicts).")
        ] = False,
        request_id: RequestId = None,
    ) -> WriteAnswer:
        """Save something worth remembering beyond this conversation: a fact about the user, a decision, a
        preference, an event. Write one self-contained statement per call ("The user's deploy target is AWS
        eu-west-1"), not a transcript. Identical repeats are skipped. Returns the memory id."""
        call = current_call()
        outcome = await call.runtime.memories.write(
            call.scope,
            WriteRequest(
                content=content,
                subject=call.principal.subject,
                namespace=namespace,
                kind=kind,
                importance=importance,
                tags=tags,
                ttl_seconds=ttl_seconds,
                session_id=session_id,
                occurred_at=parse_instant(occurred_at, "occurred_at"),
                share_to=share_to,
                metadata=metadata,
                force=force,
                request_id=request_id,
            ),
        )
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

    @server.tool(annotations=READ_ONLY)
    async def recall_memory(
        query: Annotated[str, Field(description="What you want to remember, in natural language.")],
        namespaces: Annotated[
            list[str] | None,
            Field(description="Limit to these namespaces; omit for every namespace the token can read."),
        ] = None,
        top_k: Annotated[int | None, Field(description="How many memories to return (default 8).")] = None,
        kinds: Annotated[list[Kind] | None, Field(description="Only these kinds.")] = None,
        tags: Annotated[list[str] | None, Field(description="Only memories with any of these tags.")] = None,
        session_id: Annotated[
            str | None,
            Field(
                description="Only memories from this session; with format 'context' the block also starts with "
                "its working memory (state, recent turns)."
            ),
        ] = None,
        since: Annotated[str | None, Field(description="Only memories created at or after this time.")] = None,
        until: Annotated[str | None, Field(description="Only memories created at or before this time.")] = None,
        token_budget: Annotated[
            int | None,
            Field(
                description="Keep the whole answer within this many tokens (counted with OpenAI's cl100k_base), "
                "leaving out whole memories."
            ),
        ] = None,
        include_superseded: Annotated[
            bool, Field(description="Also return older memories that newer ones replaced (history).")
        ] = False,
        include_archived: Annotated[
            bool,
            Field(
                description="Also search the archive (old, rarely used memories maintenance set aside), by "
                "keywords only; such hits are marked 'archived' (restore_memory brings one back)."
            ),
        ] = False,
        detail: Annotated[
            Literal["lean", "full"],
            Field(
                description="lean: id, namespace, content, when and score per memory; full: every stored field "
                "(kind, importance, tags, metadata, session, provenance, times, links)."
            ),
        ] = "lean",
        explain: Annotated[bool, Field(description="Include the parts of each score.")] = False,
        format: Annotated[
            Literal["memories", "context"],
            Field(
                description="memories: the memories as JSON; context: also 'context', one prompt-ready text block "
                "citing each memory as [id] with its date (and the session's working memory with session_id)."
            ),
        ] = "memories",
        order: Annotated[
            Order,
            Field(
                description="score: most relevant first; time: oldest first (how things developed); importance: "
                "highest first (constraints first). A token_budget keeps the most important (importance) or the "
                "most relevant (otherwise)."
            ),
        ] = "score",
    ) -> RecallAnswer:
        """Look up what you remember that is relevant to a question or task, before answering. Returns the best
        matching memories, ranked by relevance, recency, importance and use; with format 'context', also as one
        text block to put in your prompt. Call it whenever earlier conversations, user preferences or past
        decisions might matter."""
        call = current_call()
        budget = check_token_budget(token_budget)  # the budget is the whole answer's
        hits = await call.runtime.memories.recall(
            call.scope,
            RecallRequest(
                query=query,
                namespaces=namespaces,
                top_k=top_k,
                kinds=kinds,
                tags=tags,
                session_id=session_id,
                since=parse_instant(since, "since"),
                until=parse_instant(until, "until"),
                include_superseded=include_superseded,
                include_archived=include_archived,
                explain=explain,
            ),
        )

        def wire(hit: RecallHit) -> Hit:
            return hit_json(hit, full=detail == "full", explain=explain)

        if format == "memories":
            answer = memories_answer(hits, order, budget, wire)
        else:
            session = None
            if session_id is not None:
                where = session_namespace(namespaces, call.scope.default_write_namespace)
                session = await call.runtime.sessions.get(call.scope, session_id, where)
            answer = context_answer(hits, order, budget, wire, session)
        await log_recall(  # opted-in tenants only; never fails the recall
            call, query, hits, answer, namespaces=namespaces, top_k=top_k, kinds=kinds, tags=tags,
            session_id=session_id, since=since, until=until, token_budget=token_budget, format=format, order=order,
        )  # fmt: skip
        return answer

    @server.tool(annotations=WRITES)
    async def forget_memory(
        id: Annotated[str, Field(description="The memory id to forget.")],
        reason: Annotated[str | None, Field(description="Why (kept for audit).")] = None,
        request_id: RequestId = None,
    ) -> ChangedAnswer:
        """Forget a memory that is wrong, outdated or that the user asked you to forget. It stops being
        recalled at once; it can be brought back with restore_memory."""
        call = current_call()
        memory = await call.runtime.memories.forget(call.scope, id, reason)
        return {"status": "forgotten", "id": memory.id, "namespace": memory.namespace}

    @server.tool(annotations=WRITES)
    async def restore_memory(
        id: Annotated[str, Field(description="The id of a forgotten or archived memory.")],
        request_id: RequestId = None,
    ) -> ChangedAnswer:
        """Bring back a memory that was forgotten with forget_memory, or one maintenance archived (recalled again
        by default)."""
        call = current_call()
        memory = await call.runtime.memories.restore(call.scope, id)
        return {"status": "restored", "id": memory.id, "namespace": memory.namespace}

    @server.tool(annotations=READ_ONLY)
    async def list_memories(
        namespace: Annotated[str | None, Field(description="Only this namespace; omit for all readable.")] = None,
        kind: Annotated[Kind | None, Field(description="Only this kind.")] = None,
        include_deleted: Annotated[bool, Field(description="Also list forgotten memories.")] = False,
        hidden: Annotated[
            Literal["expired", "superseded", "merged", "forgotten", "passed", "archived"] | None,
            Field(
                description="Only memories the engine hid in this state, each with its reason in metadata; "
                "'passed': plans whose day has passed (kept, demoted in recall); 'archived': old, rarely used "
                "memories maintenance moved to the archive (archive_reason)."
            ),
        ] = None,
        limit: Annotated[int | None, Field(description="Page size (default 50).")] = None,
        cursor: Annotated[str | None, Field(description="next_cursor from the previous page.")] = None,
    ) -> ListAnswer:
        """Page through stored memories in the order they were created, e.g. to review or clean up what is
        remembered. For finding relevant memories use recall_memory instead."""
        call = current_call()
        page = await call.runtime.memories.list(
            call.scope,
            ListRequest(
                namespace=namespace,
                kind=kind,
                include_deleted=include_deleted,
                limit=limit,
                cursor=cursor,
                hidden=hidden,
            ),
        )
        return {"memories": [memory_json(m) for m in page.memories], "next_cursor": page.next_cursor}

    @server.tool(annotations=WRITES)
    async def record_turn(
        session_id: SessionId,
        role: Annotated[Literal["user", "assistant", "system", "tool"], Field(description="Who spoke.")],
        content: Annotated[str, Field(description="What was said.")],
        occurred_at: Annotated[str | None, Field(description="When the turn was said.")] = None,
        namespace: Namespace = None,
        request_id: RequestId = None,
    ) -> TurnAnswer:
        """Append a conversation turn to the session's working memory (the last few turns are kept; older
        turns move into long-term memory automatically)."""
        call = current_call()
        outcome = await call.runtime.sessions.record_turn(
            call.scope,
            TurnRequest(
                session_id=session_id,
                role=role,
                content=content,
                subject=call.principal.subject,
                occurred_at=parse_instant(occurred_at, "occurred_at"),
                namespace=namespace,
                request_id=request_id,
            ),
        )
        return {"turns": len(outcome.session.turns), "extracted": outcome.extracted}

    @server.tool(annotations=READ_ONLY)
    async def get_working_memory(
        session_id: SessionId,
        namespace: Annotated[str | None, Field(description="Namespace of the session; omit for the default.")] = None,
    ) -> SessionAnswer:
        """Read a session's working memory: its state object and its most recent turns."""
        call = current_call()
        return session_json(await call.runtime.sessions.get(call.scope, session_id, namespace))

    @server.tool(annotations=WRITES)
    async def update_working_memory(
        session_id: SessionId,
        state: Annotated[dict[str, Any], Field(description="JSON object: the session's task state.")],
        merge: Annotated[
            bool, Field(description="Deep-merge into the current state (null deletes a key); false replaces it.")
        ] = True,
        ttl_seconds: Annotated[int | None, Field(description="Keep the session this long (default 24 h).")] = None,
        namespace: Namespace = None,
        request_id: RequestId = None,
    ) -> SessionAnswer:
        """Save the current task state for this session (goals, open questions, variables), so it survives
        between turns. Expires after its TTL."""
        call = current_call()
        session = await call.runtime.sessions.update_state(
            call.scope,
            StateUpdate(session_id=session_id, state=state, merge=merge, ttl_seconds=ttl_seconds, namespace=namespace),
        )
        return session_json(session)

    @server.tool(annotations=READ_ONLY)
    async def whoami() -> WhoamiAnswer:
        """Show who this token is and which memory namespaces it may read and write."""
        call = current_call()
        return {
            "subject": call.principal.subject,
            "tenant": call.principal.tenant,
            "namespaces": {"read": list(call.scope.all_readable), "write": list(call.scope.writable)},
            "scopes": sorted(call.principal.scopes),
        }

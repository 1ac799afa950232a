"""`SessionService`: working memory (docs/TOOLS.md § "Working memory"): a session's state object and its window of
recent turns.

Turns that fall out of the window are extracted into episodic memory through the normal write path, so they
stay recallable after the session's TTL runs out.
"""

from __future__ import annotations

from dataclasses import dataclass

from memory.errors import InvalidArgument
from memory.models import Turn, WorkingMemory, WriteStatus
from memory.ports import WorkingMemoryStore
from memory.requests import StateUpdate, TurnRequest, WriteRequest
from memory.scope import NamespaceScope
from memory.service import MemoryService
from memory.validation import (
    check_content,
    check_json_object,
    check_positive_seconds,
    check_request_id,
    check_role,
    check_session_id,
)
from memory.working.in_process import merge_state


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    session: WorkingMemory
    extracted: list[str]


class SessionService:
    def __init__(self, store: WorkingMemoryStore, memories: MemoryService) -> None:
        self.store = store
        self.memories = memories
        self.limits = memories.limits

    def read_namespace(self, scope: NamespaceScope, namespace: str | None) -> str:
        """The namespace a session read names, or the scope's default."""
        if namespace is not None:
            return scope.read_targets([namespace])[0]
        if scope.default_write_namespace is not None:
            return scope.default_write_namespace
        targets = scope.read_targets(None)
        if not targets:  # an admin scope without grants spans the tenant: it must name the namespace
            raise InvalidArgument("namespace is required: this token has no default namespace")
        return targets[0]

    async def get(self, scope: NamespaceScope, session_id: str, namespace: str | None = None) -> WorkingMemory:
        sid = check_session_id(session_id, required=True)
        assert sid is not None
        ns = self.read_namespace(scope, namespace)
        session = await self.store.get(scope, ns, sid)
        if session is None:  # an unknown or expired session reads as empty, like a fresh one
            now = self.memories.clock.now()
            return WorkingMemory(session_id=sid, namespace=ns, state={}, turns=[], expires_at=now)
        return session

    async def record_turn(self, scope: NamespaceScope, request: TurnRequest) -> TurnOutcome:
        """Append a turn. Turns that will fall out of the window are written to episodic memory *before* the
        append, so a failed write loses nothing (the caller retries; repeats are skipped as duplicates)."""
        sid = check_session_id(request.session_id, required=True)
        assert sid is not None
        role = check_role(request.role)
        content = check_content(request.content, self.limits)
        check_request_id(request.request_id)
        namespace = scope.write_target(request.namespace)
        occurred = request.occurred_at or self.memories.clock.now()
        window = self.limits.working_window
        current = await self.store.get(scope, namespace, sid)
        turns = current.turns if current is not None else []
        leaving = turns[: max(0, len(turns) + 1 - window)]
        extracted = [await self._extract(scope, request, namespace, sid, turn) for turn in leaving]
        session, evicted = await self.store.append_turn(
            scope,
            namespace,
            sid,
            Turn(role=role, content=content, occurred_at=occurred),
            window,
            self.limits.working_ttl_seconds,
            subject=request.subject,
        )
        for turn in evicted:  # a concurrent append may have pushed out turns this call did not foresee
            if turn not in leaving:
                extracted.append(await self._extract(scope, request, namespace, sid, turn))
        return TurnOutcome(session, [memory_id for memory_id in extracted if memory_id is not None])

    async def write_turns(
        self, scope: NamespaceScope, namespace: str, session_id: str, subject: str, turns: list[Turn]
    ) -> list[str]:
        """Write turns to episodic memory verbatim, as leaving the window does (a session's end keeps the turns
        still in its window this way); returns the ids of the memories written."""
        request = TurnRequest(session_id=session_id, role="user", content=".", subject=subject, namespace=namespace)
        written = [await self._extract(scope, request, namespace, session_id, turn) for turn in turns]
        return [memory_id for memory_id in written if memory_id is not None]

    async def _extract(
        self, scope: NamespaceScope, request: TurnRequest, namespace: str, session_id: str, turn: Turn
    ) -> str | None:
        text = f"{turn.role}: {turn.content}"
        if len(text) > self.limits.max_content_chars:  # keep the whole turn; the role stays in metadata
            text = turn.content
        outcome = await self.memories.write(
            scope,
            WriteRequest(
                content=text,
                metadata={"role": turn.role},
                subject=request.subject,
                namespace=namespace,
                session_id=session_id,
                occurred_at=turn.occurred_at,
                request_id=request.request_id,
                tool="record_turn",
            ),
        )
        return outcome.memory.id if outcome.status is not WriteStatus.SKIPPED else None

    async def update_state(self, scope: NamespaceScope, update: StateUpdate) -> WorkingMemory:
        sid = check_session_id(update.session_id, required=True)
        assert sid is not None
        state = check_json_object(update.state, self.limits.max_state_bytes, "state")
        ttl = check_positive_seconds(update.ttl_seconds, self.limits, "ttl_seconds")
        namespace = scope.write_target(update.namespace)
        if update.merge:  # the merged result must fit too, or merges could grow a session without bound
            current = await self.store.get(scope, namespace, sid)
            merged = merge_state(current.state if current is not None else {}, state)
            check_json_object(merged, self.limits.max_state_bytes, "state (after merging)")
        return await self.store.update_state(
            scope,
            namespace,
            sid,
            state,
            bool(update.merge),
            ttl or self.limits.working_ttl_seconds,
            subject=update.subject,
        )

"""`AgentSessions`: the agent loop of the design documents (issue #17). An agent's turn is a stream of events kept
whole (`memory.events`); the facts in it are extracted into long-term memory through the normal write path, each
citing the events it came from (`metadata.source_event_ids`); a task session starts by loading background for its
goal into working memory and ends by sinking what is left into long-term memory, archiving the working memory and
clearing it. Sessions an agent never ended are swept by maintenance and extracted the same way.

Nothing said is lost on the way: events are stored before anything is extracted from them; a session's extraction
marks its progress (`extracted_through`) only after every fact of it was written, so an extraction cut short is
redone by the next call, and the facts it had written are skipped as exact repeats; a session ends at most once
(`EventStore.end_session` is atomic), and working memory is cleared only after its archive is stored. The
extraction itself is `memory.agent.extraction`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from memory.agent.extraction import ExtractionOutcome, Extractor, SessionExtraction
from memory.errors import InvalidArgument
from memory.events import EVENT_TYPES, Event, EventStore, SessionRecord
from memory.ids import new_memory_id
from memory.models import RecallHit
from memory.requests import RecallRequest
from memory.scope import NamespaceScope
from memory.validation import check_content, check_json_object, check_request_id, check_session_id, whole_number
from memory.values import check_text
from memory.working.service import SessionService

MAX_GOAL_CHARS = 1_000
MAX_TASK_ID_CHARS = 128
MAX_CALL_ID_CHARS = 128
EXTRACTION_BATCH = 200  # events handed to the extractor at once


@dataclass(frozen=True, slots=True)
class EventRequest:
    session_id: str
    type: str
    content: str
    subject: str
    namespace: str | None = None
    task_id: str | None = None
    metadata: dict[str, Any] | None = None
    occurred_at: datetime | None = None
    request_id: str | None = None


@dataclass(frozen=True, slots=True)
class EventOutcome:
    event: Event
    extraction: ExtractionOutcome


@dataclass(frozen=True, slots=True)
class StartOutcome:
    session: SessionRecord
    background: list[RecallHit]


@dataclass(frozen=True, slots=True)
class EndOutcome:
    session: SessionRecord
    extraction: ExtractionOutcome
    already_ended: bool = False
    turns_kept: list[str] = field(default_factory=list)  # record_turn turns still in the window, written verbatim


@dataclass(frozen=True, slots=True)
class ReextractOutcome:
    extraction: ExtractionOutcome
    superseded: list[str]


def check_event_type(value: object) -> str:
    if value not in EVENT_TYPES:
        raise InvalidArgument(f"type must be one of {', '.join(sorted(EVENT_TYPES))}")
    return str(value)


def _optional_label(value: object, name: str, limit: int) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > limit:
        raise InvalidArgument(f"{name} must be a non-empty string of at most {limit} characters")
    check_text(value, name)
    return value


class AgentSessions:
    def __init__(
        self,
        events: EventStore,
        sessions: SessionService,
        extractor: Extractor,
        *,
        idle_seconds: int,
        background_top_k: int = 5,
    ) -> None:
        self.events = events
        self.sessions = sessions
        self.memories = sessions.memories
        self.extraction = SessionExtraction(events, sessions.memories, extractor, batch=EXTRACTION_BATCH)
        self.idle = timedelta(seconds=idle_seconds)
        self.background_top_k = background_top_k
        self.window = sessions.limits.working_window

    # -- events ---------------------------------------------------------------------------------------------
    async def record(self, scope: NamespaceScope, request: EventRequest) -> EventOutcome:
        """Store one event durably; events older than the working window that were not extracted yet are
        extracted now (the rest wait for the window to move, the session's end or the sweep)."""
        sid = check_session_id(request.session_id, required=True)
        assert sid is not None
        kind = check_event_type(request.type)
        content = check_content(request.content, self.sessions.limits)
        metadata = check_json_object(request.metadata, self.sessions.limits.max_metadata_bytes, "metadata")
        request_id = check_request_id(request.request_id)
        task_id = _optional_label(request.task_id, "task_id", MAX_TASK_ID_CHARS)
        call_id = _optional_label(metadata.get("call_id"), "metadata.call_id", MAX_CALL_ID_CHARS)
        tool = _optional_label(metadata.get("tool"), "metadata.tool", MAX_CALL_ID_CHARS)
        if kind == "tool_result" and call_id is None:
            raise InvalidArgument("a tool_result needs metadata.call_id: the id of the tool_call it answers")
        namespace = scope.write_target(request.namespace)
        now = self.memories.clock.now()
        occurred = request.occurred_at or now
        event = Event(
            id=new_memory_id(int(now.timestamp() * 1000)),
            namespace=namespace,
            session_id=sid,
            task_id=task_id,
            type=kind,  # type: ignore[arg-type]
            content=content,
            metadata=metadata,
            occurred_at=occurred,
            recorded_at=now,
            subject=request.subject,
            request_id=request_id,
            call_id=call_id,
            tool=tool,
        )
        stored = await self.events.append(scope, event)
        extraction = await self.extraction.pending(scope, namespace, sid, request.subject, keep=self.window)
        return EventOutcome(stored, extraction)

    async def list_events(
        self,
        scope: NamespaceScope,
        session_id: str,
        namespace: str | None = None,
        task_id: str | None = None,
        after: str | None = None,
        limit: int | None = None,
    ) -> list[Event]:
        sid = check_session_id(session_id, required=True)
        assert sid is not None
        ns = self._readable(scope, namespace)
        size = limit if limit is not None else self.sessions.limits.default_list_limit
        most = self.sessions.limits.max_list_limit
        size = whole_number(size, most, f"limit must be a whole number from 1 to {most}")
        task = _optional_label(task_id, "task_id", MAX_TASK_ID_CHARS)
        return await self.events.events(scope, ns, sid, task_id=task, after=after, limit=size)

    # -- lifecycle ------------------------------------------------------------------------------------------
    async def start(
        self,
        scope: NamespaceScope,
        session_id: str,
        subject: str,
        goal: str | None = None,
        namespace: str | None = None,
    ) -> StartOutcome:
        """Open (or reopen) a session; with a goal, the most relevant long-term memories are loaded into its
        working memory (`state.background`: id and content) and returned."""
        sid = check_session_id(session_id, required=True)
        assert sid is not None
        if goal is not None:
            goal = check_content(goal, self.sessions.limits, field="goal")
            if len(goal) > MAX_GOAL_CHARS:
                raise InvalidArgument(f"goal is {len(goal)} characters; the limit is {MAX_GOAL_CHARS}")
        ns = scope.write_target(namespace)
        now = self.memories.clock.now()
        background: list[RecallHit] = []
        if goal is not None:
            background = await self.memories.recall(scope, RecallRequest(query=goal, top_k=self.background_top_k))
        record = await self.events.start_session(scope, ns, sid, goal, now)
        state: dict[str, Any] = {"session": {"status": "active", "started_at": record.started_at.isoformat()}}
        if goal is not None:
            state["session"]["goal"] = goal
            state["background"] = [{"id": h.memory.id, "content": h.memory.content} for h in background]
        ttl = self.sessions.limits.working_ttl_seconds
        await self.sessions.store.update_state(scope, ns, sid, state, True, ttl, subject=subject)
        return StartOutcome(record, background)

    async def end(
        self,
        scope: NamespaceScope,
        session_id: str,
        subject: str,
        namespace: str | None = None,
        *,
        reason: str = "ended",
    ) -> EndOutcome:
        """Extract what the session's events hold into long-term memory, write the record_turn turns still in
        its window verbatim (as leaving the window would), archive its working memory and clear it. Ending an
        ended session changes nothing and says so."""
        sid = check_session_id(session_id, required=True)
        assert sid is not None
        ns = scope.write_target(namespace)
        current = await self.events.session(scope, ns, sid)
        if current is not None and current.status == "ended":
            return EndOutcome(current, ExtractionOutcome(), already_ended=True)
        extraction = await self.extraction.all_pending(scope, ns, sid, subject)
        working = await self.sessions.store.get(scope, ns, sid)
        kept = await self.sessions.write_turns(scope, ns, sid, subject, working.turns if working else [])
        archive = None
        if working is not None:
            archive = {
                "state": working.state,
                "turns": [
                    {"role": t.role, "content": t.content, "occurred_at": t.occurred_at.isoformat()}
                    for t in working.turns
                ],
            }
        now = self.memories.clock.now()
        if current is None:  # a record_turn session never started: give it a record so its archive is kept
            current = await self.events.start_session(scope, ns, sid, None, now)
        ended = await self.events.end_session(scope, ns, sid, now, reason, archive)
        if ended is None:  # another caller ended it first: its archive stands
            record = await self.events.session(scope, ns, sid)
            return EndOutcome(record or current, extraction, already_ended=True, turns_kept=kept)
        await self.sessions.store.take(scope, ns, sid)
        return EndOutcome(ended, extraction, turns_kept=kept)

    async def sweep(self, scope: NamespaceScope) -> list[EndOutcome]:
        """End every session of the scope's tenant (an admin scope) idle past the idle TTL, as `end` would."""
        idle_before = self.memories.clock.now() - self.idle
        ended: list[EndOutcome] = []
        for record in await self.events.idle_sessions(scope, idle_before, limit=100):
            outcome = await self.end(scope, record.session_id, "hindsight-maintenance", record.namespace, reason="idle")
            ended.append(outcome)
        return ended

    async def reextract(
        self, scope: NamespaceScope, session_id: str, subject: str, namespace: str | None = None
    ) -> ReextractOutcome:
        """Extract the session again from all its events (admin): new facts are written, and the earlier extracted
        memories the new extraction did not reproduce are superseded by it (listable as hidden, with the
        reason)."""
        sid = check_session_id(session_id, required=True)
        assert sid is not None
        ns = scope.write_target(namespace)
        before = await self.extraction.extracted_memories(scope, ns, sid)
        events = await self.extraction.all_events(scope, ns, sid)
        extraction = await self.extraction.extract(scope, ns, sid, subject, events)
        kept = set(extraction.resolved)
        replacement = extraction.resolved[0] if extraction.resolved else None
        superseded: list[str] = []
        for memory in before:
            if memory.id in kept or memory.superseded_by is not None or memory.deleted_at is not None:
                continue
            reason = f"re-extraction of session {sid}"
            if replacement is None:
                await self.memories.forget(scope, memory.id, f"{reason} found no fact in it")
            else:
                await self.memories.supersede(scope, memory.id, replacement, reason)
            superseded.append(memory.id)
        if events:
            await self.events.mark_extracted(scope, ns, sid, events[-1].id)
        return ReextractOutcome(extraction, superseded)

    def _readable(self, scope: NamespaceScope, namespace: str | None) -> str:
        return self.sessions.read_namespace(scope, namespace)

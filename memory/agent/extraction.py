"""`SessionExtraction`: a task session's events extracted into long-term memory, for `AgentSessions`
(memory/agent/sessions.py).

The extractor (`Extractor`: rules, or an LLM falling back to them) reads the events as `SourceEvent`s, a bound tool
result as the `tool_result` of its call; each fact it finds is written through the normal write path, citing the
events it came from (`metadata.source_event_ids`, a bound result folded back into its call's id). A session's
progress (`extracted_through`) is marked only after every fact of a batch was written, so an extraction cut short
is redone by the next call and the facts it had written are skipped as exact repeats.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from memory.events import Event, EventStore
from memory.extraction import ExtractedFact, Extraction, SourceEvent
from memory.models import EXTRACTED, Memory, WriteStatus
from memory.requests import ListRequest, WriteRequest
from memory.scope import NamespaceScope
from memory.service import MemoryService

EXTRACT_TOOL = EXTRACTED  # the `source.tool` of every extracted memory


class Extractor(Protocol):
    """What `AgentSessions` needs of an extractor: the facts and how they were found (`RuleExtractor`, or
    `LlmExtractor` falling back to it)."""

    async def run(self, events: Sequence[SourceEvent]) -> Extraction: ...


@dataclass(frozen=True, slots=True)
class ExtractionOutcome:
    written: list[str] = field(default_factory=list)  # ids of the memories created (repeats not counted)
    resolved: list[str] = field(default_factory=list)  # ids every stored fact resolved to: created, updated, repeated
    facts: int = 0  # facts the extractor found
    events: int = 0  # events read
    method: str | None = None  # "rules" or "llm"; None when there was nothing to extract
    fallback_reason: str | None = None


def source_events(events: Sequence[Event]) -> list[SourceEvent]:
    """What the extractor reads: each event, and a bound tool result as the `tool_result` of its call (under the
    call's id with a `#result` suffix, folded back into the call's id in provenance)."""
    sources: list[SourceEvent] = []
    for event in events:
        speaker = event.metadata.get("speaker") if isinstance(event.metadata.get("speaker"), str) else None
        sources.append(
            SourceEvent(
                id=event.id,
                type=event.type,
                content=event.content,
                occurred_at=event.occurred_at,
                speaker=speaker,
                call_id=event.call_id,
                tool=event.tool,
            )
        )
        if event.result is not None:
            sources.append(
                SourceEvent(
                    id=f"{event.id}#result",
                    type="tool_result",
                    content=event.result,
                    occurred_at=event.result_at or event.occurred_at,
                    call_id=event.call_id or event.id,
                    tool=event.tool,
                )
            )
    return sources


def provenance(fact: ExtractedFact) -> list[str]:
    return list(dict.fromkeys(source.split("#", 1)[0] for source in fact.source_event_ids))


class SessionExtraction:
    """Reads a session's events from the event store and writes what the extractor finds in them through the
    memory service; see the module docstring."""

    def __init__(self, events: EventStore, memories: MemoryService, extractor: Extractor, *, batch: int) -> None:
        self.events = events
        self.memories = memories
        self.extractor = extractor
        self.batch = batch  # events handed to the extractor at once

    async def all_pending(
        self, scope: NamespaceScope, namespace: str, session_id: str, subject: str
    ) -> ExtractionOutcome:
        """Every event not extracted yet, batch by batch (an imported session may hold many)."""
        total = ExtractionOutcome()
        while True:
            batch = await self.pending(scope, namespace, session_id, subject, keep=0)
            if batch.events == 0:
                return total
            total = ExtractionOutcome(
                written=total.written + batch.written,
                resolved=total.resolved + batch.resolved,
                facts=total.facts + batch.facts,
                events=total.events + batch.events,
                method=batch.method if total.method in (None, batch.method) else "rules",
                fallback_reason=total.fallback_reason or batch.fallback_reason,
            )

    async def pending(
        self, scope: NamespaceScope, namespace: str, session_id: str, subject: str, *, keep: int
    ) -> ExtractionOutcome:
        """Extract the events after the session's `extracted_through`, but the last `keep` ones."""
        record = await self.events.session(scope, namespace, session_id)
        after = record.extracted_through if record is not None else None
        pending = await self.events.events(scope, namespace, session_id, after=after, limit=self.batch + keep)
        if len(pending) <= keep:
            return ExtractionOutcome()
        batch = pending[: len(pending) - keep]
        outcome = await self.extract(scope, namespace, session_id, subject, batch)
        await self.events.mark_extracted(scope, namespace, session_id, batch[-1].id)
        return outcome

    async def extract(
        self, scope: NamespaceScope, namespace: str, session_id: str, subject: str, events: Sequence[Event]
    ) -> ExtractionOutcome:
        """Write the facts found in `events` (progress is the caller's to mark)."""
        if not events:
            return ExtractionOutcome()
        extraction = await self.extractor.run(source_events(events))
        written: list[str] = []
        resolved: list[str] = []
        for fact in extraction.facts:
            sources = provenance(fact)
            outcome = await self.memories.write(
                scope,
                WriteRequest(
                    content=fact.content,
                    subject=subject,
                    namespace=namespace,
                    kind=fact.kind,
                    session_id=session_id,
                    occurred_at=fact.occurred_at,
                    metadata={"source_event_ids": sources, "extracted_by": extraction.method},
                    tool=EXTRACT_TOOL,
                ),
            )
            if outcome.stored:
                resolved.append(outcome.memory.id)
                if outcome.status is WriteStatus.CREATED:
                    written.append(outcome.memory.id)
        return ExtractionOutcome(
            written=written,
            resolved=list(dict.fromkeys(resolved)),
            facts=len(extraction.facts),
            events=len(events),
            method=extraction.method,
            fallback_reason=extraction.fallback_reason,
        )

    async def all_events(self, scope: NamespaceScope, namespace: str, session_id: str) -> list[Event]:
        events: list[Event] = []
        after: str | None = None
        while True:
            page = await self.events.events(scope, namespace, session_id, after=after, limit=self.batch)
            events += page
            if len(page) < self.batch:
                return events
            after = page[-1].id

    async def extracted_memories(self, scope: NamespaceScope, namespace: str, session_id: str) -> list[Memory]:
        """The memories extracted from the session earlier, page by page."""
        found: list[Memory] = []
        cursor: str | None = None
        while True:
            request = ListRequest(namespace=namespace, limit=self.memories.limits.max_list_limit, cursor=cursor)
            page = await self.memories.list(scope, request)
            found += [m for m in page.memories if m.session_id == session_id and m.source.tool == EXTRACT_TOOL]
            if page.next_cursor is None:
                return found
            cursor = page.next_cursor

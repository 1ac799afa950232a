"""What both erasures share: the stores beside the memories they reach (`Tiers`), the receipt's counts
(`Erased`), reading every memory of a scope page by page, finding what was consolidated from a memory, and the
steps both take: deleting memories and consolidating again the namespaces of those derived from them, and
removing events (two counts of one call)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass

from memory.consolidation import consolidate
from memory.events.model import EventCounts
from memory.events.store import EventStore
from memory.llm import ChatSummarizer
from memory.models import Memory, MemoryKind
from memory.ports import ListQuery, VectorStore, WorkingMemoryStore
from memory.recall_log.store import RecallLog
from memory.scope import NamespaceScope
from memory.service import MemoryService

PAGE = 200

Step = tuple[str, Callable[[], Awaitable[int]]]  # what a step removes (an `Erased` field), and the step


@dataclass(frozen=True, slots=True)
class Tiers:
    """The stores beside the memories an erasure reaches, and the summarizer consolidation rebuilds with."""

    working: WorkingMemoryStore
    events: EventStore
    recall_log: RecallLog | None = None
    summarizer: ChatSummarizer | None = None


@dataclass(frozen=True, slots=True)
class Erased:
    """How many of each were removed, per store (a receipt's counts; never content)."""

    memories: int = 0
    copies: int = 0
    derived: int = 0  # semantic memories removed; their namespaces consolidated again without their sources
    events: int = 0
    event_sessions: int = 0
    working_sessions: int = 0
    recall_log_entries: int = 0


async def every_memory(
    store: VectorStore, scope: NamespaceScope, namespaces: tuple[str, ...], kind: MemoryKind | None = None
) -> AsyncIterator[Memory]:
    """Every memory of `namespaces` (() = the admin scope's whole tenant) of `kind`, every status, page by page."""
    after: str | None = None
    while True:
        page, after = await store.list(scope, ListQuery(namespaces, kind, True, PAGE, after))
        for memory in page:
            yield memory
        if after is None:
            return


def cites(memory: Memory, ids: set[str]) -> bool:
    """Whether a semantic memory was consolidated from one of `ids` (its `metadata.sources`)."""
    sources = memory.metadata.get("sources")
    return isinstance(sources, list) and any(isinstance(s, str) and s in ids for s in sources)


async def delete_then_consolidate(
    service: MemoryService, scope: NamespaceScope, doomed: Iterable[Memory], derived: Iterable[Memory], tiers: Tiers
) -> int:
    """Delete `doomed`, then consolidate again each namespace of `derived` (the semantic memories removed for
    citing them) from the sources it still has; how many were deleted."""
    count = await service.store.delete(scope, [m.id for m in doomed])
    for namespace in sorted({m.namespace for m in derived}):
        await consolidate(service, scope, namespace, summarizer=tiers.summarizer)
    return count


def event_steps(remove: Callable[[], Awaitable[EventCounts]]) -> list[Step]:
    """The `events` and `event_sessions` steps of one call that removes events (and the records it empties)."""
    removed = EventCounts()

    async def events() -> int:
        nonlocal removed
        removed = await remove()
        return removed.events

    async def sessions() -> int:
        return removed.sessions

    return [("events", events), ("event_sessions", sessions)]


async def run(steps: list[Step]) -> Erased:
    """Each step in turn; the counts they answer."""
    return Erased(**{name: await step() for name, step in steps})

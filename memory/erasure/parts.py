"""What both erasures share: the stores beside the memories they reach (`Tiers`), the receipt's counts
(`Erased`), reading every memory of a scope page by page, and finding what was consolidated from a memory."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass

from memory.events.store import EventStore
from memory.llm import ChatSummarizer
from memory.models import Memory, MemoryKind
from memory.ports import ListQuery, VectorStore, WorkingMemoryStore
from memory.recall_log.store import RecallLog
from memory.scope import NamespaceScope

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


def namespaces_of(memories: Iterable[Memory]) -> list[str]:
    return sorted({m.namespace for m in memories})


async def run(steps: list[Step]) -> Erased:
    """Each step in turn; the counts they answer."""
    return Erased(**{name: await step() for name, step in steps})

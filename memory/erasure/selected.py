"""Erasing what a `Selection` names across a tenant's namespaces (what one subject wrote, or what carries a tag or
a metadata value), in an order a retry can finish.

The plan reads the selected memories (every status), their linked copies and the semantic memories consolidated
from either. Everything is found from the selected memories, which go last: the recall-log entries by their ids, the
working-memory sessions by their sessions (and those a subject wrote into, by the subject), the consolidated ones by
the ids they cite, the copies by their origin. A subject's events are found by the subject and go in one step; the
working-memory sessions they took place in are taken right after (a crash between the two leaves those sessions to
their TTL).
"""

from __future__ import annotations

from dataclasses import dataclass

from memory.erasure.parts import Erased, Step, Tiers, cites, delete_then_consolidate, event_steps, every_memory, run
from memory.errors import NamespaceForbidden
from memory.events.model import EventCounts
from memory.models import Memory, MemoryKind
from memory.scope import NamespaceScope
from memory.selection import Selection
from memory.service import MemoryService


@dataclass(frozen=True, slots=True)
class SelectionPlan:
    selection: Selection
    memories: tuple[Memory, ...]  # the selected memories, any namespace, every status
    copies: tuple[Memory, ...]  # their linked copies the selection does not name itself
    derived: tuple[Memory, ...]  # semantic memories consolidated from any of those

    @property
    def every_id(self) -> tuple[str, ...]:
        return tuple(m.id for m in (*self.memories, *self.copies, *self.derived))

    @property
    def sessions(self) -> list[tuple[str, str]]:
        """The (namespace, session id) of every planned memory written in a session."""
        found = {(m.namespace, m.session_id) for m in (*self.memories, *self.copies) if m.session_id is not None}
        return sorted((namespace, session) for namespace, session in found if session is not None)


async def plan_selection(service: MemoryService, scope: NamespaceScope, selection: Selection) -> SelectionPlan:
    """Read what erasing `selection` removes (admin scopes only): the whole tenant is read once."""
    if not scope.admin:
        raise NamespaceForbidden("erasing memories across namespaces needs the memory:admin scope")
    store = service.store
    chosen: list[Memory] = []
    semantic: list[Memory] = []  # kept from the same scan: what consolidation made, some of it from `chosen`
    async for memory in every_memory(store, scope, ()):
        if selection.matches(memory):
            chosen.append(memory)
        if memory.kind == MemoryKind.SEMANTIC:
            semantic.append(memory)
    ids = {m.id for m in chosen}
    copies: dict[str, Memory] = {}
    for memory in chosen:
        copies |= {c.id: c for c in await store.copies_of(scope, memory.id) if c.id not in ids}
    sources = ids | set(copies)
    derived = [m for m in semantic if m.id not in sources and cites(m, sources)]
    return SelectionPlan(selection, tuple(chosen), tuple(copies.values()), tuple(derived))


def steps(service: MemoryService, scope: NamespaceScope, plan: SelectionPlan, tiers: Tiers) -> list[Step]:
    """The steps that remove what `plan` names, in the order a retry can finish from (the module docstring)."""
    store, recall_log, subject = service.store, tiers.recall_log, plan.selection.written_by
    taken = 0

    async def take(sessions: list[tuple[str, str]]) -> int:
        nonlocal taken
        for namespace, session_id in sessions:
            taken += await tiers.working.take(scope, namespace, session_id) is not None
        return taken

    async def logged() -> int:
        if recall_log is None:
            return 0
        subjects = () if subject is None else (subject,)
        return await recall_log.erase(scope, subjects=subjects, memory_ids=plan.every_id)

    async def subject_events() -> EventCounts:
        if subject is None:
            return EventCounts()
        removed, touched = await tiers.events.erase_subject(scope, subject)
        await take(touched)
        return removed

    async def working_sessions() -> int:
        written = [] if subject is None else await tiers.working.sessions_written_by(scope, subject)
        return await take(sorted({*plan.sessions, *written}))

    return [
        ("recall_log_entries", logged),
        *event_steps(subject_events),
        ("working_sessions", working_sessions),
        ("derived", lambda: store.delete(scope, [m.id for m in plan.derived])),
        ("copies", lambda: store.delete(scope, [m.id for m in plan.copies])),
        ("memories", lambda: delete_then_consolidate(service, scope, plan.memories, plan.derived, tiers)),
    ]


async def erase_selected(service: MemoryService, scope: NamespaceScope, plan: SelectionPlan, tiers: Tiers) -> Erased:
    """Remove what `plan` names, each store in turn (`steps`)."""
    return await run(steps(service, scope, plan, tiers))

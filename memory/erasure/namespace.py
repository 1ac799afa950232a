"""Erasing one namespace from every store, in an order a retry can finish.

Everything is found from the namespace's own memories, which go last: the recall-log entries are found by the
planned ids, and the semantic memories derived from a linked copy by that copy's id, so each is removed before
what finds it. A crash at any step leaves the namespace's memories in place; the retry plans again, finds
whatever is left, and removes it.
"""

from __future__ import annotations

from dataclasses import dataclass

from memory.erasure.parts import Erased, Step, Tiers, cites, delete_then_consolidate, event_steps, every_memory, run
from memory.errors import NamespaceForbidden
from memory.models import Memory, MemoryKind
from memory.scope import NamespaceScope, validate_namespace
from memory.service import MemoryService


@dataclass(frozen=True, slots=True)
class NamespacePlan:
    """What erasing `namespace` removes beyond the namespace itself."""

    namespace: str
    memory_ids: tuple[str, ...]  # the namespace's memories, every status
    copies: tuple[Memory, ...]  # their linked `share_to` copies in other namespaces
    derived: tuple[Memory, ...]  # semantic memories of other namespaces consolidated from one of those copies

    @property
    def every_id(self) -> tuple[str, ...]:
        return (*self.memory_ids, *(m.id for m in self.copies), *(m.id for m in self.derived))


async def plan_namespace(service: MemoryService, scope: NamespaceScope, namespace: str) -> NamespacePlan:
    """Read what erasing `namespace` removes (admin scopes only)."""
    if not scope.admin:
        raise NamespaceForbidden("erasing a namespace needs the memory:admin scope")
    namespace = validate_namespace(namespace)
    store = service.store
    ids = [m.id async for m in every_memory(store, scope, (namespace,))]
    copies: dict[str, Memory] = {}
    for memory_id in ids:
        for copy in await store.copies_of(scope, memory_id):
            if copy.namespace != namespace:
                copies[copy.id] = copy
    derived: list[Memory] = []
    copy_ids = set(copies)
    for elsewhere in sorted({m.namespace for m in copies.values()}):
        derived += [
            m async for m in every_memory(store, scope, (elsewhere,), MemoryKind.SEMANTIC) if cites(m, copy_ids)
        ]
    return NamespacePlan(namespace, tuple(ids), tuple(copies.values()), tuple(derived))


def steps(service: MemoryService, scope: NamespaceScope, plan: NamespacePlan, tiers: Tiers) -> list[Step]:
    """The steps that remove what `plan` names, in the order a retry can finish from (the module docstring)."""
    namespace, recall_log = plan.namespace, tiers.recall_log

    async def logged() -> int:
        if recall_log is None:
            return 0
        return await recall_log.erase(scope, namespaces=(namespace,), memory_ids=plan.every_id)

    return [
        ("recall_log_entries", logged),
        ("derived", lambda: service.store.delete(scope, [m.id for m in plan.derived])),
        ("copies", lambda: delete_then_consolidate(service, scope, plan.copies, plan.derived, tiers)),
        ("working_sessions", lambda: tiers.working.purge(scope, namespace)),
        *event_steps(lambda: tiers.events.purge(scope, namespace)),
        ("memories", lambda: service.purge(scope, namespace)),
    ]


async def erase_planned(service: MemoryService, scope: NamespaceScope, plan: NamespacePlan, tiers: Tiers) -> Erased:
    """Remove what `plan` names, each store in turn (`steps`)."""
    return await run(steps(service, scope, plan, tiers))

"""One maintenance pass over a tenant: expire, evict over capacity, consolidate — namespace by namespace.

The gateway's scheduler (and `hindsight maintain`) calls `maintain_tenant` with an admin scope per tenant; the
`consolidate` MCP tool calls `consolidate` for one namespace.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memory.consolidation import ConsolidationPolicy, consolidate
from memory.forgetting import ForgettingPolicy, evict, expire
from memory.llm import ChatSummarizer
from memory.models import MemoryKind
from memory.scope import NamespaceScope
from memory.service import MemoryService


@dataclass
class MaintenanceReport:
    expired: int = 0
    evicted: int = 0
    clusters: int = 0
    consolidated: list[str] = field(default_factory=list)
    namespaces: int = 0


async def maintain_tenant(
    service: MemoryService,
    scope: NamespaceScope,
    forgetting: ForgettingPolicy | None = None,
    consolidation: ConsolidationPolicy | None = None,
    summarizer: ChatSummarizer | None = None,
) -> MaintenanceReport:
    forgetting = forgetting or ForgettingPolicy()
    report = MaintenanceReport()
    for namespace in sorted(await service.store.namespace_counts(scope)):
        report.namespaces += 1
        report.expired += len(await expire(service, scope, namespace))
        for kind in MemoryKind:
            report.evicted += len(await evict(service, scope, namespace, kind, forgetting))
        result = await consolidate(service, scope, namespace, consolidation, summarizer)
        report.clusters += result.clusters
        report.consolidated += result.written
    return report

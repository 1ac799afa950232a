"""One maintenance pass over a tenant: expire, archive idle memories, evict over capacity (to the archive),
consolidate — namespace by namespace. Consolidation keeps its own pace (`ConsolidationPace`, weekly by default).

The gateway's scheduler (and `hindsight maintain`) calls `maintain_tenant` with an admin scope per tenant; the
`consolidate` MCP tool calls `consolidate` for one namespace.

Maintenance is background work: each step of each namespace (expiry, archiving, eviction of one kind,
consolidation) is one job iteration. A step that raises is logged with the tenant and namespace, listed in the
report's `failed`, and the pass goes on with the next step and namespace, so one bad namespace (or one bad memory
in it) never stops the maintenance of the others. Cancellation is not an `Exception` and ends the pass at once.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import TypeVar

from memory.consolidation import ConsolidationPace, ConsolidationPolicy, ConsolidationResult, consolidate
from memory.lifecycle.archive import ArchivePolicy
from memory.lifecycle.forgetting import ForgettingPolicy, archive_idle, evict, expire
from memory.llm import ChatSummarizer
from memory.models import MemoryKind
from memory.scope import NamespaceScope
from memory.service import MemoryService

logger = logging.getLogger("hindsight.maintenance")
T = TypeVar("T")


@dataclass
class MaintenanceReport:
    expired: int = 0
    archived: int = 0  # old and rarely used memories moved to the archive
    evicted: int = 0  # memories moved to the archive because their namespace was over capacity
    clusters: int = 0
    consolidated: list[str] = field(default_factory=list)
    consolidation_skipped: int = 0  # namespaces not yet due for consolidation (the pace)
    namespaces: int = 0
    failed: list[str] = field(default_factory=list)  # "namespace: step" of every step that raised (and was logged)


async def maintain_tenant(
    service: MemoryService,
    scope: NamespaceScope,
    forgetting: ForgettingPolicy | None = None,
    consolidation: ConsolidationPolicy | None = None,
    summarizer: ChatSummarizer | None = None,
    archive: ArchivePolicy | None = None,
    pace: ConsolidationPace | None = None,
) -> MaintenanceReport:
    """One pass over every namespace of the tenant. With a `pace` (the scheduler's), a namespace is consolidated
    only when its last consolidation is at least the pace's interval old; without one (`hindsight maintain`), now."""
    forgetting = forgetting or ForgettingPolicy()
    archive = archive or ArchivePolicy()
    report = MaintenanceReport()

    async def step(namespace: str, name: str, work: Awaitable[T]) -> T | None:
        try:
            return await work
        except Exception:  # the top of one job iteration: log, note, and go on with the next
            logger.exception("maintenance %s of tenant %s namespace %s failed", name, scope.tenant, namespace)
            report.failed.append(f"{namespace}: {name}")
            return None

    for namespace in sorted(await service.store.namespace_counts(scope)):
        report.namespaces += 1
        expired = await step(namespace, "expiry", expire(service, scope, namespace))
        report.expired += len(expired or [])
        archived = await step(namespace, "archiving", archive_idle(service, scope, namespace, archive))
        report.archived += len(archived or [])
        for kind in MemoryKind:
            evicted = await step(
                namespace, f"eviction of {kind.value}", evict(service, scope, namespace, kind, forgetting)
            )
            report.evicted += len(evicted or [])
        now = service.clock.now()
        if pace is not None and not pace.due(scope.tenant, namespace, now):
            report.consolidation_skipped += 1
            continue
        result: ConsolidationResult | None = await step(
            namespace, "consolidation", consolidate(service, scope, namespace, consolidation, summarizer)
        )
        if pace is not None and result is not None:  # a consolidation that failed is tried again next pass
            pace.ran(scope.tenant, namespace, now)
        if result is not None:
            report.clusters += result.clusters
            report.consolidated += result.written
    return report

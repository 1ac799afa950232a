"""Scheduled memory maintenance (expiry, capacity eviction, consolidation) for every tenant, off the request
path; also what `hindsight maintain` runs once. Each tenant is maintained under its own admin scope, built by
`tenancy/` like any other scope, so maintenance obeys the same isolation as tools."""

from __future__ import annotations

import logging
from dataclasses import asdict
from typing import Any

import anyio

from gateway.runtime import Runtime
from memory.errors import MemoryEngineError
from memory.forgetting import ForgettingPolicy
from memory.maintenance import MaintenanceReport, maintain_tenant
from memory.models import MemoryKind
from memory.scope import NamespaceScope
from ops.metrics import Metrics
from tenancy import Principal, scope_for
from tenancy.principal import SCOPE_ADMIN

logger = logging.getLogger("hindsight.maintenance")
SUBJECT = "hindsight-maintenance"


def admin_scope(tenant: str) -> NamespaceScope:
    return scope_for(Principal(subject=SUBJECT, tenant=tenant, scopes=frozenset({SCOPE_ADMIN})))


def forgetting_policy(runtime: Runtime) -> ForgettingPolicy:
    settings = runtime.settings
    return ForgettingPolicy(
        episodic_capacity=settings.episodic_capacity,
        semantic_capacity=settings.semantic_capacity,
        protect_days=settings.eviction_protect_days,
    )


async def maintain_all(runtime: Runtime, tenants: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """One pass over the given tenants (default: every tenant with memories); returns a report per tenant."""
    reports: dict[str, dict[str, Any]] = {}
    for tenant in tenants if tenants is not None else await runtime.store.tenants():
        try:
            report: MaintenanceReport = await maintain_tenant(
                runtime.memories, admin_scope(tenant), forgetting_policy(runtime), summarizer=runtime.summarizer
            )
        except MemoryEngineError as exc:
            logger.warning("maintenance of tenant %s failed: %s", tenant, exc.message)
            continue
        reports[tenant] = asdict(report)
        logger.info("maintenance of tenant %s: %s", tenant, {k: v for k, v in reports[tenant].items() if v})
    return reports


async def maintenance_loop(runtime: Runtime, interval_seconds: float) -> None:
    while True:
        await anyio.sleep(interval_seconds)
        await maintain_all(runtime)


async def sample_memory_counts(runtime: Runtime, metrics: Metrics) -> None:
    """Set the `hindsight_memories{kind}` gauge from the store (per tenant when the tenant label is on)."""
    totals: dict[tuple[str, str], int] = {}
    for tenant in await runtime.store.tenants():
        scope = admin_scope(tenant)
        for kind in MemoryKind:
            count = sum((await runtime.store.namespace_counts(scope, kind)).values())
            key = (kind.value, tenant if metrics.tenant_label else "")
            totals[key] = totals.get(key, 0) + count
    for kind in MemoryKind:
        if not metrics.tenant_label:
            metrics.memories.labels(kind=kind.value).set(totals.get((kind.value, ""), 0))
    if metrics.tenant_label:
        for (kind_value, tenant), count in totals.items():
            metrics.memories.labels(kind=kind_value, tenant=tenant).set(count)


async def gauge_loop(runtime: Runtime, metrics: Metrics, interval_seconds: float) -> None:
    while True:
        try:
            await sample_memory_counts(runtime, metrics)
        except MemoryEngineError as exc:
            logger.warning("sampling memory counts failed: %s", exc.message)
        await anyio.sleep(interval_seconds)

"""Scheduled memory maintenance (expiry, archiving, capacity eviction to the archive, consolidation) for every
tenant, off the request path; also what `hindsight maintain` runs once. Each tenant is maintained under its own
admin scope, built by `tenancy/` like any other scope, so maintenance obeys the same isolation as tools.

Nothing here may end the runtime: each tenant's pass, each namespace step inside it (`memory/lifecycle/maintenance.py`)
and each gauge sample is contained by the `Supervisor` (logged with the tenant, counted in
`hindsight_background_errors_total{task}`), and the loops go on with the next tenant and the next round."""

from __future__ import annotations

import logging
from dataclasses import asdict
from datetime import timedelta
from typing import Any

import anyio

from gateway.services.background import Supervisor
from gateway.services.runtime import Runtime
from memory.consolidation import ConsolidationPace
from memory.lifecycle.archive import ArchivePolicy
from memory.lifecycle.forgetting import ForgettingPolicy
from memory.lifecycle.maintenance import MaintenanceReport, maintain_tenant
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
        episodic_capacity=settings.maintenance.episodic_capacity,
        semantic_capacity=settings.maintenance.semantic_capacity,
        protect_days=settings.maintenance.eviction_protect_days,
    )


def archive_policy(runtime: Runtime) -> ArchivePolicy:
    settings = runtime.settings
    return ArchivePolicy(
        after_days=settings.maintenance.archive_after_days,
        max_access_count=settings.maintenance.archive_max_access_count,
    )


def consolidation_pace(runtime: Runtime) -> ConsolidationPace:
    return ConsolidationPace(timedelta(days=runtime.settings.maintenance.consolidation_interval_days))


async def maintain_all(
    runtime: Runtime,
    tenants: list[str] | None = None,
    supervisor: Supervisor | None = None,
    pace: ConsolidationPace | None = None,
) -> dict[str, dict[str, Any]]:
    """One pass over the given tenants (default: every tenant with memories); returns a report per tenant
    (a tenant whose pass failed as a whole has none; its failure is logged and counted). With a `pace` (the
    scheduler's), namespaces consolidated within its interval are not consolidated again; without, all are."""
    supervisor = supervisor or Supervisor()
    reports: dict[str, dict[str, Any]] = {}
    for tenant in tenants if tenants is not None else await runtime.store.tenants():
        with supervisor.contain("memory_maintenance", tenant=tenant):
            report: MaintenanceReport = await maintain_tenant(
                runtime.memories,
                admin_scope(tenant),
                forgetting_policy(runtime),
                summarizer=runtime.summarizer,
                archive=archive_policy(runtime),
                pace=pace,
            )
            supervisor.count("memory_maintenance", len(report.failed))  # steps that failed, logged in the pass
            reports[tenant] = asdict(report)
            logger.info("maintenance of tenant %s: %s", tenant, {k: v for k, v in reports[tenant].items() if v})
    return reports


async def sweep_sessions(
    runtime: Runtime, tenants: list[str] | None = None, supervisor: Supervisor | None = None
) -> dict[str, Any]:
    """End every session idle past `session_idle_seconds` (its events extracted, its working memory archived:
    nothing is lost because an agent crashed), then drop events past `event_retention_days`. Each tenant's sweep
    is contained like its maintenance pass."""
    supervisor = supervisor or Supervisor()
    ended: dict[str, list[str]] = {}
    for tenant in tenants if tenants is not None else await runtime.events.tenants():
        with supervisor.contain("session_sweep", tenant=tenant):
            outcomes = await runtime.agent_sessions.sweep(admin_scope(tenant))
            if outcomes:
                ended[tenant] = [f"{o.session.namespace}/{o.session.session_id}" for o in outcomes]
                logger.info("swept %d idle sessions of tenant %s", len(outcomes), tenant)
    expired = None
    with supervisor.contain("event_retention"):
        cutoff = runtime.memories.clock.now() - timedelta(days=runtime.settings.maintenance.event_retention_days)
        counts = await runtime.events.expire(cutoff)
        expired = {"events": counts.events, "sessions": counts.sessions}
    return {"ended": ended, "expired": expired}


async def maintenance_loop(runtime: Runtime, interval_seconds: float, supervisor: Supervisor) -> None:
    """`maintain_all` and `sweep_sessions` every `interval_seconds`; a round that fails (listing the tenants) is
    logged and counted. Consolidation keeps its own, slower pace (`consolidation_interval_days`)."""
    pace = consolidation_pace(runtime)
    while True:
        await anyio.sleep(interval_seconds)
        with supervisor.contain("memory_maintenance"):
            await maintain_all(runtime, supervisor=supervisor, pace=pace)
        with supervisor.contain("session_sweep"):
            await sweep_sessions(runtime, supervisor=supervisor)
        supervisor.finished("memory_maintenance")


async def sample_memory_counts(runtime: Runtime, metrics: Metrics, supervisor: Supervisor | None = None) -> None:
    """Set the `hindsight_memories{kind}` gauge from the store (per tenant when the tenant label is on); a tenant
    whose counts fail is left out of this sample (logged and counted)."""
    supervisor = supervisor or Supervisor()
    totals: dict[tuple[str, str], int] = {}
    for tenant in await runtime.store.tenants():
        with supervisor.contain("metrics_sampling", tenant=tenant):
            scope = admin_scope(tenant)
            counts = {kind: sum((await runtime.store.namespace_counts(scope, kind)).values()) for kind in MemoryKind}
            for kind, count in counts.items():
                key = (kind.value, tenant if metrics.tenant_label else "")
                totals[key] = totals.get(key, 0) + count
    for kind in MemoryKind:
        if not metrics.tenant_label:
            metrics.memories.labels(kind=kind.value).set(totals.get((kind.value, ""), 0))
    if metrics.tenant_label:
        for (kind_value, tenant), count in totals.items():
            metrics.memories.labels(kind=kind_value, tenant=tenant).set(count)


async def gauge_loop(runtime: Runtime, metrics: Metrics, interval_seconds: float, supervisor: Supervisor) -> None:
    while True:
        with supervisor.contain("metrics_sampling"):
            await sample_memory_counts(runtime, metrics, supervisor)
        supervisor.finished("metrics_sampling")
        await anyio.sleep(interval_seconds)

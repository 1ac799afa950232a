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
from memory.scope import NamespaceScope
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
                runtime.memories, admin_scope(tenant), forgetting_policy(runtime)
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

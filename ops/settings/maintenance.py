"""`MaintenanceSettings`: the background passes (how often they run) and what they keep: capacities, eviction,
archiving, consolidation, idle sessions and old events."""

from __future__ import annotations

from pydantic import Field

from ops.settings.base import SettingsGroup


class MaintenanceSettings(SettingsGroup):
    """Maintenance (`HINDSIGHT_MAINTENANCE_INTERVAL_SECONDS`, `HINDSIGHT_EPISODIC_CAPACITY`, ...)."""

    maintenance_interval_seconds: float = Field(30.0, gt=0)
    memory_maintenance_interval_seconds: float = Field(
        3600.0,
        ge=0,
        description="How often expiry, archiving, eviction and consolidation run over every tenant (0: never).",
    )
    consolidation_interval_days: float = Field(
        7.0,
        ge=0,
        le=3650,
        description="Scheduled maintenance consolidates each namespace at most this often (0: every pass); the "
        "consolidate tool and `hindsight maintain` run at once.",
    )
    episodic_capacity: int = Field(10_000, ge=1, description="Live episodic memories kept per namespace.")
    semantic_capacity: int = Field(1_000, ge=1, description="Live semantic memories kept per namespace.")
    eviction_protect_days: float = Field(7.0, ge=0, description="Memories this recent are never evicted.")
    archive_after_days: float = Field(
        90.0, ge=0, le=36_500, description="Archive memories not written or recalled for this long (0: never)."
    )
    archive_max_access_count: int = Field(
        3, ge=0, description="Only memories recalled at most this many times are archived as idle."
    )
    session_idle_seconds: int = Field(
        86_400,
        ge=60,
        description="A session with no event for this long is ended by maintenance (its facts extracted).",
    )
    event_retention_days: int = Field(
        90, ge=1, description="Events older than this are dropped by maintenance (never an active session's)."
    )

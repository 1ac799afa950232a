"""The gateway's side of an embedding-model migration: the engine's `memory.reembed.migration.Migration` built from
the runtime's settings. The embedder to move to is built, and calibrated, as the runtime built the one in use
(`gateway.services.runtime`); the indexes live where the settings put them; a switch is recorded in the runtime's
settings. Tenants are walked with each tenant's admin scope, built by `tenancy/`
(`gateway.services.maintenance.admin_scope`).
"""

from __future__ import annotations

from dataclasses import dataclass

from gateway.services.maintenance import admin_scope
from gateway.services.runtime import Runtime, calibration, indexes, open_embedder
from memory.ports import Embedder
from memory.reembed.migration import Calibration, Migration
from memory.stores.switchable import SwitchableEmbedder, SwitchableStore


@dataclass(frozen=True, slots=True)
class SettingsModels:
    """`memory.reembed.migration.Models` from the runtime's settings (`HINDSIGHT_EMBEDDER` and the settings it
    reads)."""

    runtime: Runtime

    @property
    def current(self) -> str:
        return self.runtime.settings.models.embedder

    async def open(self, name: str) -> Embedder:
        return await open_embedder(self.runtime.settings.replaced(embedder=name))

    def calibration(self, model_id: str) -> Calibration:
        return calibration(self.runtime.settings, model_id)

    def adopt(self, name: str) -> None:
        self.runtime.settings = self.runtime.settings.replaced(embedder=name)


def migration(runtime: Runtime, vectors: SwitchableStore, embedders: SwitchableEmbedder) -> Migration:
    """The runtime's migrations, over the store and embedder it holds for its whole life."""
    return Migration(
        vectors, embedders, runtime.memories, SettingsModels(runtime), indexes(runtime.settings), admin_scope
    )

"""Operations: configuration, health checks (telemetry and metrics land here too)."""

from ops.config import Settings

__all__ = ["Settings"]

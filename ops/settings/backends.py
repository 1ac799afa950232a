"""`BackendSettings`: where memories live: the data directory of the embedded engine, or Redis and Qdrant
servers, and how long and how often their calls may fail."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, SecretStr

from ops.settings.base import SettingsGroup


class BackendSettings(SettingsGroup):
    """The stores (`HINDSIGHT_DATA_DIR`, `HINDSIGHT_REDIS_URL`, `HINDSIGHT_QDRANT_URL`, ...)."""

    data_dir: Path = Path("./data")
    vector_backend: Literal["edge"] = "edge"
    search_threads: Annotated[int, Field(ge=1, le=1024)] | Literal["auto"] = Field(
        "auto",
        description="Search threads of the embedded vector engine: auto is 1 with 2 CPUs or fewer (a container's "
        "CPU quota counts), else one per CPU but one; a number sets it.",
    )
    search_cache_points: int = Field(
        0,
        ge=0,
        le=10_000_000,
        description="Decoded memories the embedded store keeps for its searches (up to about 4 KB each), dropped by "
        "every write that touches them: once most of a search's hits are held, it reads only ids and scores from "
        "the engine. Pays where recalls keep meeting the same memories; 0 (the default): none.",
    )
    redis_url: str | None = None
    redis_cluster: bool = Field(
        False, description="redis_url names one node of a Redis Cluster: use the cluster client (redis-py)."
    )
    qdrant_url: str | None = None
    qdrant_api_key: SecretStr | None = None
    qdrant_collection_prefix: str = "hindsight"
    backend_timeout_seconds: float = Field(5.0, gt=0, le=120)
    redis_fail_open_timeout_seconds: float = Field(
        0.5,
        gt=0,
        le=120,
        description="Deadline of a Redis call whose failure is served anyway (a rate limit that fails open, a"
        " CPU charge, a recall-log write), at most backend_timeout_seconds; a request waits so once at most.",
    )
    redis_breaker_threshold: int = Field(
        5, ge=1, le=1000, description="Redis calls in a row without an answer that open the circuit breaker."
    )
    redis_breaker_silence_seconds: float = Field(
        2.0,
        ge=0,
        le=300,
        description="How long no Redis call may have had an answer before the circuit breaker opens: calls timing out"
        " while others are answered are an overloaded process, not a hung Redis.",
    )
    redis_breaker_cooldown_seconds: float = Field(
        5.0, gt=0, le=300, description="How long an open Redis circuit breaker fails calls at once before a probe."
    )

    @property
    def embedded(self) -> bool:
        """True when no external server is configured: everything lives in this process and `data_dir`."""
        return self.redis_url is None and self.qdrant_url is None

"""`RateLimitSettings`: what one tenant and one agent may ask for (token buckets per tenant, `TenantLimits`),
what refused requests may cost a client, and how long a call's idempotency record is kept."""

from __future__ import annotations

from pydantic import BaseModel, Field

from ops.settings.base import SettingsGroup


class TenantLimits(BaseModel):
    """Token-bucket rates for one tenant: tool calls per subject (agent) and for the whole tenant, reads and
    writes apart, and protocol messages (every JSON-RPC method but `tools/call`: `initialize`, `tools/list`,
    notifications, ...) per subject in a bucket of their own, so reconnecting agents never spend tool-call
    tokens. A tool-call bucket holds `burst_seconds` worth of requests, the protocol bucket
    `protocol_burst_seconds` worth (by default 300 messages: 100 SDK clients reconnecting at once).

    Beside the call counts, what calls cost (issue #32): CPU budgets, milliseconds of CPU time per second per
    subject and for the tenant (`cpu_burst_seconds` worth in a bucket), each call charged the CPU time it was
    measured to spend once it is done, a bucket in debt refusing calls (429) until refilled; and the tool calls one
    subject and one tenant may have running at once in a gateway process, further calls waiting up to
    `concurrency_wait_seconds` for a turn (then `rate_limited`, retryable; a call waiting on the LLM leaves its
    turn meanwhile). See `gateway.web.fairness`."""

    subject_read_per_minute: float = Field(600, gt=0)
    subject_write_per_minute: float = Field(120, gt=0)
    tenant_read_per_minute: float = Field(6000, gt=0)
    tenant_write_per_minute: float = Field(1200, gt=0)
    burst_seconds: float = Field(10, gt=0)
    subject_protocol_per_minute: float = Field(600, gt=0)
    protocol_burst_seconds: float = Field(30, gt=0)
    subject_cpu_ms_per_second: float = Field(100, gt=0)
    tenant_cpu_ms_per_second: float = Field(200, gt=0)
    cpu_burst_seconds: float = Field(2, gt=0)
    subject_concurrency: int = Field(1, ge=1)
    tenant_concurrency: int = Field(1, ge=1)
    concurrency_wait_seconds: float = Field(5, gt=0, le=300)


class RateLimitSettings(SettingsGroup):
    """Rate limits and idempotency (`HINDSIGHT_RATE_LIMIT_*`, `HINDSIGHT_REFUSAL_LIMIT_*`,
    `HINDSIGHT_IDEMPOTENCY_*`)."""

    rate_limit_enabled: bool = True
    rate_limit_default: TenantLimits = Field(default_factory=TenantLimits)
    rate_limit_tenants: dict[str, TenantLimits] = Field(
        default_factory=dict, description='Per-tenant overrides, JSON: {"acme": {"subject_write_per_minute": 30}}'
    )
    rate_limit_fail_open: bool = Field(
        True,
        description="When the limiter's Redis is down: serve without limits (true, logged) or answer 503 (false).",
    )
    refusal_limit_per_minute: float = Field(
        60,
        ge=0,
        description="Refused requests (400, 401, 413) a client address, and a bearer token, may cause per minute; "
        "beyond the burst their requests get 429 before any token is verified or body read (0: off). In process, "
        "per replica.",
    )
    refusal_limit_burst: int = Field(30, ge=1, description="Refused requests a fresh client may cause at once.")
    idempotency_retention_seconds: int = Field(86_400, ge=60)
    idempotency_wait_seconds: float = Field(30.0, gt=0)
    idempotency_lease_seconds: float = Field(
        5.0,
        gt=0,
        le=300,
        description="Lease of a running call's claim on its request_id, renewed while it runs; a retry takes over "
        "a claim whose lease ran out (its call crashed).",
    )

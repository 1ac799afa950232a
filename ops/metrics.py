"""Prometheus metrics: one registry per app (so several apps in one process never collide), with the names and
labels the dashboards and alerts use. Label cardinality stays bounded: tool, outcome, action, kind, backend, and
the tenant only when `metrics_tenant_label` is on."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

# Fine enough to read a P99 anywhere from 1 ms to 5 s.
LATENCY_BUCKETS = (
    0.001, 0.0015, 0.002, 0.003, 0.004, 0.005, 0.0065, 0.008, 0.01, 0.0125, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05,
    0.065, 0.08, 0.1, 0.125, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.65, 0.8, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0,
)  # fmt: skip


@dataclass
class LatencyWindow:
    """The latencies of the last `seconds` (at most `capacity` samples), for /debug/stats percentiles."""

    seconds: float = 300.0
    capacity: int = 10_000
    samples: deque[tuple[float, float]] = field(default_factory=deque)

    def add(self, latency: float, now: float | None = None) -> None:
        self.samples.append((time.monotonic() if now is None else now, latency))
        while len(self.samples) > self.capacity:
            self.samples.popleft()

    def percentiles(self, now: float | None = None) -> dict[str, float | int | None]:
        cutoff = (time.monotonic() if now is None else now) - self.seconds
        while self.samples and self.samples[0][0] < cutoff:
            self.samples.popleft()
        values = sorted(latency for _, latency in self.samples)

        def pick(q: float) -> float | None:
            return round(values[min(len(values) - 1, int(q * len(values)))] * 1000, 3) if values else None

        return {"count": len(values), "p50_ms": pick(0.50), "p95_ms": pick(0.95), "p99_ms": pick(0.99)}


class Metrics:
    def __init__(self, tenant_label: bool = False) -> None:
        self.registry = CollectorRegistry()
        self.tenant_label = tenant_label
        extra = ["tenant"] if tenant_label else []
        self.recall_latency = Histogram(
            "hindsight_recall_latency_seconds",
            "Time to answer recall_memory, from tool start to result.",
            extra,
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.write_latency = Histogram(
            "hindsight_write_latency_seconds",
            "Time to answer write_memory, from tool start to result.",
            extra,
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.tool_calls = Counter(
            "hindsight_tool_calls", "MCP tool calls by tool and outcome.", ["tool", "outcome", *extra],
            registry=self.registry,
        )  # fmt: skip
        self.writes = Counter(
            "hindsight_writes", "Memory writes by action (created, updated, skipped, superseded).", ["action"],
            registry=self.registry,
        )  # fmt: skip
        self.rate_limit_rejections = Counter(
            "hindsight_rate_limit_rejections", "Requests refused by rate limits, by read/write.", ["kind"],
            registry=self.registry,
        )  # fmt: skip
        self.idempotent_replays = Counter(
            "hindsight_idempotent_replays", "Mutating calls answered from the idempotency record.", ["tool"],
            registry=self.registry,
        )  # fmt: skip
        self.backend_errors = Counter(
            "hindsight_backend_errors", "Calls that failed because a backend was unavailable.", ["backend"],
            registry=self.registry,
        )  # fmt: skip
        self.memories = Gauge(
            "hindsight_memories", "Live memories by kind, sampled periodically.", ["kind", *extra],
            registry=self.registry,
        )  # fmt: skip
        self.recall_window = LatencyWindow()
        self.write_window = LatencyWindow()

    def labels(self, tenant: str | None) -> dict[str, str]:
        return {"tenant": tenant or ""} if self.tenant_label else {}

    def observe_tool(self, tool: str, outcome: str, seconds: float, tenant: str | None) -> None:
        self.tool_calls.labels(tool=tool, outcome=outcome, **self.labels(tenant)).inc()
        if tool == "recall_memory":
            histogram, window = self.recall_latency, self.recall_window
        elif tool == "write_memory":
            histogram, window = self.write_latency, self.write_window
        else:
            return
        (histogram.labels(**self.labels(tenant)) if self.tenant_label else histogram).observe(seconds)
        window.add(seconds)

    def render(self) -> bytes:
        return generate_latest(self.registry)

"""Prometheus metrics: one registry per app (so several apps in one process never collide), with the names and
labels the dashboards and alerts use. Label cardinality stays bounded: tool, outcome, action, kind, backend,
task, used, the HTTP method (the standard ones, else "other"), route template and status, and the tenant only when
`metrics_tenant_label` is on (never a memory namespace). The registry also carries the process (`process_*`: CPU,
memory, file descriptors) and Python (`python_info`, `python_gc_*`) collectors, and `/metrics` leaves out the
`_created` series (one per counter and histogram series, which only doubles what Prometheus stores).

Beside the registry, `TenantStats` keeps each tenant's own figures (latency windows, tool call counts) for
`/debug/stats`, which shows a tenant's admin that tenant alone; the process-wide figures are on `/metrics`."""

from __future__ import annotations

import time
from collections import Counter as Tally
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.metrics_core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

# Fine enough to read a P99 anywhere from 1 ms to 5 s.
LATENCY_BUCKETS = (
    0.001, 0.0015, 0.002, 0.003, 0.004, 0.005, 0.0065, 0.008, 0.01, 0.0125, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05,
    0.065, 0.08, 0.1, 0.125, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.65, 0.8, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0,
)  # fmt: skip
# Every tool call and every HTTP request, by tool and outcome or by route: from a refused argument or token
# (under 1 ms) to an import or a consolidation (tens of seconds); fewer buckets than LATENCY_BUCKETS, as there is
# one histogram per tool and outcome (or method, route and status class).
DURATION_BUCKETS = (
    0.0005, 0.001, 0.002, 0.005, 0.01, 0.015, 0.025, 0.04, 0.065, 0.1, 0.15, 0.25, 0.4, 0.65, 1.0, 1.5, 2.5, 5.0,
    10.0, 30.0,
)  # fmt: skip
# The `method` label's values; any other method a client sends is "other" (a caller cannot mint label values).
HTTP_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


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


MEMORY_KINDS = ("episodic", "semantic")  # memory.models.MemoryKind, the `kind` label's values
TENANT_WINDOW_CAPACITY = 512  # latencies kept per tenant and tool
MAX_TRACKED_TENANTS = 256  # the least recently active tenant's figures are dropped beyond this


@dataclass
class TenantStats:
    """One tenant's figures for /debug/stats: its recall and write latencies and its tool calls by outcome."""

    recall_window: LatencyWindow = field(default_factory=lambda: LatencyWindow(capacity=TENANT_WINDOW_CAPACITY))
    write_window: LatencyWindow = field(default_factory=lambda: LatencyWindow(capacity=TENANT_WINDOW_CAPACITY))
    tool_calls: dict[str, Tally[str]] = field(default_factory=dict)


class Metrics:
    def __init__(self, tenant_label: bool = False) -> None:
        self.registry = CollectorRegistry()
        self.tenant_label = tenant_label
        extra = ["tenant"] if tenant_label else []
        counter = partial(Counter, registry=self.registry)
        gauge = partial(Gauge, registry=self.registry)
        histogram = partial(Histogram, registry=self.registry)
        self.recall_latency = histogram(
            "hindsight_recall_latency_seconds",
            "Time to answer a recall_memory call that succeeded, from tool start to result (fine buckets for its"
            " P99; every outcome is in hindsight_tool_call_duration_seconds).",
            extra,
            buckets=LATENCY_BUCKETS,
        )
        self.tool_duration = histogram(
            "hindsight_tool_call_duration_seconds",
            "Time to answer an MCP tool call, from tool start to result, by tool and outcome (ok or the error code).",
            ["tool", "outcome", *extra],
            buckets=DURATION_BUCKETS,
        )
        self.tool_calls = counter(
            "hindsight_tool_calls", "MCP tool calls by tool and outcome.", ["tool", "outcome", *extra]
        )
        self.tool_cpu = counter(
            "hindsight_tool_cpu_seconds",
            "CPU time tool calls were measured to spend and charged to the CPU budgets, by tool "
            "(gateway.web.fairness).",
            ["tool", *extra],
        )
        self.writes = counter(
            "hindsight_writes", "Memory writes by action (created, updated, skipped, superseded).", ["action"]
        )
        self.rate_limit_rejections = counter(
            "hindsight_rate_limit_rejections", "Requests refused by rate limits (read, write, protocol).", ["kind"]
        )
        self.idempotent_replays = counter(
            "hindsight_idempotent_replays", "Mutating calls answered from the idempotency record.", ["tool"]
        )
        self.backend_errors = counter(
            "hindsight_backend_errors", "Calls that failed because a backend was unavailable.", ["backend"]
        )
        self.memories = gauge("hindsight_memories", "Live memories by kind, sampled periodically.", ["kind", *extra])
        self.background_errors = counter(
            "hindsight_background_errors",
            "Background job iterations that failed and were skipped, by task (store_maintenance, memory_maintenance,"
            " access_flush, metrics_sampling).",
            ["task"],
        )
        self.background_rounds = counter(
            "hindsight_background_rounds",
            "Rounds of each background loop, failed or not (flat: the loop is stuck).",
            ["task"],
        )
        self.memories_hidden = counter(
            "hindsight_memories_hidden",
            "Memories the engine hid, by reason: skipped (chit-chat, nothing stored), merged (updated in place by a"
            " near-duplicate), superseded, expired (a passed plan).",
            ["reason"],
        )
        self.recall_feedback = counter(
            "hindsight_recall_feedback",
            "Recalled memories an agent reported with the feedback tool: used=true it used them, used=false it did"
            " not (the hit ratio is used=true over all).",
            ["used", *extra],
        )
        # not `hindsight_memories_created`: `_created` is the suffix of the created-timestamp series (OpenMetrics)
        self.new_memories = counter(
            "hindsight_new_memories",
            "Memories created, by kind, on every write path (write_memory, extraction, consolidation, import): the"
            " store's growth.",
            ["kind", *extra],
        )
        self.memories_superseded = counter(
            "hindsight_memories_superseded",
            "Memories a write marked superseded by a newer one (over hindsight_new_memories_total: the conflict rate).",
            extra,
        )
        if not tenant_label:  # every series from the start, so a rate or a ratio is there before the first event
            for used in ("true", "false"):
                self.recall_feedback.labels(used=used)
            for kind in MEMORY_KINDS:
                self.new_memories.labels(kind=kind)
        self.undecodable = CallbackCounter(
            "hindsight_undecodable_memories",
            "Stored memories skipped on read because their payload could not be decoded (since the process started).",
            self.registry,
        )
        self.http_requests = counter(
            "hindsight_http_requests",
            "HTTP responses by route template (other: no route), status code and class; refusals by auth, body"
            " size and rate limits and errors included.",
            ["route", "code", "status_class"],
        )
        self.http_duration = histogram(
            "hindsight_http_request_duration_seconds",
            "Time to answer an HTTP request, from its arrival to the end of the answer, by method, route template"
            " (other: no route) and status class; refusals by auth, body size and rate limits and errors included.",
            ["method", "route", "status_class"],
            buckets=DURATION_BUCKETS,
        )
        self.redis_breaker_state = gauge(
            "hindsight_redis_breaker_state",
            "The Redis client's circuit breaker: 0 closed (calls go to Redis), 1 half-open (one call probes), 2 open"
            " (calls fail at once); 0 without Redis.",
        )
        self.redis_breaker_openings = CallbackCounter(
            "hindsight_redis_breaker_openings",
            "Times the Redis circuit breaker opened (Redis calls in a row got no answer, or a probe got none).",
            self.registry,
        )
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        self._tenants: OrderedDict[str, TenantStats] = OrderedDict()

    def labels(self, tenant: str | None) -> dict[str, str]:
        return {"tenant": tenant or ""} if self.tenant_label else {}

    def observe_http(self, method: str, route: str, status: int, seconds: float) -> None:
        """One HTTP response: `route` is a route template or "other", never a raw path, and a method other than
        the standard ones is "other" (bounded cardinality)."""
        status_class = f"{status // 100}xx"
        self.http_requests.labels(route=route, code=str(status), status_class=status_class).inc()
        method = method if method in HTTP_METHODS else "other"
        self.http_duration.labels(method=method, route=route, status_class=status_class).observe(seconds)

    def count_hidden(self, reason: str, count: int) -> None:
        """The engine's hide observer (`memory.lifecycle.hidden`): `count` memories hidden for `reason`."""
        self.memories_hidden.labels(reason=reason).inc(count)

    def count_feedback(self, used: int, unused: int, tenant: str | None) -> None:
        """One `feedback` call: `used` recalled memories used, `unused` not."""
        labels = self.labels(tenant)
        self.recall_feedback.labels(used="true", **labels).inc(used)
        self.recall_feedback.labels(used="false", **labels).inc(unused)

    def count_write(self, tenant: str, created: str | None, superseded: int) -> None:
        """The engine's write observer (`memory.write.growth`): a write of `tenant` created a memory of kind `created`
        (None: none) and marked `superseded` older ones replaced."""
        labels = self.labels(tenant)
        if created is not None:
            self.new_memories.labels(kind=created, **labels).inc()
        if superseded:
            (self.memories_superseded.labels(**labels) if labels else self.memories_superseded).inc(superseded)

    def observe_tool(self, tool: str, outcome: str, seconds: float, tenant: str | None) -> None:
        """One tool call the boundary ran: `outcome` is "ok" or the error code. Every call is in the per-tool
        histogram; only those that succeeded are in the recall histogram and the /debug/stats latency windows (a
        refused argument answered in 0.1 ms is no recall or write latency)."""
        labels = self.labels(tenant)
        self.tool_calls.labels(tool=tool, outcome=outcome, **labels).inc()
        self.tool_duration.labels(tool=tool, outcome=outcome, **labels).observe(seconds)
        stats = self._tenant_stats(tenant) if tenant else None
        if stats is not None:
            stats.tool_calls.setdefault(tool, Tally())[outcome] += 1
        if outcome != "ok":
            return
        if tool == "recall_memory":
            (self.recall_latency.labels(**labels) if labels else self.recall_latency).observe(seconds)
            window = stats.recall_window if stats else None
        elif tool == "write_memory":
            window = stats.write_window if stats else None
        else:
            return
        if window is not None:
            window.add(seconds)

    def tenant_stats(self, tenant: str) -> TenantStats:
        """The figures of one tenant (empty ones if it made no call lately)."""
        return self._tenants.get(tenant) or TenantStats()

    def _tenant_stats(self, tenant: str) -> TenantStats:
        stats = self._tenants.get(tenant)
        if stats is None:
            stats = self._tenants[tenant] = TenantStats()
            while len(self._tenants) > MAX_TRACKED_TENANTS:
                self._tenants.popitem(last=False)
        self._tenants.move_to_end(tenant)
        return stats

    def render(self) -> bytes:
        """The text exposition of the registry, without `_created` series."""
        return generate_latest(_WithoutCreated(self.registry))


class CallbackCounter(Collector):
    """A counter without labels whose value a function returns at each scrape, for a count kept elsewhere that
    only grows (what `Gauge.set_function` is for a gauge; prometheus_client's Counter has none). Exposed as
    `<name>_total`, a counter, so `rate()` and `increase()` apply; 0 until `set_function`."""

    def __init__(self, name: str, documentation: str, registry: CollectorRegistry) -> None:
        self.name = name
        self.documentation = documentation
        self._function: Callable[[], float] = lambda: 0.0
        registry.register(self)

    def set_function(self, function: Callable[[], float]) -> None:
        self._function = function

    def describe(self) -> Iterator[Metric]:
        yield CounterMetricFamily(self.name, self.documentation)

    def collect(self) -> Iterator[Metric]:
        yield CounterMetricFamily(self.name, self.documentation, value=self._function())


class _WithoutCreated:
    """A registry's families minus their `<name>_created` samples: per exposition, where
    `prometheus_client.disable_created_metrics()` would switch them off for every registry of the process."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry

    def collect(self) -> Iterator[Metric]:
        for family in self.registry.collect():
            created = family.name + "_created"
            if any(sample.name == created for sample in family.samples):
                trimmed = Metric(family.name, family.documentation, family.type, family.unit)
                trimmed.samples = [sample for sample in family.samples if sample.name != created]
                family = trimmed
            yield family

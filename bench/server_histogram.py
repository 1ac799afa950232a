"""The server's own latency histograms, read from its `/metrics`: a snapshot of the cumulative bucket counts of
each series the benchmark reads, the difference of two snapshots (one phase), and percentiles estimated from the
buckets (linear inside a bucket, as Prometheus' `histogram_quantile`), with the bucket they fall in, so a report
can say when the buckets are too coarse for a figure."""

from __future__ import annotations

import math
import re

import httpx2

# The series a phase reads: key -> (metric, labels a sample must carry); samples of other labels are summed.
SERIES = {
    "recall": ("hindsight_recall_latency_seconds", {}),  # recall_memory that succeeded, tool start to result
    "tool:recall_memory": ("hindsight_tool_call_duration_seconds", {"tool": "recall_memory", "outcome": "ok"}),
    "tool:whoami": ("hindsight_tool_call_duration_seconds", {"tool": "whoami", "outcome": "ok"}),
    "http:/mcp": ("hindsight_http_request_duration_seconds", {"method": "POST", "route": "/mcp"}),
    "http:/livez": ("hindsight_http_request_duration_seconds", {"method": "GET", "route": "/livez"}),
}
Buckets = tuple[tuple[float, float], ...]  # (upper bound in seconds, cumulative count), ascending, +Inf last
_LINE = re.compile(r"^(?P<name>[a-z_]+)_bucket\{(?P<labels>[^}]*)\} (?P<value>\S+)$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def parse(text: str) -> dict[str, Buckets]:
    """The cumulative buckets of every series of `SERIES` in a Prometheus text exposition."""
    wanted: dict[str, dict[float, float]] = {key: {} for key in SERIES}
    for line in text.splitlines():
        match = _LINE.match(line)
        if match is None:
            continue
        labels = dict(_LABEL.findall(match["labels"]))
        bound = math.inf if labels.get("le") == "+Inf" else float(labels.get("le", "nan"))
        for key, (metric, required) in SERIES.items():
            if match["name"] == metric and all(labels.get(k) == v for k, v in required.items()):
                wanted[key][bound] = wanted[key].get(bound, 0.0) + float(match["value"])
    return {key: tuple(sorted(counts.items())) for key, counts in wanted.items() if counts}


async def snapshot(http: httpx2.AsyncClient, base_url: str) -> dict[str, Buckets]:
    answer = await http.get(f"{base_url}/metrics")
    answer.raise_for_status()
    return parse(answer.text)


def delta(after: dict[str, Buckets], before: dict[str, Buckets]) -> dict[str, Buckets]:
    """The counts added between two snapshots, per series (a series absent before counts from zero)."""
    out = {}
    for key, buckets in after.items():
        earlier = dict(before.get(key, ()))
        out[key] = tuple((bound, count - earlier.get(bound, 0.0)) for bound, count in buckets)
    return out


def count(buckets: Buckets) -> float:
    return buckets[-1][1] if buckets else 0.0


def quantile(buckets: Buckets, q: float) -> float:
    """The q-quantile (0..1) in milliseconds, linear inside its bucket; nan without observations, the highest
    finite bound when it falls in the +Inf bucket."""
    total = count(buckets)
    if total <= 0:
        return math.nan
    rank = q * total
    lower, below = 0.0, 0.0
    for bound, cumulative in buckets:
        if cumulative >= rank:
            if math.isinf(bound):
                return lower * 1000
            inside = cumulative - below
            fraction = (rank - below) / inside if inside > 0 else 1.0
            return (lower + (bound - lower) * fraction) * 1000
        lower, below = bound, cumulative
    return lower * 1000


def bucket_of(buckets: Buckets, q: float) -> tuple[float, float]:
    """The bucket (lower, upper bound in ms) the q-quantile falls in: the resolution of `quantile`."""
    total = count(buckets)
    lower = 0.0
    for bound, cumulative in buckets:
        if total > 0 and cumulative >= q * total:
            return lower * 1000, bound * 1000
        lower = bound
    return math.nan, math.nan


def share_within(buckets: Buckets, limit_ms: float) -> float | None:
    """The share of observations at or under `limit_ms` when that limit is a bucket bound (exact), else None."""
    total = count(buckets)
    for bound, cumulative in buckets:
        if math.isclose(bound * 1000, limit_ms):
            return cumulative / total if total else None
    return None


def resolves(buckets: Buckets, limit_ms: float) -> bool:
    """Whether `limit_ms` is one of the bucket bounds (a target at it can be checked exactly)."""
    return any(math.isclose(bound * 1000, limit_ms) for bound, _ in buckets)

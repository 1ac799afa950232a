"""The metrics registry of one app: the HTTP response counter's labels, the process and Python collectors on the
app's own registry, and an exposition without `_created` series that leaves every other registry alone."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, Counter, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from ops.metrics import Metrics


@pytest.mark.parametrize(
    ("status", "status_class"), [(200, "2xx"), (307, "3xx"), (401, "4xx"), (413, "4xx"), (429, "4xx"), (503, "5xx")]
)
def test_an_http_response_is_counted_with_its_exact_code_and_its_class(status: int, status_class: str) -> None:
    metrics = Metrics()
    metrics.count_http_response("/mcp", status)
    metrics.count_http_response("/mcp", status)
    line = f'hindsight_http_requests_total{{code="{status}",route="/mcp",status_class="{status_class}"}} 2.0'
    assert line in metrics.render().decode().splitlines()


def test_the_exposition_has_no_created_series_and_keeps_every_other_sample() -> None:
    metrics = Metrics(tenant_label=True)
    metrics.observe_tool("recall_memory", "ok", 0.004, "acme")
    metrics.count_http_response("/readyz", 503)
    text = metrics.render().decode()
    assert "_created" not in text
    samples = {s.name for family in text_string_to_metric_families(text) for s in family.samples}
    assert {
        "hindsight_tool_calls_total",
        "hindsight_http_requests_total",
        "hindsight_recall_latency_seconds_bucket",
        "hindsight_recall_latency_seconds_count",
        "hindsight_recall_latency_seconds_sum",
    } <= samples
    assert 'hindsight_recall_latency_seconds_count{tenant="acme"} 1.0' in text


def test_leaving_out_created_series_does_not_switch_them_off_for_other_registries() -> None:
    Metrics().render()
    elsewhere = CollectorRegistry()
    Counter("jobs", "A counter of some other library.", registry=elsewhere).inc()
    assert "jobs_created" in generate_latest(elsewhere).decode()


def test_each_app_registry_carries_its_own_process_and_python_collectors() -> None:
    first, second = Metrics(), Metrics()  # registering twice in one process must not collide
    for metrics in (first, second):
        names = {family.name for family in metrics.registry.collect()}
        assert {
            "process_resident_memory_bytes",
            "process_cpu_seconds",
            "python_info",
            "python_gc_objects_collected",
        } <= (names)

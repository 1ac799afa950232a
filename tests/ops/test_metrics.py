"""The metrics registry of one app: the HTTP response counter's and duration histogram's labels, the latency of
every tool call by tool and outcome beside the recall histogram of the successful ones, counters for what counts
since start (gauges only for what is sampled), the process and Python collectors on the app's own registry, and
an exposition without `_created` series that leaves every other registry alone."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, Counter, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from ops.metrics import DURATION_BUCKETS, Metrics


@pytest.mark.parametrize(
    ("status", "status_class"), [(200, "2xx"), (307, "3xx"), (401, "4xx"), (413, "4xx"), (429, "4xx"), (503, "5xx")]
)
def test_an_http_response_is_counted_with_its_exact_code_and_its_class(status: int, status_class: str) -> None:
    metrics = Metrics()
    metrics.observe_http("POST", "/mcp", status, 0.002)
    metrics.observe_http("POST", "/mcp", status, 0.003)
    lines = metrics.render().decode().splitlines()
    assert f'hindsight_http_requests_total{{code="{status}",route="/mcp",status_class="{status_class}"}} 2.0' in lines
    duration = f'method="POST",route="/mcp",status_class="{status_class}"'
    assert f"hindsight_http_request_duration_seconds_count{{{duration}}} 2.0" in lines
    assert f'hindsight_http_request_duration_seconds_bucket{{le="0.002",{duration}}} 1.0' in lines
    assert f"hindsight_http_request_duration_seconds_sum{{{duration}}} 0.005" in lines


def test_an_http_method_outside_the_standard_ones_is_other() -> None:
    metrics = Metrics()
    for method in ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "BREW", "get", "X" * 200):
        metrics.observe_http(method, "/mcp", 405, 0.001)
    methods = {
        s.labels["method"]
        for family in text_string_to_metric_families(metrics.render().decode())
        for s in family.samples
        if s.name == "hindsight_http_request_duration_seconds_count"
    }
    assert methods == {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "other"}


@pytest.mark.parametrize("tenant_label", [False, True])
def test_every_tool_call_is_timed_by_tool_and_outcome_and_only_successful_recalls_are_recall_latency(
    tenant_label: bool,
) -> None:
    metrics = Metrics(tenant_label=tenant_label)
    metrics.observe_tool("recall_memory", "ok", 0.02, "acme")
    metrics.observe_tool("recall_memory", "invalid_argument", 0.0001, "acme")
    metrics.observe_tool("write_memory", "invalid_argument", 0.0001, "acme")
    metrics.observe_tool("write_memory", "ok", 0.03, "acme")
    metrics.observe_tool("import_memories", "backend_unavailable", 12.0, None)
    text = metrics.render().decode()
    counts = {
        (s.labels["tool"], s.labels["outcome"], s.labels.get("tenant")): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == "hindsight_tool_call_duration_seconds_count"
    }
    acme, nobody = ("acme", "") if tenant_label else (None, None)  # no principal (a refused token): tenant ""
    assert counts == {
        ("recall_memory", "ok", acme): 1.0,
        ("recall_memory", "invalid_argument", acme): 1.0,
        ("write_memory", "invalid_argument", acme): 1.0,
        ("write_memory", "ok", acme): 1.0,
        ("import_memories", "backend_unavailable", nobody): 1.0,
    }
    recall = '{tenant="acme"}' if tenant_label else ""
    assert f"hindsight_recall_latency_seconds_count{recall} 1.0" in text  # the refused one is not a recall latency
    assert f"hindsight_recall_latency_seconds_sum{recall} 0.02" in text
    assert "hindsight_write_latency_seconds" not in text
    assert 'le="0.0005"' in text and 'le="30.0"' in text  # a refusal and a long import each land in a bucket
    stats = metrics.tenant_stats("acme")  # /debug/stats: the latencies of successful calls, every outcome counted
    assert stats.recall_window.percentiles()["count"] == 1 and stats.write_window.percentiles()["count"] == 1
    assert stats.tool_calls["write_memory"] == {"ok": 1, "invalid_argument": 1}


def test_duration_buckets_tell_a_refusal_from_a_recall_and_reach_a_long_import() -> None:
    assert list(DURATION_BUCKETS) == sorted(set(DURATION_BUCKETS))
    assert DURATION_BUCKETS[0] <= 0.0005 and DURATION_BUCKETS[-1] >= 30.0
    assert 0.25 in DURATION_BUCKETS  # the recall P99 threshold of the alert is a bucket edge here too
    assert len(DURATION_BUCKETS) <= 20  # one histogram per tool and outcome: keep the series few


def test_what_counts_since_start_is_a_counter_and_only_sampled_figures_are_gauges() -> None:
    metrics = Metrics()
    skipped = 0

    def skip() -> float:
        return float(skipped)

    metrics.undecodable.set_function(skip)
    skipped = 3
    text = metrics.render().decode()
    assert "# TYPE hindsight_undecodable_memories_total counter" in text
    assert "hindsight_undecodable_memories_total 3.0" in text
    types = {
        family.name: family.type
        for family in text_string_to_metric_families(text)
        if family.name.startswith("hindsight_")
    }
    # a gauge is a value sampled now (live memories by kind, the Redis breaker's state); all that only grows is a
    # counter
    gauges = {name for name, kind in types.items() if kind == "gauge"}
    assert gauges == {"hindsight_memories", "hindsight_redis_breaker_state"}
    assert types["hindsight_redis_breaker_openings"] == "counter"
    assert types["hindsight_undecodable_memories"] == "counter"
    assert types["hindsight_tool_call_duration_seconds"] == "histogram"
    assert types["hindsight_http_request_duration_seconds"] == "histogram"


def test_the_exposition_has_no_created_series_and_keeps_every_other_sample() -> None:
    metrics = Metrics(tenant_label=True)
    metrics.observe_tool("recall_memory", "ok", 0.004, "acme")
    metrics.observe_http("GET", "/readyz", 503, 0.001)
    text = metrics.render().decode()
    assert "_created" not in text
    samples = {s.name for family in text_string_to_metric_families(text) for s in family.samples}
    assert {
        "hindsight_tool_calls_total",
        "hindsight_http_requests_total",
        "hindsight_http_request_duration_seconds_bucket",
        "hindsight_tool_call_duration_seconds_count",
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

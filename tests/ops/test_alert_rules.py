"""The alert rules and the dashboard queries, checked by promtool (Debian package `prometheus`): the rules load,
every alert passes its unit tests (deploy/prometheus-alerts.test.yml), every dashboard query parses, and the
rules select the job the gateway is really scraped under. Without promtool these tests fail under `CI=true` and
are skipped elsewhere. These need no promtool: every query reads each metric as its type allows (a counter through
`rate`/`increase`, a gauge never), every histogram is charted, and the histogram series of the rule tests and
the latency threshold sit on the buckets the gateway really has."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from ops.metrics import Metrics
from tests.ops.deploy_support import (
    ALERT_TESTS,
    ALERTS,
    CHART_ALERTS,
    SELECTOR,
    alert_rules,
    compose_scrape_job,
    dashboard_exprs,
    dashboard_variable_queries,
    dashboards,
    grafana_to_promql,
    metric_labels,
    promtool,
    run_promtool,
    selectors,
)

# Series that are not the gateway's: kube-state-metrics' pod readiness (HindsightGatewayNotReady) and the
# Prometheus job a case uses to show that other jobs are not mistaken for the gateway.
FOREIGN_METRICS = {"kube_pod_status_ready"}


def alert_tests() -> list[dict[str, Any]]:
    return [test for path in ALERT_TESTS for test in yaml.safe_load(path.read_text())["tests"]]


def sample_types() -> dict[str, str]:
    """The type of each sample name the gateway exports: counter (`_total`), gauge, or histogram (`_bucket`...)."""
    types: dict[str, str] = {}
    for family in Metrics(tenant_label=True).registry.collect():
        suffixes = {"counter": ["_total"], "histogram": ["_bucket", "_count", "_sum"]}.get(family.type, [""])
        types |= {family.name + suffix: family.type for suffix in suffixes}
    return types


def bucket_edges() -> dict[str, set[float]]:
    """The `le` edges (+Inf included) of each histogram the gateway exports, by its `_bucket` sample name."""
    registry = Metrics(tenant_label=True).registry
    return {
        collector._name + "_bucket": set(collector._upper_bounds)  # type: ignore[attr-defined]
        for collector in registry._collector_to_names  # prometheus_client has no public list
        if getattr(collector, "_upper_bounds", None)
    }


def enclosing_function(expr: str, index: int) -> str:
    """The PromQL function whose parentheses hold position `index` of `expr` ("" at the top level)."""
    depth = 0
    for i in range(index - 1, -1, -1):
        if expr[i] == ")":
            depth += 1
        elif expr[i] == "(":
            if depth == 0:
                name = re.search(r"([a-z_]+)\s*$", expr[:i])
                return name.group(1) if name else ""
            depth -= 1
    return ""


def panel_and_rule_exprs() -> list[str]:
    exprs = [expr for dashboard in dashboards() for expr in dashboard_exprs(dashboard)]
    return exprs + [rule["expr"] for rule in alert_rules()]


def test_every_query_reads_a_counter_as_a_rate_and_never_a_gauge_as_one() -> None:
    """A counter only means something per time (`rate`, `increase`; `count_over_time` to see it exists), and the
    rate of a gauge is noise: the type of each metric (ops/metrics.py) decides how a panel or an alert reads it."""
    types = sample_types()
    read: dict[str, set[str]] = {}
    for expr in panel_and_rule_exprs():
        for match in SELECTOR.finditer(expr):
            metric = match["metric"]
            if metric == "up" or metric in FOREIGN_METRICS:
                continue
            assert metric in types, f"{metric} is not exported by ops/metrics.py"
            function = enclosing_function(expr, match.start())
            read.setdefault(types[metric], set()).add(function)
            if types[metric] in ("counter", "histogram"):
                assert function in ("rate", "increase", "count_over_time"), f"{metric} read by {function!r}: {expr}"
            else:
                assert function not in ("rate", "irate", "increase"), f"gauge {metric} read by {function}: {expr}"
    assert {"counter", "histogram", "gauge"} <= set(read)


def test_every_histogram_the_gateway_exports_is_charted_as_quantiles_on_the_dashboard() -> None:
    exprs = [expr for dashboard in dashboards() for expr in dashboard_exprs(dashboard)]
    histograms = {name for name, kind in sample_types().items() if kind == "histogram" and name.endswith("_bucket")}
    assert {
        "hindsight_recall_latency_seconds_bucket",
        "hindsight_tool_call_duration_seconds_bucket",
        "hindsight_http_request_duration_seconds_bucket",
    } <= histograms
    for bucket in histograms:
        assert any("histogram_quantile(0.99" in expr and f"{bucket}{{" in expr for expr in exprs), bucket


def test_latency_rule_tests_and_threshold_sit_on_the_buckets_the_gateway_exports() -> None:
    """A rule test fed an `le` the histogram does not have, or a threshold between two buckets, would pass promtool
    and still not show what the real series do."""
    edges = bucket_edges()
    fed = 0
    for case in alert_tests():
        for series in case["input_series"]:
            ((metric, matchers),) = selectors(series["series"])
            if metric.endswith("_bucket"):
                assert float(matchers["le"].lstrip("=")) in edges[metric], series["series"]
                fed += 1
    assert fed
    latency = next(rule for rule in alert_rules() if rule["alert"] == "HindsightRecallLatencyP99High")
    threshold = float(latency["expr"].strip().rsplit(">", 1)[1])
    assert threshold in edges["hindsight_recall_latency_seconds_bucket"]


def test_a_missing_promtool_skips_the_rule_tests_saying_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty directory: no promtool
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="apt-get install -y prometheus"):
        promtool()
    monkeypatch.setenv("CI", "1")  # only CI=true, as .ci/run exports it, turns the skip into a failure
    with pytest.raises(pytest.skip.Exception):
        promtool()


def test_under_ci_a_missing_promtool_fails_the_rule_tests(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=r"CI must check the alert rules: .*apt-get install -y prometheus"):
        promtool()


def test_a_promtool_on_the_path_is_the_one_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = tmp_path / "promtool"
    fake.write_text('#!/bin/sh\necho promtool was run with "$*"\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CI", "true")
    assert promtool() == str(fake)
    assert run_promtool("check", "rules", "x.yml").stdout == "promtool was run with check rules x.yml\n"


def test_alert_rules_and_the_charts_copy_pass_promtool_check_rules() -> None:
    for path in (ALERTS, CHART_ALERTS):
        done = run_promtool("check", "rules", str(path))
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"SUCCESS: {len(alert_rules(path))} rules found" in done.stdout


def test_every_alert_passes_its_promtool_unit_tests() -> None:
    done = run_promtool("test", "rules", *map(str, ALERT_TESTS))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("SUCCESS") == len(ALERT_TESTS), done.stdout


def test_every_alert_has_a_unit_test_where_it_fires_and_one_where_it_stays_quiet() -> None:
    fired: set[str] = set()
    quiet: set[str] = set()
    for case in alert_tests():
        for check in case["alert_rule_test"]:
            (fired if check["exp_alerts"] else quiet).add(check["alertname"])
    names = {rule["alert"] for rule in alert_rules()}
    assert names - fired == set(), "alerts never shown firing"
    assert names - quiet == set(), "alerts never shown staying quiet"
    assert (fired | quiet) - names == set(), "tests of alerts that do not exist"


def test_rule_tests_feed_the_real_job_label_and_the_metric_names_the_gateway_exports() -> None:
    job = compose_scrape_job()
    exported = metric_labels(tenant_label=True)
    gateway_series = 0
    for case in alert_tests():
        for series in case["input_series"]:
            ((metric, matchers),) = selectors(series["series"])
            if metric in FOREIGN_METRICS:
                continue
            if metric == "up":
                assert set(matchers) <= {"job", "instance", "namespace"}, series
                gateway_series += matchers["job"] == f"={job}"
                continue
            assert matchers["job"] == f"={job}", series
            assert metric in exported, f"{metric} is not exported by ops/metrics.py"
            assert set(matchers) - {"job", "instance", "namespace"} <= exported[metric], series
            gateway_series += 1
    assert gateway_series >= 10


def test_every_gateway_selector_in_the_rules_uses_the_compose_scrape_job() -> None:
    job = compose_scrape_job()
    assert job == "hindsight"  # the job the chart's ServiceMonitor gives too (tests/ops/test_helm_chart.py)
    for rule in alert_rules():
        for metric, matchers in selectors(rule["expr"]):
            if metric in FOREIGN_METRICS:
                continue
            assert matchers.get("job") == f"={job}", f"{rule['alert']}: {metric}{matchers}"
            # Written exactly so: the chart narrows each `job="hindsight"` to the release (prometheusrule.yaml).
            assert f'{metric}{{job="{job}"' in " ".join(rule["expr"].split()), rule["alert"]
    # The one selector that is not the gateway's, narrowed by the chart to the release's pods.
    not_ready = next(rule for rule in alert_rules() if rule["alert"] == "HindsightGatewayNotReady")
    assert 'kube_pod_status_ready{condition="true", pod=~".*hindsight.*"}' in not_ready["expr"]


def test_chart_ships_a_byte_identical_copy_of_the_alert_rules() -> None:
    assert CHART_ALERTS.read_bytes() == ALERTS.read_bytes(), (
        "helm/hindsight/files/prometheus-alerts.yml differs from deploy/prometheus-alerts.yml: "
        "cp deploy/prometheus-alerts.yml helm/hindsight/files/prometheus-alerts.yml"
    )


def test_every_dashboard_query_and_alert_expression_parses_with_promtool(tmp_path: Path) -> None:
    """promtool parses a rule file's expressions, so every query becomes a recording rule of a scratch file."""
    exprs = [grafana_to_promql(expr) for dashboard in dashboards() for expr in dashboard_exprs(dashboard)]
    exprs += [grafana_to_promql(query) for dashboard in dashboards() for query in dashboard_variable_queries(dashboard)]
    exprs += [rule["expr"] for rule in alert_rules()]
    rules = [{"record": f"hindsight_check:expr_{index}", "expr": expr} for index, expr in enumerate(exprs)]
    scratch = tmp_path / "queries.yml"
    scratch.write_text(json.dumps({"groups": [{"name": "dashboard_and_alerts", "rules": rules}]}))
    done = run_promtool("check", "rules", str(scratch))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(rules)} rules found" in done.stdout


def test_a_broken_query_is_refused_by_promtool(tmp_path: Path) -> None:
    scratch = tmp_path / "broken.yml"
    rule = {"record": "hindsight_check:broken", "expr": 'sum by (le (rate(hindsight_tool_calls_total{job="x"}[5m]))'}
    scratch.write_text(json.dumps({"groups": [{"name": "broken", "rules": [rule]}]}))
    done = run_promtool("check", "rules", str(scratch))
    assert done.returncode != 0


def test_compose_prometheus_config_and_its_rules_pass_promtool_check_config(tmp_path: Path) -> None:
    """deploy/prometheus.yml as the Compose Prometheus reads it, its rule file path pointed at the real file."""
    config = yaml.safe_load((ALERTS.parent / "prometheus.yml").read_text())
    config["rule_files"] = [str(ALERTS)]
    scratch = tmp_path / "prometheus.yml"
    scratch.write_text(yaml.safe_dump(config))
    done = run_promtool("check", "config", str(scratch))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(alert_rules())} rules found" in done.stdout

"""The alert rules and the dashboard queries, checked by promtool (Debian package `prometheus`): the rules load,
every alert passes its unit tests (deploy/prometheus-alerts.test.yml), every dashboard query parses, and the
rules select the job the gateway is really scraped under. Without promtool these tests fail when `CI` is set and
are skipped elsewhere."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.ops.deploy_support import (
    ALERT_TESTS,
    ALERTS,
    CHART_ALERTS,
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


def test_a_missing_promtool_fails_the_rule_tests_saying_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty directory: no promtool
    with pytest.raises(pytest.fail.Exception, match="apt-get install -y prometheus"):
        promtool()


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

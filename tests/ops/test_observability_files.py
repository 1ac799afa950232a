"""The collector, Prometheus and Grafana configuration, the alert rules and the dashboards."""

from __future__ import annotations

import json
import re

import yaml

from tests.ops.deploy_support import (
    DEPLOY,
    REPO,
    alert_rules,
    compose_scrape_job,
    dashboard_exprs,
    dashboard_variable_queries,
    dashboards,
    exported_metric_names,
    metric_labels,
    selectors,
    services,
)

# -- collector, Prometheus, Grafana -----------------------------------------------------------------------------


def test_collector_receives_otlp_and_exports_traces_to_jaeger() -> None:
    config = yaml.safe_load((DEPLOY / "otel-collector.yaml").read_text())
    assert set(config["receivers"]["otlp"]["protocols"]) == {"grpc", "http"}
    assert config["receivers"]["otlp"]["protocols"]["http"]["endpoint"].endswith(":4318")
    pipeline = config["service"]["pipelines"]["traces"]
    assert pipeline["receivers"] == ["otlp"]
    exporters = [config["exporters"][name] for name in pipeline["exporters"]]
    assert [e["endpoint"] for e in exporters] == ["jaeger:4317"]
    assert all(name.split("/")[0] == "otlp" for name in pipeline["exporters"])


def test_prometheus_scrapes_the_gateway_metrics_and_loads_the_alert_rules() -> None:
    config = yaml.safe_load((DEPLOY / "prometheus.yml").read_text())
    job = next(job for job in config["scrape_configs"] if job["job_name"] == "hindsight")
    assert job["metrics_path"] == "/metrics"
    assert job["static_configs"][0]["targets"] == ["gateway:8080"]
    mounts = services()["prometheus"]["volumes"]
    assert f"./deploy/prometheus-alerts.yml:{config['rule_files'][0]}:ro" in mounts


def test_alert_rules_cover_absence_latency_errors_backends_readiness_and_rate_limits() -> None:
    by_name = {rule["alert"]: rule for rule in alert_rules()}
    assert by_name["HindsightGatewayAbsent"]["expr"].strip() == 'absent(up{job="hindsight"} == 1)'
    assert by_name["HindsightGatewayDown"]["expr"].strip() == 'up{job="hindsight"} == 0'
    latency = by_name["HindsightRecallLatencyP99High"]
    assert "histogram_quantile(0.99" in latency["expr"]
    assert "hindsight_recall_latency_seconds_bucket" in latency["expr"]
    assert latency["expr"].strip().endswith("> 0.25")
    assert latency["for"] == "10m"
    requests = by_name["HindsightRequestErrorRatioHigh"]["expr"]
    assert 'code=~"429|5.."' in requests
    assert requests.count("hindsight_http_requests_total") == 2
    assert requests.strip().endswith("> 0.05")
    assert 'route="/readyz", code="503"' in by_name["HindsightBackendUnavailable"]["expr"]
    assert "hindsight_tool_calls_total" in by_name["HindsightToolErrorRatioHigh"]["expr"]
    assert "hindsight_backend_errors_total" in by_name["HindsightBackendErrors"]["expr"]
    assert "kube_pod_status_ready" in by_name["HindsightGatewayNotReady"]["expr"]
    assert "hindsight_rate_limit_rejections_total" in by_name["HindsightRateLimitRejectionsSpike"]["expr"]
    assert {rule["labels"]["severity"] for rule in by_name.values()} <= {"warning", "critical"}
    operations = (REPO / "docs" / "OPERATIONS.md").read_text()
    headings = {
        re.sub(r"[^a-z0-9 -]", "", title.lower()).replace(" ", "-")
        for title in re.findall(r"^#+ (.+)$", operations, flags=re.MULTILINE)
    }
    for name, rule in by_name.items():
        assert name in operations, f"{name} is not explained in docs/OPERATIONS.md"
        anchor = rule["annotations"]["runbook"].split("#")[1]
        assert anchor in headings, f"{name}: runbook section #{anchor} is missing"


def test_every_dashboard_parses_and_charts_the_gateway_metrics() -> None:
    found = dashboards()
    assert found
    exprs = "\n".join(expr for dashboard in found for expr in dashboard_exprs(dashboard))
    scope = 'job=~"$job", namespace=~"$namespace"'
    tenant = scope + ', tenant=~"$tenant"'
    for quantile in ("0.50", "0.95", "0.99"):
        recall = f"rate(hindsight_recall_latency_seconds_bucket{{{tenant}}}"
        assert f"histogram_quantile({quantile}, sum by (le) ({recall}" in exprs
    assert f'sum by (tool, outcome) (rate(hindsight_tool_calls_total{{{tenant}, outcome!="ok"}}' in exprs
    assert f"sum by (tool) (rate(hindsight_tool_calls_total{{{tenant}}}" in exprs
    assert f"sum by (kind) (rate(hindsight_rate_limit_rejections_total{{{scope}}}" in exprs
    assert f"sum by (tool) (rate(hindsight_idempotent_replays_total{{{scope}}}" in exprs
    assert f"sum by (backend) (rate(hindsight_backend_errors_total{{{scope}}}" in exprs
    assert f"sum by (code) (rate(hindsight_http_requests_total{{{scope}" in exprs
    assert 'code=~"401|413|429|5.."' in exprs
    assert f"sum(up{{{scope}}})" in exprs


def test_every_dashboard_query_is_scoped_by_the_job_namespace_and_tenant_variables() -> None:
    """Every selector takes the job and namespace variables, and the tenant variable exactly where the metric has
    a tenant label (ops/metrics.py, HINDSIGHT_METRICS_TENANT_LABEL=true): no invented labels."""
    labels = metric_labels(tenant_label=True)
    for dashboard in dashboards():
        variables = {v["name"]: v for v in dashboard["templating"]["list"]}
        assert set(variables) == {"datasource", "job", "namespace", "tenant"}
        assert variables["job"]["current"]["value"] == compose_scrape_job()
        for name in ("namespace", "tenant"):
            assert variables[name]["includeAll"] and variables[name]["allValue"] == ".*"  # matches a missing label
        for expr in dashboard_exprs(dashboard):
            for metric, matchers in selectors(expr):
                assert matchers["job"] == "=~$job", expr
                assert matchers["namespace"] == "=~$namespace", expr
                assert metric in labels or metric == "up", expr  # `up`: Prometheus' own, job and instance
                known = labels.get(metric, set())
                assert ("tenant" in matchers) == ("tenant" in known), expr
                assert set(matchers) - {"job", "namespace"} <= known, expr
        for query in dashboard_variable_queries(dashboard):
            for metric, _ in selectors(query):
                assert metric in labels, query


def test_dashboards_and_alerts_use_only_metrics_the_gateway_exports() -> None:
    exported = exported_metric_names()
    texts = [expr for dashboard in dashboards() for expr in dashboard_exprs(dashboard)]
    texts.append((DEPLOY / "prometheus-alerts.yml").read_text())
    used = {name for text in texts for name in re.findall(r"\b(?:hindsight|process)_[a-z_]+", text)}
    assert used
    assert used <= exported, used - exported


def test_grafana_provisioning_points_at_the_dashboard_and_every_panel_uses_the_datasource_variable() -> None:
    provisioning = DEPLOY / "grafana" / "provisioning"
    datasources = yaml.safe_load((provisioning / "datasources" / "datasources.yml").read_text())["datasources"]
    prometheus = next(d for d in datasources if d["type"] == "prometheus")
    assert prometheus["url"] == "http://prometheus:9090"
    assert prometheus["isDefault"] is True  # what the datasource variable picks in Compose's Grafana
    providers = yaml.safe_load((provisioning / "dashboards" / "dashboards.yml").read_text())["providers"]
    mounts = services()["grafana"]["volumes"]
    assert f"./deploy/grafana/dashboards:{providers[0]['options']['path']}:ro" in mounts
    variable = {"type": "prometheus", "uid": "${datasource}"}
    for dashboard in dashboards():
        assert "prometheus" not in json.dumps(dashboard).replace('"type": "prometheus"', "").replace(
            '"query": "prometheus"', ""
        ), "a panel or query pins a datasource uid"
        datasource = next(v for v in dashboard["templating"]["list"] if v["name"] == "datasource")
        assert (datasource["type"], datasource["query"]) == ("datasource", "prometheus")
        for panel in dashboard["panels"]:
            if panel["type"] != "row":
                assert panel["datasource"] == variable, panel["title"]
                assert all(target["datasource"] == variable for target in panel["targets"]), panel["title"]
        for query_variable in dashboard["templating"]["list"][1:]:
            assert query_variable["datasource"] == variable, query_variable["name"]

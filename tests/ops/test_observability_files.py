"""The collector, Prometheus and Grafana configuration, the alert rules and the dashboards."""

from __future__ import annotations

import re

import yaml

from tests.ops.deploy_support import (
    DEPLOY,
    REPO,
    dashboard_exprs,
    dashboards,
    exported_metric_names,
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


def test_alert_rules_cover_latency_errors_backends_readiness_and_rate_limits() -> None:
    rules = yaml.safe_load((DEPLOY / "prometheus-alerts.yml").read_text())["groups"][0]["rules"]
    by_name = {rule["alert"]: rule for rule in rules}
    latency = by_name["HindsightRecallLatencyP99High"]
    assert "histogram_quantile(0.99" in latency["expr"]
    assert "hindsight_recall_latency_seconds_bucket" in latency["expr"]
    assert latency["expr"].strip().endswith("> 0.25")
    assert latency["for"] == "10m"
    assert "hindsight_tool_calls_total" in by_name["HindsightToolErrorRatioHigh"]["expr"]
    assert "hindsight_backend_errors_total" in by_name["HindsightBackendErrors"]["expr"]
    assert "kube_pod_status_ready" in by_name["HindsightGatewayNotReady"]["expr"]
    assert "hindsight_rate_limit_rejections_total" in by_name["HindsightRateLimitRejectionsSpike"]["expr"]
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
    for quantile in ("0.50", "0.95", "0.99"):
        assert f"histogram_quantile({quantile}, sum by (le) (rate(hindsight_recall_latency_seconds_bucket" in exprs
    assert re.search(r"sum by \(tool, outcome\) \(rate\(hindsight_tool_calls_total\{outcome!=\"ok\"\}", exprs)
    assert "sum by (tool) (rate(hindsight_tool_calls_total" in exprs
    assert "sum by (kind) (rate(hindsight_rate_limit_rejections_total" in exprs
    assert "sum by (tool) (rate(hindsight_idempotent_replays_total" in exprs
    assert "sum by (backend) (rate(hindsight_backend_errors_total" in exprs


def test_dashboards_and_alerts_use_only_metrics_the_gateway_exports() -> None:
    exported = exported_metric_names()
    texts = [expr for dashboard in dashboards() for expr in dashboard_exprs(dashboard)]
    texts.append((DEPLOY / "prometheus-alerts.yml").read_text())
    used = {name for text in texts for name in re.findall(r"\bhindsight_[a-z_]+", text)}
    assert used
    assert used <= exported, used - exported


def test_grafana_provisioning_points_at_the_dashboard_and_the_prometheus_datasource() -> None:
    provisioning = DEPLOY / "grafana" / "provisioning"
    datasources = yaml.safe_load((provisioning / "datasources" / "datasources.yml").read_text())["datasources"]
    prometheus = next(d for d in datasources if d["type"] == "prometheus")
    assert prometheus["url"] == "http://prometheus:9090"
    providers = yaml.safe_load((provisioning / "dashboards" / "dashboards.yml").read_text())["providers"]
    mounts = services()["grafana"]["volumes"]
    assert f"./deploy/grafana/dashboards:{providers[0]['options']['path']}:ro" in mounts
    for dashboard in dashboards():
        for panel in dashboard["panels"]:
            if panel["type"] != "row":
                assert panel["datasource"]["uid"] == prometheus["uid"], panel["title"]

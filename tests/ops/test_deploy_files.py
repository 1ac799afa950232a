"""The deployment files: Compose, Dockerfile, collector / Prometheus / Grafana config, and the Helm chart.

There is no Docker engine here, so the Compose file and the Dockerfile are checked statically (parsed, then
their contract asserted). The chart is linted and rendered by Helm's own Go library through
`deploy/helm_check.py` (helm-sdkpy in a Python >= 3.12 venv, `.venv-helm`, created on first use).
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from ops.config import Settings
from ops.metrics import Metrics

REPO = Path(__file__).resolve().parents[2]
COMPOSE = REPO / "docker-compose.yml"
DOCKERFILE = REPO / "Dockerfile"
DEPLOY = REPO / "deploy"
CHART = REPO / "helm" / "hindsight"
HELM_CHECK = DEPLOY / "helm_check.py"
HELM_PYTHON = REPO / ".venv-helm" / "bin" / "python"

CORE_SERVICES = {"gateway", "qdrant", "redis"}
OBSERVABILITY_SERVICES = {"otel-collector", "jaeger", "prometheus", "grafana"}
INTERPOLATION = re.compile(r"\$\{(?P<name>[A-Z0-9_]+)(?::?(?P<op>[-?])(?P<arg>[^}]*))?\}")


# -- helpers ----------------------------------------------------------------------------------------------------


def compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text())


def services() -> dict[str, dict[str, Any]]:
    return compose()["services"]


def with_defaults(value: str) -> str:
    """A Compose value with each `${VAR:-default}` replaced by its default, as with an empty .env."""
    return INTERPOLATION.sub(lambda m: m["arg"] if m["op"] == "-" else f"<{m['name']}>", value)


def environment(service: dict[str, Any]) -> dict[str, str]:
    return {key: with_defaults(str(value)) for key, value in service.get("environment", {}).items()}


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, continuation lines joined and comments dropped."""
    instructions: list[tuple[str, str]] = []
    pending = ""
    for raw in DOCKERFILE.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        pending = f"{pending} {line}".strip()
        if pending.endswith("\\"):
            pending = pending[:-1].rstrip()
            continue
        keyword, _, arguments = pending.partition(" ")
        instructions.append((keyword.upper(), arguments.strip()))
        pending = ""
    return instructions


def image_tag(image: str) -> str:
    name = image.split("@")[0]
    return name.rsplit(":", 1)[1] if ":" in name.rsplit("/", 1)[-1] else ""


def dashboards() -> list[dict[str, Any]]:
    return [json.loads(path.read_text()) for path in sorted((DEPLOY / "grafana" / "dashboards").glob("*.json"))]


def dashboard_exprs(dashboard: dict[str, Any]) -> list[str]:
    return [target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", [])]


def exported_metric_names() -> set[str]:
    """Sample names the gateway's registry exports (counters as `_total`, histograms as `_bucket`/...)."""
    names: set[str] = set()
    for family in Metrics().registry.collect():
        if family.type == "counter":
            names.add(family.name + "_total")
        elif family.type == "histogram":
            names |= {family.name + suffix for suffix in ("_bucket", "_count", "_sum")}
        else:
            names.add(family.name)
    return names


def settings_from(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Settings:
    for name in [n for n in os.environ if n.startswith("HINDSIGHT_")]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return Settings(_env_file=None)  # type: ignore[call-arg]


# -- docker-compose.yml -----------------------------------------------------------------------------------------


def test_compose_file_parses_and_runs_gateway_qdrant_and_redis_by_default() -> None:
    defined = services()
    assert set(defined) == CORE_SERVICES | OBSERVABILITY_SERVICES
    for name in CORE_SERVICES:
        assert "profiles" not in defined[name], name


def test_every_compose_image_is_pinned_to_a_full_version() -> None:
    for name, service in services().items():
        tag = image_tag(with_defaults(service["image"]))
        assert tag, f"{name}: image has no tag"
        assert tag != "latest", name
        # not a floating major-only (or major.minor) tag such as qdrant/qdrant:v1 or jaeger:1.71
        assert re.match(r"^v?\d+\.\d+\.\d+", tag), f"{name}: {tag} is not a full version"


def test_every_long_running_service_has_a_healthcheck() -> None:
    for name, service in services().items():
        check = service.get("healthcheck", {})
        assert check.get("test"), f"{name} has no healthcheck"
        assert not check.get("disable", False), name
        assert "curl" not in json.dumps(check["test"]), f"{name}: curl is not in these images"


def test_qdrant_is_checked_without_curl_and_redis_with_redis_cli() -> None:
    defined = services()
    assert defined["qdrant"]["healthcheck"]["test"] == ["CMD", "bash", "-c", ":> /dev/tcp/127.0.0.1/6333"]
    assert defined["redis"]["healthcheck"]["test"] == ["CMD", "redis-cli", "ping"]


def test_gateway_starts_only_after_qdrant_and_redis_are_healthy() -> None:
    depends = services()["gateway"]["depends_on"]
    assert depends == {"qdrant": {"condition": "service_healthy"}, "redis": {"condition": "service_healthy"}}


def test_published_ports_listen_on_loopback_only() -> None:
    published = [(name, port) for name, service in services().items() for port in service.get("ports", [])]
    assert published
    for name, port in published:
        assert isinstance(port, str), f"{name}: use the 'IP:HOST:CONTAINER' string form"
        assert port.startswith("127.0.0.1:"), f"{name}: {port} is reachable from other machines"


def test_redis_keeps_an_append_only_file_on_a_named_volume() -> None:
    redis = services()["redis"]
    command = redis["command"]
    assert command[command.index("--appendonly") + 1] == "yes"
    assert any(volume.endswith(":/data") and not volume.startswith(".") for volume in redis["volumes"])


def test_qdrant_and_redis_data_live_on_named_volumes() -> None:
    document = compose()
    for name in ("qdrant", "redis", "gateway"):
        for volume in services()[name]["volumes"]:
            source = volume.split(":")[0]
            assert source in document["volumes"], f"{name}: {source} is not a named volume"


def test_observability_services_are_only_in_the_observability_profile() -> None:
    defined = services()
    for name in OBSERVABILITY_SERVICES:
        assert defined[name]["profiles"] == ["observability"], name
    for name in CORE_SERVICES:
        for dependency in defined[name].get("depends_on", {}):
            assert dependency in CORE_SERVICES, f"{name} must not need the observability profile"


def test_gateway_environment_names_the_backends_and_is_valid_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    env = environment(services()["gateway"])
    assert env["HINDSIGHT_REDIS_URL"] == "redis://redis:6379/0"
    assert env["HINDSIGHT_QDRANT_URL"] == "http://qdrant:6333"
    assert env["OTEL_SERVICE_NAME"] == "hindsight"
    assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://otel-collector:4318"
    hindsight = {k: v for k, v in env.items() if k.startswith("HINDSIGHT_") and not v.startswith("<")}
    settings = settings_from(hindsight, monkeypatch)
    assert settings.host == "0.0.0.0"
    assert "gateway:*" in settings.allowed_hosts
    assert "127.0.0.1:*" in settings.allowed_hosts
    assert not settings.embedded


def test_compose_refuses_to_start_without_a_jwt_secret() -> None:
    raw = services()["gateway"]["environment"]["HINDSIGHT_JWT_SECRET"]
    match = INTERPOLATION.fullmatch(raw)
    assert match is not None
    assert (match["name"], match["op"]) == ("HINDSIGHT_JWT_SECRET", "?")


def test_env_example_documents_every_variable_compose_reads() -> None:
    example = (REPO / ".env.example").read_text()
    used = {m["name"] for m in INTERPOLATION.finditer(COMPOSE.read_text())}
    documented = set(re.findall(r"^#?\s*([A-Z][A-Z0-9_]+)=", example, flags=re.MULTILINE))
    assert used <= documented, used - documented
    assert re.search(r"^HINDSIGHT_JWT_SECRET=$", example, flags=re.MULTILINE)
    for name in documented:
        if name.startswith("HINDSIGHT_") and not name.endswith("_HOST_PORT") and name != "HINDSIGHT_IMAGE":
            assert name.removeprefix("HINDSIGHT_").lower() in Settings.model_fields, name


def test_every_mounted_config_file_exists_in_the_repo() -> None:
    for name, service in services().items():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("./"):
                assert (REPO / source).exists(), f"{name}: {source} is missing"


# -- Dockerfile -------------------------------------------------------------------------------------------------


def test_dockerfile_is_multi_stage_from_a_pinned_slim_python_base() -> None:
    bases = [arguments.split()[0] for keyword, arguments in dockerfile_instructions() if keyword == "FROM"]
    assert len(bases) >= 2
    for base in bases:
        assert re.fullmatch(r"python:3\.11\.\d+-slim-bookworm(@sha256:[0-9a-f]{64})?", base), base


def test_dockerfile_switches_to_a_non_root_user_before_cmd() -> None:
    instructions = dockerfile_instructions()
    keywords = [keyword for keyword, _ in instructions]
    assert keywords.count("CMD") == 1
    users = [arguments for keyword, arguments in instructions[: keywords.index("CMD")] if keyword == "USER"]
    assert users, "no USER before CMD"
    assert users[-1].split(":")[0] not in ("root", "0")
    assert keywords.index("USER") > max(i for i, k in enumerate(keywords) if k == "FROM")  # in the final stage


def test_dockerfile_cmd_is_exec_form_hindsight_serve_and_binds_all_interfaces() -> None:
    cmd = next(arguments for keyword, arguments in dockerfile_instructions() if keyword == "CMD")
    assert json.loads(cmd) == ["hindsight", "serve"]
    env = " ".join(arguments for keyword, arguments in dockerfile_instructions() if keyword == "ENV")
    assert "HINDSIGHT_HOST=0.0.0.0" in env
    assert "HINDSIGHT_DATA_DIR=/data" in env


def test_dockerfile_healthcheck_probes_livez_with_python() -> None:
    checks = [arguments for keyword, arguments in dockerfile_instructions() if keyword == "HEALTHCHECK"]
    assert len(checks) == 1
    command = json.loads(checks[0][checks[0].index("CMD") + 3 :].strip())
    assert command[:2] == ["python", "-c"]
    assert "/livez" in command[2]
    assert "urllib" in command[2]


def test_dockerfile_data_dir_is_a_volume_owned_by_the_runtime_user() -> None:
    instructions = dockerfile_instructions()
    assert ("VOLUME", '["/data"]') in instructions
    runs = " ".join(arguments for keyword, arguments in instructions if keyword == "RUN")
    assert re.search(r"chown \S+ /data", runs)


def test_embedding_model_ships_in_the_package_and_loads_without_downloads() -> None:
    import wordllama

    source = (REPO / "memory" / "embedders" / "wordllama_embedder.py").read_text()
    assert "disable_download=True" in source
    assert "cache_dir=package_dir" in source
    package = Path(wordllama.__file__).parent
    assert list(package.glob("weights/*256*.safetensors")), "wordllama's 256-d weights are not in the package"
    runs = " ".join(arguments for keyword, arguments in dockerfile_instructions() if keyword == "RUN")
    assert "HF_HUB_OFFLINE=1" in runs
    assert "build_embedder('wordllama')" in runs


def test_dockerignore_keeps_secrets_and_local_state_out_of_the_build_context() -> None:
    ignored = (REPO / ".dockerignore").read_text().split()
    for entry in (".env", ".venv", ".venv-*", "data", ".git"):
        assert entry in ignored, entry


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


# -- Helm chart (real Helm, through deploy/helm_check.py) -------------------------------------------------------

SCENARIOS = {
    "changed_config": {"config": {"logLevel": "debug"}},
    "optional": {
        "ingress": {"enabled": True},
        "serviceMonitor": {"enabled": True},
        "networkPolicy": {"enabled": True},
        "otel": {"enabled": True, "endpoint": "http://otel-collector:4318"},
        "config": {"allowedHosts": ["memory.example.com", "memory.example.com:*"]},
    },
    "existing_secret": {"auth": {"existingSecret": "hindsight-keys"}},
    "embedded_single": {
        "replicaCount": 1,
        "autoscaling": {"enabled": False},
        "config": {"qdrantUrl": "", "redisUrl": ""},
    },
}
FAILING_SCENARIOS = {
    "embedded_replicas": {"replicaCount": 3, "autoscaling": {"enabled": False}, "config": {"qdrantUrl": ""}},
    "embedded_hpa": {"replicaCount": 1, "config": {"redisUrl": ""}},
    "bad_schema": {"replicaCount": 0},
}


def run_helm_check(*args: str) -> dict[str, Any]:
    done = subprocess.run(
        [str(HELM_PYTHON), str(HELM_CHECK), *args], capture_output=True, text=True, timeout=120, check=False
    )
    try:
        report: dict[str, Any] = json.loads(done.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"helm_check.py printed no JSON (exit {done.returncode}):\n{done.stdout}\n{done.stderr}")
    return report


@pytest.fixture(scope="session")
def helm_venv() -> Path:
    """.venv-helm with helm-sdkpy, created when missing (needs a Python >= 3.12: fails, never skips, without)."""
    done = subprocess.run(
        [sys.executable, str(HELM_CHECK), "--ensure-venv"], capture_output=True, text=True, timeout=600, check=False
    )
    if done.returncode != 0:
        pytest.fail(f"could not create .venv-helm for the Helm checks:\n{done.stdout}\n{done.stderr}")
    return HELM_PYTHON


@pytest.fixture(scope="session")
def helm_report(helm_venv: Path) -> dict[str, Any]:
    args = [f"--render={name}={json.dumps(values)}" for name, values in SCENARIOS.items()]
    args += [f"--render-fails={name}={json.dumps(values)}" for name, values in FAILING_SCENARIOS.items()]
    return run_helm_check(*args)


def objects(report: dict[str, Any], scenario: str) -> dict[str, dict[str, Any]]:
    rendered = report["renders"][scenario]
    assert rendered["ok"], rendered["error"]
    return {doc["kind"]: doc for doc in yaml.safe_load_all(rendered["manifest"]) if doc}


def gateway_container(deployment: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = deployment["spec"]["template"]["spec"]["containers"][0]
    return container


def test_chart_lints_clean_with_helm(helm_report: dict[str, Any]) -> None:
    lint = helm_report["lint"]
    assert lint["ok"]
    assert lint["charts_linted"] == 1
    assert [m for m in lint["messages"] if m["severity"] in ("ERROR", "WARNING")] == []
    assert helm_report["ok"], {n: r["error"] for n, r in helm_report["renders"].items()}


def test_lint_fails_on_a_broken_template(helm_venv: Path, tmp_path: Path) -> None:
    chart = tmp_path / "hindsight"
    shutil.copytree(CHART, chart)
    (chart / "templates" / "broken.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {{ .Values.x\n")
    report = run_helm_check(f"--chart={chart}", "--summary")
    assert not report["lint"]["ok"]
    assert {"severity": "ERROR", "path": "templates/"} in report["lint"]["messages"]
    assert not report["ok"]


def test_default_render_probes_livez_and_readyz(helm_report: dict[str, Any]) -> None:
    container = gateway_container(objects(helm_report, "defaults")["Deployment"])
    assert container["livenessProbe"]["httpGet"]["path"] == "/livez"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["startupProbe"]["httpGet"]["path"] == "/livez"
    assert container["command"] == ["hindsight", "serve"]
    assert container["resources"]["requests"]
    assert container["resources"]["limits"]["memory"]


def test_default_render_runs_non_root_on_a_read_only_root_filesystem(helm_report: dict[str, Any]) -> None:
    deployment = objects(helm_report, "defaults")["Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    container = gateway_container(deployment)
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert "emptyDir" in volumes[mounts["/tmp"]]
    assert "emptyDir" in volumes[mounts["/data"]]


def test_pods_roll_when_the_configmap_or_secret_changes(helm_report: dict[str, Any]) -> None:
    def annotations(scenario: str) -> dict[str, str]:
        pod_annotations: dict[str, str] = objects(helm_report, scenario)["Deployment"]["spec"]["template"]["metadata"][
            "annotations"
        ]
        return pod_annotations

    defaults, changed = annotations("defaults"), annotations("changed_config")
    for key in ("checksum/config", "checksum/secret"):
        assert re.fullmatch(r"[0-9a-f]{64}", defaults[key]), key
    assert defaults["checksum/config"] != changed["checksum/config"]


def test_default_render_scales_two_or_more_stateless_replicas(helm_report: dict[str, Any]) -> None:
    rendered = objects(helm_report, "defaults")
    assert "replicas" not in rendered["Deployment"]["spec"]  # the HPA owns it
    assert rendered["HorizontalPodAutoscaler"]["spec"]["minReplicas"] >= 2
    assert rendered["PodDisruptionBudget"]["spec"]["minAvailable"] == 1
    config = rendered["ConfigMap"]["data"]
    assert config["HINDSIGHT_QDRANT_URL"].startswith("http")
    assert config["HINDSIGHT_REDIS_URL"].startswith("redis://")
    assert config["HINDSIGHT_HOST"] == "0.0.0.0"


def test_configmap_is_valid_settings_and_the_key_is_only_in_the_secret(
    helm_report: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    rendered = objects(helm_report, "defaults")
    config = rendered["ConfigMap"]["data"]
    secret = {k: base64.b64decode(v).decode() for k, v in rendered["Secret"]["data"].items()}
    assert not any("JWT_SECRET" in key for key in config)
    assert len(secret["HINDSIGHT_JWT_SECRET"]) == 48
    settings = settings_from({k: v for k, v in {**config, **secret}.items() if k.startswith("HINDSIGHT_")}, monkeypatch)
    assert not settings.embedded
    assert settings.jwt_secret is not None


def test_helm_test_hook_pod_calls_readyz_through_the_service(helm_report: dict[str, Any]) -> None:
    hooks = helm_report["renders"]["defaults"]["hooks"]
    assert [(h["kind"], h["events"]) for h in hooks] == [("Pod", ["test"])]
    pod = yaml.safe_load(hooks[0]["manifest"])
    script = pod["spec"]["containers"][0]["command"][-1]
    assert "http://hindsight:8080/readyz" in script
    assert pod["spec"]["restartPolicy"] == "Never"
    service = objects(helm_report, "defaults")["Service"]["spec"]["selector"]
    assert not set(service.items()) <= set(pod["metadata"]["labels"].items()), "the Service would select it"


def test_optional_ingress_service_monitor_network_policy_and_otel(helm_report: dict[str, Any]) -> None:
    rendered = objects(helm_report, "optional")
    assert {"Ingress", "ServiceMonitor", "NetworkPolicy"} <= set(rendered)
    assert rendered["ServiceMonitor"]["spec"]["endpoints"][0]["path"] == "/metrics"
    config = rendered["ConfigMap"]["data"]
    assert config["HINDSIGHT_OTEL_ENABLED"] == "true"
    assert config["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://otel-collector:4318"
    assert json.loads(config["HINDSIGHT_ALLOWED_HOSTS"]) == ["memory.example.com", "memory.example.com:*"]
    assert not {"Ingress", "ServiceMonitor", "NetworkPolicy"} & set(objects(helm_report, "defaults"))


def test_existing_secret_replaces_the_generated_one(helm_report: dict[str, Any]) -> None:
    rendered = objects(helm_report, "existing_secret")
    assert "Secret" not in rendered
    env_from = gateway_container(rendered["Deployment"])["envFrom"]
    assert {"secretRef": {"name": "hindsight-keys"}} in env_from


def test_embedded_mode_renders_as_a_single_replica_without_hpa(helm_report: dict[str, Any]) -> None:
    rendered = objects(helm_report, "embedded_single")
    assert rendered["Deployment"]["spec"]["replicas"] == 1
    assert not {"HorizontalPodAutoscaler", "PodDisruptionBudget"} & set(rendered)
    assert "HINDSIGHT_QDRANT_URL" not in rendered["ConfigMap"]["data"]


@pytest.mark.parametrize("scenario", ["embedded_replicas", "embedded_hpa"])
def test_chart_refuses_several_replicas_without_both_server_urls(helm_report: dict[str, Any], scenario: str) -> None:
    rendered = helm_report["renders"][scenario]
    assert not rendered["ok"]
    assert "single-replica only" in rendered["error"]


def test_values_schema_rejects_invalid_values(helm_report: dict[str, Any]) -> None:
    rendered = helm_report["renders"]["bad_schema"]
    assert not rendered["ok"]
    assert "schema" in rendered["error"]
    assert "/replicaCount" in rendered["error"]

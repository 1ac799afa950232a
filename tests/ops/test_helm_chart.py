"""The Helm chart, linted and rendered by Helm's own Go library through `deploy/helm_check.py` (helm-sdkpy in a
Python >= 3.12 venv, `.venv-helm`, created on first use)."""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from ops.config import SETTING_FIELDS
from tests.ops.deploy_support import (
    ALERTS,
    CHART,
    HELM_CHECK,
    HELM_PYTHON,
    alert_rules,
    compose_scrape_job,
    run_promtool,
    selectors,
    settings_from,
)

# -- Helm chart (real Helm, through deploy/helm_check.py) -------------------------------------------------------

# The chart requires a token key (it never generates one): every scenario that should render sets one.
KEY = "test-only-hs256-secret-for-the-chart-tests-0123"
OTHER_KEY = "another-test-only-hs256-secret-for-chart-tests-9"
MONITORING = {"serviceMonitor": {"enabled": True}, "prometheusRule": {"enabled": True}}
EVERYTHING = {
    **MONITORING,
    "ingress": {"enabled": True},
    "networkPolicy": {"enabled": True},
    "otel": {"enabled": True, "endpoint": "http://otel-collector:4318"},
    "auth": {"jwtSecret": KEY, "qdrantApiKey": "qdrant-test-key"},
}


def keyed(values: dict[str, Any], key: str = KEY) -> dict[str, Any]:
    return {**values, "auth": {"jwtSecret": key, **values.get("auth", {})}}


SCENARIOS = {
    "keyed": keyed({}),
    "rekeyed": keyed({}, OTHER_KEY),
    "changed_config": keyed({"config": {"logLevel": "debug"}}),
    "optional": keyed(
        {
            "ingress": {"enabled": True},
            "serviceMonitor": {"enabled": True},
            "networkPolicy": {"enabled": True},
            "otel": {"enabled": True, "endpoint": "http://otel-collector:4318"},
            "config": {
                "allowedHosts": ["memory.example.com", "memory.example.com:*"],
                "forwardedAllowIps": ["10.42.0.0/16"],
            },
        }
    ),
    "existing_secret": {"auth": {"existingSecret": "hindsight-keys"}},
    "public_key": {
        "auth": {"jwtPublicKey": "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQY=\n-----END PUBLIC KEY-----"}
    },
    "ingress_tuned": keyed(
        {
            "ingress": {"enabled": True, "annotations": {"nginx.ingress.kubernetes.io/proxy-read-timeout": "120"}},
            "config": {"maxRequestBytes": 4194304},
        }
    ),
    "ingress_other_controller": keyed(
        {"ingress": {"enabled": True, "nginx": {"enabled": False}, "annotations": {"example.com/timeout": "30s"}}}
    ),
    "embedded_single": keyed(
        {
            "replicaCount": 1,
            "autoscaling": {"enabled": False},
            "config": {"qdrantUrl": "", "redisUrl": ""},
        }
    ),
    # Two offline renders (each a fresh install against an empty fake API, like `helm template` or Argo CD) of
    # the same values, every optional object on.
    "offline_first@prod": EVERYTHING,
    "offline_second@prod": EVERYTHING,
    # Release "prod": the Service is prod-hindsight, yet the job must stay "hindsight".
    "monitoring@prod": keyed(MONITORING),
    "renamed@prod": keyed({**MONITORING, "nameOverride": "memory"}),
}
FAILING_SCENARIOS = {
    "embedded_replicas": keyed({"replicaCount": 3, "autoscaling": {"enabled": False}, "config": {"qdrantUrl": ""}}),
    "embedded_hpa": keyed({"replicaCount": 1, "config": {"redisUrl": ""}}),
    "bad_schema": keyed({"replicaCount": 0}),
    "no_key_with_monitoring": MONITORING,
    "short_key": keyed({}, "too-short"),
    "max_request_bytes_in_extra_env": keyed({"config": {"extraEnv": {"HINDSIGHT_MAX_REQUEST_BYTES": "4096"}}}),
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
    rendered = report["renders"][scenario.split("@")[0]]
    assert rendered["ok"], rendered["error"]
    return {doc["kind"]: doc for doc in yaml.safe_load_all(rendered["manifest"]) if doc}


def refusal(report: dict[str, Any], scenario: str) -> str:
    """The error of a scenario the chart refuses to render."""
    rendered = report["renders"][scenario]
    assert not rendered["ok"]
    return str(rendered["error"])


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
    resources = container["resources"]
    assert set(resources["requests"]) == set(resources["limits"]) == {"cpu", "memory"}


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

    defaults, changed = annotations("keyed"), annotations("changed_config")
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


def secret_mount(deployment: dict[str, Any]) -> tuple[str, str]:
    """(the Secret's name, where it is mounted) in the gateway pod, and that it reaches the gateway as files only."""
    pod = deployment["spec"]["template"]["spec"]
    container = gateway_container(deployment)
    assert all("secretRef" not in source for source in container["envFrom"]), "a Secret in the environment"
    assert all("valueFrom" not in variable for variable in container.get("env", [])), "a Secret in the environment"
    volumes = {v["name"]: v for v in pod["volumes"] if "secret" in v}
    assert len(volumes) == 1
    ((name, volume),) = volumes.items()
    mount = next(m for m in container["volumeMounts"] if m["name"] == name)
    assert mount["readOnly"] is True
    env = {variable["name"]: variable["value"] for variable in container["env"]}
    assert env["HINDSIGHT_SECRETS_DIR"] == mount["mountPath"]
    assert volume["secret"]["defaultMode"] == 0o440 and pod["securityContext"]["fsGroup"] == 10001
    return volume["secret"]["secretName"], mount["mountPath"]


def test_the_secret_is_mounted_as_files_that_the_gateway_reads_and_the_configmap_is_valid_settings(
    helm_report: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    rendered = objects(helm_report, "optional")
    config = rendered["ConfigMap"]["data"]
    secret = {k: base64.b64decode(v).decode() for k, v in rendered["Secret"]["data"].items()}
    assert not any("JWT_SECRET" in key for key in config)
    assert secret == {"HINDSIGHT_JWT_SECRET": KEY}
    name, _ = secret_mount(rendered["Deployment"])
    assert name == rendered["Secret"]["metadata"]["name"]
    for key, value in {**secret, "HINDSIGHT_REDIS_URL": "redis://:pass@redis-master:6379/0"}.items():
        (tmp_path / key).write_text(value)  # the Secret volume: one file per key (an existingSecret may hold more)
    env = {k: v for k, v in config.items() if k.startswith("HINDSIGHT_")} | {"HINDSIGHT_SECRETS_DIR": str(tmp_path)}
    settings = settings_from(env, monkeypatch)
    assert not settings.backends.embedded
    assert settings.auth.jwt_secret is not None and settings.auth.jwt_secret.get_secret_value() == KEY
    assert (
        settings.backends.redis_url == "redis://:pass@redis-master:6379/0"
    )  # the Secret's URL wins over config.redisUrl
    assert settings.serving.forwarded_allow_ips == [
        "10.42.0.0/16"
    ]  # the Ingress controller's pods: clients' own addresses


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
    assert secret_mount(rendered["Deployment"])[0] == "hindsight-keys"


# -- Ingress: the MCP endpoint and its OAuth metadata only, with the gateway's limits ------------------------------

NGINX = "nginx.ingress.kubernetes.io/"


def ingress_paths(ingress: dict[str, Any]) -> list[tuple[str, str]]:
    return [(p["path"], p["pathType"]) for rule in ingress["spec"]["rules"] for p in rule["http"]["paths"]]


def test_the_ingress_exposes_only_mcp_and_well_known_by_default(helm_report: dict[str, Any]) -> None:
    for scenario in ("optional", "offline_first"):
        ingress = objects(helm_report, scenario)["Ingress"]
        assert ingress_paths(ingress) == [("/mcp", "Prefix"), ("/.well-known", "Prefix")], scenario
    probes = {
        gateway_container(objects(helm_report, "optional")["Deployment"])[p]["httpGet"]["path"]
        for p in ("livenessProbe", "readinessProbe", "startupProbe")
    }
    service_monitor = objects(helm_report, "optional")["ServiceMonitor"]["spec"]["endpoints"][0]["path"]
    for internal in (*probes, service_monitor, "/debug/memories", "/debug/stats"):
        assert not any(internal.startswith(path) for path, _ in ingress_paths(ingress)), internal


def test_the_ingress_nginx_limits_follow_the_gateway_settings(helm_report: dict[str, Any]) -> None:
    rendered = objects(helm_report, "optional")
    annotations = rendered["Ingress"]["metadata"]["annotations"]
    max_bytes = rendered["ConfigMap"]["data"]["HINDSIGHT_MAX_REQUEST_BYTES"]
    assert max_bytes == str(SETTING_FIELDS["max_request_bytes"].default)  # the gateway's default
    assert annotations[NGINX + "proxy-body-size"] == max_bytes
    idempotency_wait = SETTING_FIELDS["idempotency_wait_seconds"].default
    assert int(annotations[NGINX + "proxy-read-timeout"]) > idempotency_wait  # a retry's wait fits in
    assert int(annotations[NGINX + "proxy-send-timeout"]) > 0
    assert int(annotations[NGINX + "proxy-connect-timeout"]) > 0
    # the gateway's per-client connection cap sees only the controller: the controller applies it per client
    assert annotations[NGINX + "limit-connections"] == str(SETTING_FIELDS["max_connections_per_client"].default)
    tuned = objects(helm_report, "ingress_tuned")
    assert tuned["ConfigMap"]["data"]["HINDSIGHT_MAX_REQUEST_BYTES"] == "4194304"
    assert tuned["Ingress"]["metadata"]["annotations"][NGINX + "proxy-body-size"] == "4194304"
    assert tuned["Ingress"]["metadata"]["annotations"][NGINX + "proxy-read-timeout"] == "120"  # yours win
    other = objects(helm_report, "ingress_other_controller")["Ingress"]["metadata"]["annotations"]
    assert other == {"example.com/timeout": "30s"}


def test_the_request_size_is_set_in_one_place(helm_report: dict[str, Any]) -> None:
    error = refusal(helm_report, "max_request_bytes_in_extra_env")
    assert "set config.maxRequestBytes, not config.extraEnv.HINDSIGHT_MAX_REQUEST_BYTES" in error


def test_embedded_mode_renders_as_a_single_replica_without_hpa(helm_report: dict[str, Any]) -> None:
    rendered = objects(helm_report, "embedded_single")
    assert rendered["Deployment"]["spec"]["replicas"] == 1
    assert not {"HorizontalPodAutoscaler", "PodDisruptionBudget"} & set(rendered)
    assert "HINDSIGHT_QDRANT_URL" not in rendered["ConfigMap"]["data"]


@pytest.mark.parametrize("scenario", ["embedded_replicas", "embedded_hpa"])
def test_chart_refuses_several_replicas_without_both_server_urls(helm_report: dict[str, Any], scenario: str) -> None:
    assert "single-replica only" in refusal(helm_report, scenario)


def test_values_schema_rejects_invalid_values(helm_report: dict[str, Any]) -> None:
    error = refusal(helm_report, "bad_schema")
    assert "schema" in error
    assert "/replicaCount" in error


# -- the token key: required, never generated, so offline renders are stable -------------------------------------


@pytest.mark.parametrize("scenario", ["defaults_without_key", "no_key_with_monitoring"])
def test_chart_refuses_to_render_without_a_token_key(helm_report: dict[str, Any], scenario: str) -> None:
    assert "hindsight: no token key: set auth.existingSecret" in refusal(helm_report, scenario)


def test_chart_refuses_a_short_hs256_secret(helm_report: dict[str, Any]) -> None:
    assert "at least 32 characters" in refusal(helm_report, "short_key")


def test_helm_template_renders_byte_identical_manifests_twice_with_the_same_values(
    helm_report: dict[str, Any],
) -> None:
    first, second = helm_report["renders"]["offline_first"], helm_report["renders"]["offline_second"]
    assert first["ok"], first["error"]
    assert first["manifest"] == second["manifest"]
    assert first["hooks"] == second["hooks"]
    kinds = set(objects(helm_report, "offline_first"))
    assert {"Secret", "Deployment", "ServiceMonitor", "PrometheusRule", "Ingress", "NetworkPolicy"} <= kinds
    assert re.search(r"checksum/secret: [0-9a-f]{64}", first["manifest"])


def test_secret_and_its_checksum_follow_the_key_value_only(helm_report: dict[str, Any]) -> None:
    def rendered(scenario: str) -> tuple[str, str]:
        found = objects(helm_report, scenario)
        checksum = found["Deployment"]["spec"]["template"]["metadata"]["annotations"]["checksum/secret"]
        return base64.b64decode(found["Secret"]["data"]["HINDSIGHT_JWT_SECRET"]).decode(), checksum

    (key, checksum), (other_key, other_checksum) = rendered("keyed"), rendered("rekeyed")
    assert (key, other_key) == (KEY, OTHER_KEY)
    assert checksum != other_checksum
    assert rendered("changed_config")[1] == checksum  # a config change rolls the pods through checksum/config


def test_public_key_renders_without_a_shared_secret(helm_report: dict[str, Any]) -> None:
    secret = objects(helm_report, "public_key")["Secret"]["data"]
    assert set(secret) == {"HINDSIGHT_JWT_PUBLIC_KEY"}


def test_chart_templates_use_no_cluster_lookup_and_no_random_or_time_values() -> None:
    """`lookup` answers nothing offline and random or time values change on every render: either would make
    `helm template` / Argo CD renders differ."""
    nondeterministic = re.compile(r"\b(lookup|rand[A-Za-z]*|uuidv4|now|genPrivateKey|genCA|genSelfSignedCert)\b")
    for template in sorted((CHART / "templates").rglob("*")):
        if template.is_file():
            code = " ".join(re.findall(r"\{\{(.*?)\}\}", template.read_text(), flags=re.DOTALL))
            code = re.sub(r"/\*.*?\*/", "", code, flags=re.DOTALL)  # template comments
            assert not nondeterministic.findall(code), template.name


# -- ServiceMonitor and PrometheusRule: the job label the alerts select ------------------------------------------


def scrape_job(service_monitor: dict[str, Any], service: dict[str, Any]) -> str:
    """The `job` label Prometheus Operator gives the targets of `service_monitor` on `service`. Its generated
    config (pkg/prometheus/promcfg.go) sets job to the Service name, then, when spec.jobLabel is set, to the value
    of that Service label when it is not empty; endpoint relabelings come last (the chart sets none)."""
    spec = service_monitor["spec"]
    labels = service["metadata"]["labels"]
    assert spec["selector"]["matchLabels"].items() <= labels.items(), "the ServiceMonitor does not select the Service"
    assert all("relabelings" not in endpoint for endpoint in spec["endpoints"])
    job: str = service["metadata"]["name"]
    if spec.get("jobLabel") and labels.get(spec["jobLabel"]):
        job = labels[spec["jobLabel"]]
    return job


def test_service_monitor_job_label_is_the_job_the_alerts_dashboard_and_compose_use(
    helm_report: dict[str, Any],
) -> None:
    rendered = objects(helm_report, "monitoring@prod")
    service = rendered["Service"]
    assert service["metadata"]["name"] == "prod-hindsight"  # the job Prometheus Operator would use by default
    job = scrape_job(rendered["ServiceMonitor"], service)
    assert job == compose_scrape_job() == "hindsight"
    rule_jobs = {m["job"] for rule in alert_rules() for _, m in selectors(rule["expr"]) if "job" in m}
    assert rule_jobs == {f"={job}"}
    dashboard_job = json.loads((ALERTS.parent / "grafana" / "dashboards" / "hindsight.json").read_text())
    job_variable = next(v for v in dashboard_job["templating"]["list"] if v["name"] == "job")
    assert job_variable["current"]["value"] == job


def narrowed(text: str, job: str, namespace: str, fullname: str) -> str:
    """The rule file as the chart's PrometheusRule must carry it for one release."""
    text = text.replace('job="hindsight"', f'job="{job}", namespace="{namespace}"')
    return text.replace('pod=~".*hindsight.*"', f'namespace="{namespace}", pod=~"{fullname}-.*"')


def test_prometheus_rule_carries_the_shipped_rules_narrowed_to_the_release(helm_report: dict[str, Any]) -> None:
    rendered = objects(helm_report, "monitoring@prod")
    rule = rendered["PrometheusRule"]
    assert rule["metadata"]["name"] == "prod-hindsight"
    shipped = yaml.safe_load(narrowed(ALERTS.read_text(), "hindsight", "default", "prod-hindsight"))
    assert rule["spec"] == {"groups": shipped["groups"]}
    for expr in [r["expr"] for group in rule["spec"]["groups"] for r in group["rules"]]:
        scoped = [matchers for _, matchers in selectors(expr)]
        assert scoped
        assert all(matchers["namespace"] == "=default" for matchers in scoped), expr


def test_name_override_moves_the_job_label_and_the_rule_selectors_together(helm_report: dict[str, Any]) -> None:
    rendered = objects(helm_report, "renamed@prod")
    job = scrape_job(rendered["ServiceMonitor"], rendered["Service"])
    assert job == "memory"
    exprs = " ".join(r["expr"] for group in rendered["PrometheusRule"]["spec"]["groups"] for r in group["rules"])
    assert 'job="hindsight"' not in exprs
    assert 'absent(up{job="memory", namespace="default"} == 1)' in exprs
    assert 'namespace="default", pod=~"prod-memory-.*"' in exprs


def test_rendered_prometheus_rule_passes_promtool_check_rules(helm_report: dict[str, Any], tmp_path: Path) -> None:
    spec = objects(helm_report, "monitoring@prod")["PrometheusRule"]["spec"]
    rules = tmp_path / "prometheusrule.yml"
    rules.write_text(yaml.safe_dump(spec))
    done = run_promtool("check", "rules", str(rules))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(alert_rules())} rules found" in done.stdout

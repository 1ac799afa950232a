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

from tests.ops.deploy_support import (
    CHART,
    HELM_CHECK,
    HELM_PYTHON,
    settings_from,
)

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

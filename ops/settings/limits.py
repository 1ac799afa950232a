"""`LimitSettings`: how large a request and its parts may be (content, queries, batches, bodies), how many
memories a recall reads and answers, and the working memory's window."""

from __future__ import annotations

from pydantic import Field

from ops.settings.base import SettingsGroup


class LimitSettings(SettingsGroup):
    """Sizes (`HINDSIGHT_MAX_*`, `HINDSIGHT_DEFAULT_TOP_K`, `HINDSIGHT_RECALL_CANDIDATES`, ...)."""

    max_content_chars: int = Field(8000, ge=1)
    default_top_k: int = Field(8, ge=1)
    max_top_k: int = Field(50, ge=1, description="Largest recall top_k (a model reads a few dozen memories).")
    max_query_chars: int = Field(
        2000, ge=1, description="Longest recall query: a longer one is refused (ask the question, not its context)."
    )
    max_token_budget: int = Field(32_000, ge=1, description="Largest recall token_budget (a context window).")
    recall_candidates: int = Field(
        75,
        ge=50,  # the stores never read a candidate list shallower (memory.stores.common.PREFETCH_MIN)
        le=1000,
        description="How deep a recall reads each candidate list (by meaning, by keywords) before its scoring, "
        "at least the stores' floor of 50: "
        "deeper lets conversation context and cues lift more (LoCoMo dev recall@10 0.782 at 50, 0.797 at 75, "
        "0.800 at 100), at CPU per recall (x1.22 at 75, x1.50 at 100 against 50; bench/RESULTS.md).",
    )
    max_request_bytes: int = Field(1_048_576, ge=1024)
    max_batch_items: int = Field(256, ge=1, le=10_000)
    working_memory_turns: int = Field(10, ge=1, le=1000)
    working_memory_ttl_seconds: int = Field(86_400, ge=1)
    session_background_top_k: int = Field(5, ge=0, le=50, description="Memories start_session loads for its goal.")

"""Step 3 of the write pipeline (docs/DESIGN.md § "The write path"), choosing the rater when the caller gives no
importance: the optional LLM (an `ImportanceRater`) within a deadline, else the rules of `memory.pipeline.importance`.

The write never waits longer than the deadline and never fails because of the LLM: a timeout, an error or an
answer that is not a rating falls back to the rules, with the reason recorded. The returned `notes` are what the
memory records under `metadata["_pipeline"]["importance"]`:
`{"value", "source": "llm"}`, or `{"value", "rules", "source": "rules"}` (or `"source": "default"` when the
rules were skipped) plus `"llm_error"` after a failed ask.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

import anyio

from memory.errors import BackendUnavailable
from memory.pipeline import importance
from memory.ports import ImportanceRater

logger = logging.getLogger("hindsight.pipeline")
MAX_REASON_CHARS = 120
DEFAULT_IMPORTANCE = 0.5  # when neither the LLM nor the rules gave a value


@dataclass(frozen=True, slots=True)
class RatedImportance:
    value: float
    notes: dict[str, Any]


async def rate_importance(
    content: str,
    *,
    rules: importance.ImportanceVerdict | None,
    rater: ImportanceRater | None,
    timeout_seconds: float,
) -> RatedImportance:
    """The importance of `content` (0..1) from `rater` if it answers within `timeout_seconds`, else `rules`, the
    verdict of the rules computed beforehand (`memory.pipeline.analysis`, off the event loop), else the default
    when the rules were skipped (their CPU budget ran out)."""
    failure: str | None = None
    if rater is not None:
        unexpected = False
        try:
            with anyio.fail_after(timeout_seconds):
                value = await rater.rate(content)
            if not math.isfinite(value):
                raise BackendUnavailable(f"LLM rating is not a number: {value}")
            value = round(min(1.0, max(0.0, value)), 4)
            return RatedImportance(value, {"value": value, "source": "llm"})
        except TimeoutError:
            failure = f"no answer within {timeout_seconds:g} s"
        except BackendUnavailable as exc:
            failure = exc.message
        except Exception as exc:  # any other failure of an optional rater must not fail the write either
            failure, unexpected = type(exc).__name__, True
        logger.warning("LLM importance failed, rating by rules: %s", failure, exc_info=unexpected)
    if rules is None:
        notes: dict[str, Any] = {"value": DEFAULT_IMPORTANCE, "source": "default"}
        if failure is not None:
            notes["llm_error"] = failure[:MAX_REASON_CHARS]
        return RatedImportance(DEFAULT_IMPORTANCE, notes)
    rated = rules
    notes = {"value": rated.value, "rules": list(rated.rules), "source": "rules"}
    if failure is not None:
        notes["llm_error"] = failure[:MAX_REASON_CHARS]
    return RatedImportance(rated.value, notes)

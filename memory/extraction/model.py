"""The types of fact extraction: what goes in (`SourceEvent`, one event of an agent's turn), what comes out
(`ExtractedFact`, one self-contained statement with the ids of the events it came from), the `FactExtractor`
protocol every extractor follows, and `Extraction`, the detailed answer that also says which method produced the
facts and why a fallback ran.

Both dataclasses check themselves on construction (a fact without a source, a naive datetime or an unknown event
type is a `ValueError`), so no extractor can hand on a fact that breaks provenance.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol, get_args

from memory.events.model import EVENT_TYPES

FactKind = Literal["episodic", "semantic"]
Method = Literal["llm", "rules"]

FACT_KINDS: frozenset[str] = frozenset(get_args(FactKind))

# The longest statement an extractor hands on (the LLM's answers are held to it; the rules stay well below it:
# a sentence is cut at `sentences.MAX_SENTENCE_CHARS`, a tool fact at `rules.MAX_TOOL_FACT_CHARS`).
MAX_FACT_CHARS = 1_000


def _require_aware(occurred_at: datetime) -> None:
    if occurred_at.tzinfo is None or occurred_at.utcoffset() is None:
        raise ValueError("occurred_at must be timezone-aware")


@dataclass(frozen=True, slots=True)
class SourceEvent:
    id: str  # the event's id, carried into provenance
    type: str  # one of EVENT_TYPES
    content: str
    occurred_at: datetime  # tz-aware; relative dates are resolved against its local date
    speaker: str | None = None  # a display name if known ("Caroline"); None -> "the user" / "the assistant"
    call_id: str | None = None  # binds a tool_call to its tool_result
    tool: str | None = None  # tool name for tool_call / tool_result

    def __post_init__(self) -> None:
        if not self.id:
            raise ValueError("a source event needs an id")
        if self.type not in EVENT_TYPES:
            raise ValueError(f"unknown event type {self.type!r}; one of {sorted(EVENT_TYPES)}")
        _require_aware(self.occurred_at)


@dataclass(frozen=True, slots=True)
class ExtractedFact:
    content: str  # one self-contained statement
    source_event_ids: tuple[str, ...]  # never empty
    kind: FactKind  # preferences/traits/standing facts -> semantic; events/plans/requests -> episodic
    occurred_at: datetime  # of its (last) source event

    def __post_init__(self) -> None:
        if not self.content.strip():
            raise ValueError("a fact needs content")
        if not self.source_event_ids or not all(self.source_event_ids):
            raise ValueError("a fact needs at least one source event id")
        if self.kind not in FACT_KINDS:
            raise ValueError(f"unknown fact kind {self.kind!r}")
        _require_aware(self.occurred_at)


@dataclass(frozen=True, slots=True)
class Extraction:
    """The detailed answer of an extractor: its facts, the method that produced them ("llm", or "rules" when the
    rule-based extractor ran, alone or as the LLM's fallback) and, after a fallback, why (e.g. "timeout",
    "backend_unavailable: ...", "invalid_answer: unknown source event id 'e9'")."""

    facts: tuple[ExtractedFact, ...]
    method: Method
    fallback_reason: str | None = None


class FactExtractor(Protocol):
    async def extract(self, events: Sequence[SourceEvent]) -> list[ExtractedFact]: ...

"""The extraction types refuse what would break provenance: a fact without a source, a naive time, an unknown
event type or fact kind."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from memory.extraction import EVENT_TYPES, ExtractedFact, SourceEvent

NOW = datetime(2026, 12, 2, tzinfo=UTC)


def test_the_event_types_are_the_five_of_the_issue() -> None:
    expected = {"user_message", "assistant_message", "tool_call", "tool_result", "system"}
    assert expected == EVENT_TYPES


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda: SourceEvent("", "user_message", "hi", NOW), "needs an id"),
        (lambda: SourceEvent("e1", "chat", "hi", NOW), "unknown event type"),
        (lambda: SourceEvent("e1", "user_message", "hi", datetime(2026, 12, 2)), "timezone-aware"),
        (lambda: ExtractedFact("The user likes jazz", (), "semantic", NOW), "source event id"),
        (lambda: ExtractedFact("The user likes jazz", ("",), "semantic", NOW), "source event id"),
        (lambda: ExtractedFact("  ", ("e1",), "semantic", NOW), "needs content"),
        (lambda: ExtractedFact("The user likes jazz", ("e1",), "preference", NOW), "unknown fact kind"),  # type: ignore[arg-type]
        (lambda: ExtractedFact("The user likes jazz", ("e1",), "semantic", datetime(2026, 12, 2)), "timezone-aware"),
    ],
)
def test_an_event_or_fact_that_breaks_provenance_is_refused(make: Callable[[], object], reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        make()

"""Dialogue turns in context: which writes are stored with the turn before them, and how their vectors mix."""

from __future__ import annotations

import math

import pytest

from memory.pipeline.turns import dialogue_context, in_context, keywords_in_context
from memory.ports import SparseVector


@pytest.mark.parametrize(
    ("content", "previous", "expected"),
    [
        ("Melanie: Yes, I sent it", "Caroline: Did you send it?", "Caroline: Did you send it?"),
        ("[8 May 2023] user: 明天见", "[8 May 2023] assistant: 好的", "[8 May 2023] assistant: 好的"),
        ("The user lives in Porto", "user: hello", None),  # a standalone statement keeps its own vector
        ("user: I moved", "The office is on floor 3", None),  # the memory before is no turn
        ("user: I moved", None, None),  # first in its session
    ],
)
def test_only_a_dialogue_turn_after_another_turn_gets_context(
    content: str, previous: str | None, expected: str | None
) -> None:
    assert dialogue_context(content, previous, 0.6) == expected


def test_a_zero_weight_turns_context_off() -> None:
    assert dialogue_context("b: yes", "a: really?", 0.0) is None


def test_the_mix_is_the_normalised_weighted_sum() -> None:
    mixed = in_context([1.0, 0.0], [0.0, 1.0], 0.5)

    assert mixed == pytest.approx([1 / math.sqrt(1.25), 0.5 / math.sqrt(1.25)])
    assert in_context([0.0, 0.0], [0.0, 0.0], 0.5) == [0.0, 0.0]


def test_the_keyword_vector_gets_the_previous_turns_terms_at_their_weight_and_shared_terms_add_up() -> None:
    own = SparseVector((1, 5), (2.0, 1.0))
    previous = SparseVector((5, 9), (1.0, 4.0))

    assert keywords_in_context(own, previous, 0.25) == SparseVector((1, 5, 9), (2.0, 1.25, 1.0))

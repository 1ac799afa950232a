"""Dialogue turns in context (write pipeline, before the store step): a turn of a conversation ("speaker: text")
written in a session right after another turn is stored with its vectors mixed with that turn's, so a search
finds a reply ("Yes, last Tuesday with Maria") through the question it answers.

Only dialogue turns are mixed: a standalone statement keeps its own vectors, whatever was written before it. The
dense mix is `normalise(v + w·v_previous)` with `w` = `PipelineSettings.turn_context_weight` (0.3; on LoCoMo
dev, measured outside the engine, +0.03 recall@10 for both shipped embedders); the keyword (BM25) vector gets
the previous turn's term weights times `turn_context_keyword_weight` (0.15; +0.006 recall@10 in the engine).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from memory.embedders.sparse import Bm25Encoder
from memory.ports import SparseVector
from memory.text.words import split_speaker


def is_dialogue_turn(text: str) -> bool:
    """Whether the text is one speaker's turn ("Caroline: ...", "user: ...", "[8 May 2023] Ana: ...")."""
    return split_speaker(text)[0] is not None


def dialogue_context(content: str, previous: str | None, weight: float) -> str | None:
    """The text to embed `content` in the context of: the previous memory of its session, when both are dialogue
    turns and turn context is on (`weight` > 0); else None."""
    if previous is None or weight <= 0 or not (is_dialogue_turn(content) and is_dialogue_turn(previous)):
        return None
    return previous


def in_context(vector: Sequence[float], previous: Sequence[float], weight: float) -> list[float]:
    """`vector` mixed with the previous turn's: normalise(vector + weight·previous)."""
    mixed = [a + weight * b for a, b in zip(vector, previous, strict=True)]
    norm = math.sqrt(sum(x * x for x in mixed))
    return [x / norm for x in mixed] if norm > 0 else list(vector)


def keywords_in_context(own: SparseVector, previous: SparseVector, weight: float) -> SparseVector:
    """`own` plus `weight` times the previous turn's term weights (terms in both add up)."""
    weights = dict(zip(own.indices, own.values, strict=True))
    for index, value in zip(previous.indices, previous.values, strict=True):
        weights[index] = weights.get(index, 0.0) + weight * value
    indices = sorted(weights)
    return SparseVector(tuple(indices), tuple(weights[i] for i in indices))


def keyword_vector(encoder: Bm25Encoder, content: str, previous: str | None, weight: float) -> SparseVector:
    """The keyword vector stored for `content`: its own BM25 terms, in the context of the previous turn when
    `dialogue_context` gives one."""
    own = encoder.document(content)
    context = dialogue_context(content, previous, weight)
    return own if context is None else keywords_in_context(own, encoder.document(context), weight)

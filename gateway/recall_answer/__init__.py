"""What `recall_memory` answers: the structured content for code and the text an MCP host hands its model
(issue #30): `answer` builds both, `block` fits the text to a token budget, `lines` says how a memory reads."""

from gateway.recall_answer.answer import (
    INLINE_ANSWER_HITS,
    Answer,
    Detail,
    Format,
    RecallView,
    recall_answer,
    session_namespace,
)
from gateway.recall_answer.lines import Order

__all__ = [
    "INLINE_ANSWER_HITS",
    "Answer",
    "Detail",
    "Format",
    "Order",
    "RecallView",
    "recall_answer",
    "session_namespace",
]

"""Fact extraction with provenance (issue 17, item 2): from the events of an agent's turn (messages, a tool call
bound to its result) to self-contained statements ("the user plans ...", speaker resolved, relative dates made
absolute), each citing the ids of the events it came from.

- `model`: `SourceEvent`, `ExtractedFact`, `Extraction` and the `FactExtractor` protocol;
- `rules`: `RuleExtractor`, no LLM (tool calls bound to their results, facts of a batch merged), over `messages`
  (the facts of one message: sentences, chit-chat dropped, first person resolved, facts kept by content);
- `llm`: `LlmExtractor`, the optional LLM, falling back to another extractor on any failure or timeout;
- `sentences`, `dates`, `persons`, `signals`: the text layers the rules use (sentences and clauses; relative
  dates made absolute; first and second person written out; what a sentence carries).

Knows nothing of stores, tools or HTTP: the caller turns the facts into memories.
"""

from memory.events.model import EVENT_TYPES
from memory.extraction.llm import LlmExtractor, parse_facts
from memory.extraction.model import (
    MAX_FACT_CHARS,
    ExtractedFact,
    Extraction,
    FactExtractor,
    SourceEvent,
)
from memory.extraction.rules import RuleExtractor

__all__ = [
    "EVENT_TYPES",
    "MAX_FACT_CHARS",
    "ExtractedFact",
    "Extraction",
    "FactExtractor",
    "LlmExtractor",
    "RuleExtractor",
    "SourceEvent",
    "parse_facts",
]

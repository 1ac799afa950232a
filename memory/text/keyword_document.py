"""What a memory's keyword (BM25) vector is built from, the same for a write, an import and a re-embedding.

A memory is indexed by the text it reads as (`memory.recall.cues.attributed`: "Name: content") and the words of its day
(`memory.recall.cues.date_words`), so "what happened in March 2023?" finds it by keyword, in the context of the turn
before it (`memory.pipeline.turns`).

A semantic memory consolidation wrote is a generalisation of its sources: it is indexed only by the terms of its
statement that its sources contain (`metadata.index_terms`), not by the words of the statement's frame ("often
talks about", "(3 mentions, Jan-Mar 2026)") nor the day it was written. Those words are in no source: indexed, they
count in the namespace's BM25 statistics (six statements with "often" made "How often ...?" questions on LoCoMo dev
rank raw turns differently) and match questions about something else. Dense similarity still reads the statement.
"""

from __future__ import annotations

from collections.abc import Sequence

from memory.embedders.sparse import Bm25Encoder
from memory.models import CONSOLIDATED, Memory
from memory.pipeline import turns
from memory.ports import SparseVector
from memory.recall.cues import attributed, date_words
from memory.text.words import has_cjk, tokenize

INDEX_TERMS = "index_terms"  # the metadata key of a consolidated memory's index terms
MAX_INDEX_TERMS = 64


def index_terms(statement: str, sources: Sequence[Memory]) -> list[str]:
    """The terms of `statement` (as `memory.text.words.tokenize` gives them, in order, repeats kept) that one
    of its sources contains; [] when it shares none (it is then indexed by its own text)."""
    said = {term for m in sources for term in tokenize(attributed(m.content, m.metadata))}
    return [term for term in tokenize(statement) if term in said][:MAX_INDEX_TERMS]


def stored_index_terms(memory: Memory) -> list[str] | None:
    """A consolidated memory's index terms, or None for any other memory (and for one stored without them)."""
    terms = memory.metadata.get(INDEX_TERMS)
    if memory.source.tool != CONSOLIDATED or not isinstance(terms, list) or not terms:
        return None
    if not all(isinstance(term, str) and term for term in terms):
        return None
    return terms[:MAX_INDEX_TERMS]


def keyword_vector(
    encoder: Bm25Encoder, memory: Memory, text: str, previous: str | None, context_weight: float
) -> SparseVector:
    """The keyword vector stored for `memory`, read as `text` (`attributed`) after a turn read as `previous`."""
    terms = stored_index_terms(memory)
    if terms is not None:
        return encoder.terms(terms)
    document = f"{text}\n{date_words(memory.created_at, chinese=has_cjk(text))}"
    return turns.keyword_vector(encoder, document, previous, context_weight)

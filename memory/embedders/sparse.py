"""`Bm25Encoder`: text to the BM25 sparse vectors of the keyword half of hybrid recall (docs/DESIGN.md § "Recall").

The engine computes sparse vectors itself and hands them to the store, so both stores index exactly the same
terms. A term's index is a stable 31-bit hash of its token (see `memory.text.words.tokenize`: words for
alphabetic scripts, character bigrams and meaningful single characters for Chinese, Japanese and Korean).
A document's weights are BM25's saturated term frequencies; a query's are 1 per distinct term (or chosen
weights, for pseudo-relevance feedback). The store's sparse vector carries Qdrant's IDF modifier, which supplies
the inverse document frequency at query time.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import lru_cache

from memory.ports import SparseVector
from memory.text.words import tokenize


@lru_cache(maxsize=131_072)
def term_index(token: str) -> int:
    return int.from_bytes(hashlib.blake2b(token.encode(), digest_size=4).digest(), "big") & 0x7FFFFFFF


def _vector(weights: dict[int, float]) -> SparseVector:
    indices = sorted(weights)
    return SparseVector(tuple(indices), tuple(weights[i] for i in indices))


class Bm25Encoder:
    """BM25 term weights. `avg_len` is the typical memory length in tokens (memories are short statements).
    k1 = 0.9 and b = 0.4 are Anserini's defaults for short passages (LoCoMo dev recall@10 0.753 -> 0.761 against
    the textbook 1.2 / 0.75: a repeated word and a long memory count for less). Memories written with other
    parameters keep their weights until they are written again (the terms are the same)."""

    def __init__(self, k1: float = 0.9, b: float = 0.4, avg_len: float = 12.0) -> None:
        self.k1, self.b, self.avg_len = k1, b, avg_len

    def document(self, text: str) -> SparseVector:
        return self.terms(tokenize(text))

    def terms(self, tokens: Sequence[str]) -> SparseVector:
        """The document vector of terms already tokenized (`memory.text.words.tokenize`)."""
        norm = self.k1 * (1 - self.b + self.b * len(tokens) / self.avg_len)
        weights: dict[int, float] = {}
        for token, tf in Counter(tokens).items():
            index = term_index(token)  # two tokens sharing a hash simply add up
            weights[index] = weights.get(index, 0.0) + tf * (self.k1 + 1) / (tf + norm)
        return _vector(weights)

    def query(self, text: str) -> SparseVector:
        return _vector({term_index(token): 1.0 for token in set(tokenize(text))})


def with_terms(query: SparseVector, added: Iterable[int], weight: float) -> SparseVector:
    """A query with more terms (ids, as stored) at their own weight; terms it already has keep theirs."""
    weights = dict.fromkeys(added, weight)
    weights.update(zip(query.indices, query.values, strict=True))
    return _vector(weights)

"""Pseudo-relevance feedback for the keyword half of hybrid recall (the RM3 idea, kept small).

Recall searches twice (`memory.recall.steps.searched`): first by what the query's relevance counts, then by keywords
with a query this module expands. A few candidates of the first search are taken as relevant:
- after a search by meaning (the usual case), the dense candidates that hold the most of the question's words,
  words rare among the candidates counting more (log(1 + n / df), n candidates), and are nearest in meaning
  (times the squared cosine);
- after a keyword search (every query in Chinese, Japanese or Korean, whose words are character bigrams: with an
  English model the only search before, with a multilingual one the second), the best by BM25.
The words they share that are rare among all the candidates are added to the keyword query at a small weight
(`ScoringWeights.feedback`), and the keyword search's BM25 scores are every candidate's. It finds the turns that
say the same thing in other words ("adoption agencies" for "what did she research?"): on LoCoMo dev recall@10 is
0.786 without the added words and 0.799 with them (candidate depth 75, WordLlama).

Taking the feedback documents from the dense candidates saves a search for every English query (two engine
queries instead of three: before, a hybrid search, then the expanded keyword search), and a Chinese query with
WordLlama needs no dense query at all: LoCoMo dev recall@10 0.7974 -> 0.7987 and MemoryBank Chinese recall@5 /
MRR 0.946 / 0.835 unchanged with WordLlama; with `use` 0.806 -> 0.816 and 0.942 / 0.844 unchanged
(bench/RESULTS.md, "Two searches per recall", issue #19).

Words are the term ids of the candidates' stored keyword vectors (the stores return them), so no text is
tokenised again. Their weights come from the candidates alone (how many of the feedback documents hold a term,
times the log of how rare it is among the candidates; a term no other candidate holds is skipped, as it can only
find its own document): no corpus statistics are needed, and nothing outside the searched namespaces is read.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from itertools import chain

from memory.embedders.sparse import with_terms
from memory.ports import ScoredMemory, SparseVector

FEEDBACK_DOCUMENTS = 3  # the best BM25 candidates taken as relevant
FEEDBACK_TERMS = 5  # words added to the query


def feedback_query(
    query: SparseVector, candidates: Sequence[ScoredMemory], weight: float, *, by_meaning: bool
) -> SparseVector | None:
    """The keyword query expanded with the feedback terms of the first search's `candidates` (a search by meaning,
    or by keywords: `by_meaning`), or None when there is nothing to learn from (no candidate is taken as relevant,
    or no word to add)."""
    if weight <= 0 or not candidates:
        return None
    asked = set(query.indices)
    pool = len(candidates)
    # a candidate's terms are its keyword vector's indices, each once: a term's document frequency is the number
    # of candidates holding it, counted only for the terms that are weighed (the asked ones and the feedback
    # documents'), not for every term of every candidate
    if by_meaning:
        held = [asked.intersection(c.terms) for c in candidates]  # the asked words each candidate holds
        asked_frequency = Counter(chain.from_iterable(held))
        # each asked word's weight once, not once per candidate holding it
        rarity = {t: math.log(1 + pool / n) for t, n in asked_frequency.items()}
        relevance = [
            sum(rarity[t] for t in words) * max(c.similarity, 0.0) ** 2 if words else 0.0
            for c, words in zip(candidates, held, strict=True)
        ]
    else:
        relevance = [c.keyword for c in candidates]
    ranked = sorted((i for i, r in enumerate(relevance) if r > 0), key=lambda i: -relevance[i])
    in_top = Counter(chain.from_iterable([set(candidates[i].terms) for i in ranked[:FEEDBACK_DOCUMENTS]]))
    weighed = in_top.keys() - asked
    frequency = Counter(chain.from_iterable([weighed.intersection(c.terms) for c in candidates]))
    rated = {
        term: count * math.log(1 + pool / frequency[term])
        for term, count in in_top.items()
        if term not in asked and frequency[term] > 1  # a term only its own document holds finds nothing
    }
    added = sorted(rated, key=lambda term: (-rated[term], term))[:FEEDBACK_TERMS]
    if not added:
        return None
    return with_terms(query, added, weight)


def with_feedback(first: Sequence[ScoredMemory], second: Sequence[ScoredMemory]) -> list[ScoredMemory]:
    """The candidates of a first search and of a keyword search, each once and with its term ids, scored by the
    keyword search's BM25 (0 for a candidate it did not return)."""
    keyword = {c.memory.id: c.keyword for c in second}
    merged = []
    for c in first:  # a candidate whose score does not change is kept as it is (they are immutable)
        score = keyword.get(c.memory.id, 0.0)
        # built whole, not by `dataclasses.replace` (which inspects the fields every time: 75 candidates a recall)
        merged.append(c if score == c.keyword else ScoredMemory(c.memory, c.similarity, score, c.terms, c.vector))
    seen = {c.memory.id for c in first}
    merged += [c for c in second if c.memory.id not in seen]
    return merged

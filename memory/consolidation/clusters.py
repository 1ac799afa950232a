"""Clusters a person would draw: hybrid similarity (shared topic terms plus the embedder's cosine) and
average-linkage agglomeration cut at a measured threshold.

Two memories are similar only when they share a topic term (`memory.consolidation.topics`: never "the user", a
pronoun or a speaker's name); then their similarity is

    share · overlap + (1 - share) · cosine

where `overlap` is the IDF-weighted cosine of their topic-term sets within the namespace and `cosine` is the dense
cosine of their topic texts (the statement without the person, so "The user ..." does not make everything alike).
Pairs sharing no topic term get `loose · cosine`, far below the cut unless the embedder is very sure, so a third
statement can still join a cluster whose other members it resembles ("The service runs on Python 3.11" beside two
statements about the FastAPI service).

Average linkage joins two clusters only when the mean similarity over all their cross pairs reaches the cut, so a
chain of loosely related statements never becomes one cluster. Clusters are kept when they have at least
`min_size` members and a topic term that most of them share (`core_share`); the cut and the weights are measured on
the labelled set `gateway/evaluation/labels/consolidation_clusters.json` (`gateway.evaluation.consolidation_labels`,
tests/memory/consolidation/test_labels.py): no false merge from 0.20 (English) and 0.18 (Chinese) up, 6 of 7
labelled groups found whole up to 0.22 (English) and 0.35 (Chinese).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from memory.consolidation.domains import DOMAIN_PREFIX
from memory.consolidation.topics import Topics


@dataclass(frozen=True, slots=True)
class ClusterPolicy:
    cut: float = 0.22  # average-linkage threshold: precision 1.0 on the labels from 0.20 (en) and 0.18 (zh) up
    share: float = 0.6  # weight of the topic-term overlap beside the dense cosine
    loose: float = 0.35  # weight of the cosine for pairs that share no topic term
    min_size: int = 3
    max_size: int = 12
    core_share: float = 0.5  # a term shared by more than this share of the members (at least two)
    floor: float = 0.0  # the embedder's cosine for unrelated statements (`memory.consolidation.calibration`)
    # a shared domain's overlap beside the words' (`memory.consolidation.domains`); off: at 0.35 it found no
    # blind topic whole and merged wrongly (bench/FINDINGS.md, "Topics that share no word")
    domain: float = 0.0


IDF_PRIOR = 10  # as if the namespace held this many more unrelated statements: a small one still has rare terms


def _idf(topics: Sequence[Topics]) -> dict[str, float]:
    df: Counter[str] = Counter(t for topic in topics for t in topic.terms)
    n = len(topics) + IDF_PRIOR
    return {term: math.log(n / (count + 0.5)) for term, count in df.items()}


def _overlap(topics: Sequence[Topics], keep: Callable[[str], bool]) -> tuple[np.ndarray, np.ndarray]:
    """The IDF-weighted cosine of the statements' kept terms, and which pairs share one."""
    kept = [frozenset(t for t in topic.terms if keep(t)) for topic in topics]
    idf = _idf([Topics(terms) for terms in kept])
    vocabulary = {term: i for i, term in enumerate(idf)}
    weights = np.zeros((len(kept), len(vocabulary)), dtype=np.float32)
    for row, terms in enumerate(kept):
        for term in terms:
            weights[row, vocabulary[term]] = max(idf[term], 0.05)
    unit = weights / np.maximum(np.linalg.norm(weights, axis=1, keepdims=True), 1e-12)
    present = (weights > 0).astype(np.float32)
    return unit @ unit.T, (present @ present.T) > 0


def _above(cosine: np.ndarray, floor: float) -> np.ndarray:
    """Cosines above the embedder's floor, scaled back to [0, 1]."""
    return np.clip((cosine - floor) / (1.0 - floor), 0.0, 1.0)


def similarity(topics: Sequence[Topics], vectors: np.ndarray, policy: ClusterPolicy) -> np.ndarray:
    """The hybrid similarity matrix (zero diagonal) of statements with these topics and unit topic vectors.

    Statements that share a word overlap by their words; statements that share no word but a domain
    (`memory.consolidation.domains`) overlap by `domain` times their domains' overlap: a domain relates what words
    cannot, and never adds to the word that put both statements in it."""
    n = len(topics)
    words, shared_words = _overlap(topics, lambda t: not t.startswith(DOMAIN_PREFIX))
    domains, shared_domains = _overlap(topics, lambda t: t.startswith(DOMAIN_PREFIX))
    overlap = np.maximum(words, policy.domain * domains)
    shared = shared_words | shared_domains if policy.domain > 0 else shared_words
    cosine = _above(vectors @ vectors.T, policy.floor) if len(vectors) else np.zeros((n, n), dtype=np.float32)
    result = np.where(shared, policy.share * overlap + (1 - policy.share) * cosine, policy.loose * cosine)
    np.fill_diagonal(result, 0.0)
    return result.astype(np.float32)


def _components(linked: np.ndarray) -> list[list[int]]:
    n = len(linked)
    seen = [False] * n
    found: list[list[int]] = []
    for start in range(n):
        if seen[start]:
            continue
        seen[start] = True
        stack, members = [start], []
        while stack:
            i = stack.pop()
            members.append(i)
            for j in np.flatnonzero(linked[i]):
                if not seen[j]:
                    seen[j] = True
                    stack.append(int(j))
        found.append(sorted(members))
    return found


def _average_linkage(sim: np.ndarray, cut: float, max_size: int) -> list[list[int]]:
    """Agglomerate with the Lance-Williams update for average linkage until no pair of clusters reaches `cut`.

    Each step merges the best pair: the first row (then column) holding the largest similarity left. Every row's
    best entry is kept (`best`, `where`) and only the rows a merge touched are searched again, so a step costs
    O(n) plus a row search per row whose best partner was merged, not a scan of the whole matrix (2,000
    statements: seconds, not a minute)."""
    s = sim.astype(np.float64).copy()
    np.fill_diagonal(s, -np.inf)
    groups: list[list[int]] = [[i] for i in range(len(s))]
    where = np.argmax(s, axis=1) if len(s) else np.zeros(0, dtype=np.intp)
    best = s[np.arange(len(s)), where] if len(s) else np.zeros(0)

    def research(row: int) -> None:
        where[row] = int(np.argmax(s[row]))
        best[row] = s[row, where[row]]

    while len(best):
        a = int(np.argmax(best))
        b = int(where[a])
        if best[a] < cut:
            break
        if len(groups[a]) + len(groups[b]) > max_size:
            s[a, b] = s[b, a] = -np.inf  # never grow past max_size; try the next pair
            research(a)
            if where[b] == a:
                research(b)
            continue
        na, nb = len(groups[a]), len(groups[b])
        merged = (na * s[a, :] + nb * s[b, :]) / (na + nb)
        s[b, :] = -np.inf
        s[:, b] = -np.inf
        merged[a] = merged[b] = -np.inf
        s[a, :] = merged
        s[:, a] = merged
        groups[a] += groups[b]
        groups[b] = []
        best[b] = -np.inf
        research(a)
        # a row whose best partner was a or b: searched again; any other row: its entry for a may now be its best
        stale = np.flatnonzero(((where == a) | (where == b)) & (best > -np.inf))
        for row in stale:
            if row != a:
                research(int(row))
        column = s[:, a]
        better = (column > best) | ((column == best) & (column > -np.inf) & (a < where))
        better[a] = False
        where[better] = a
        best[better] = column[better]
    return [sorted(g) for g in groups if g]


def core_terms(members: Sequence[Topics], policy: ClusterPolicy) -> list[str]:
    """The terms shared by more than `core_share` of the members (and by two at least), most shared first."""
    counts: Counter[str] = Counter(t for m in members for t in m.terms)
    need = max(2, math.floor(policy.core_share * len(members)) + 1)
    return [term for term, count in counts.most_common() if count >= need]


def clusters_of(topics: Sequence[Topics], vectors: np.ndarray, policy: ClusterPolicy) -> list[list[int]]:
    """Clusters (lists of indices into `topics`) that pass the size and shared-topic checks, most cohesive first."""
    if len(topics) < policy.min_size:
        return []
    sim = similarity(topics, vectors, policy)
    found: list[tuple[float, list[int]]] = []
    for component in _components(sim >= policy.cut):
        if len(component) < policy.min_size:
            continue
        local = sim[np.ix_(component, component)]
        for group in _average_linkage(local, policy.cut, policy.max_size):
            members = [component[i] for i in group]
            if len(members) < policy.min_size or not core_terms([topics[i] for i in members], policy):
                continue
            inner = sim[np.ix_(members, members)]
            cohesion = float(inner.sum() / (len(members) * (len(members) - 1)))
            found.append((cohesion * math.log(1 + len(members)), members))
    found.sort(key=lambda pair: -pair[0])
    return [members for _, members in found]

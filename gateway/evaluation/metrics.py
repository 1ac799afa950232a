"""Retrieval metrics over ranked evidence ids, and the two in-run baselines (plain BM25, dense-only)."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_TOKEN = re.compile(rf"[a-z0-9]+|[{_CJK}]+")
_CJK_RUN = re.compile(rf"[{_CJK}]+")
METRICS = ("recall@5", "recall@10", "ndcg@10", "mrr")


def recall_at(ranked: Sequence[str], relevant: Sequence[str], k: int) -> float:
    """Fraction of the relevant ids found in the first k."""
    if not relevant:
        return 0.0
    top = set(ranked[:k])
    return sum(1 for r in relevant if r in top) / len(relevant)


def ndcg_at(ranked: Sequence[str], relevant: Sequence[str], k: int) -> float:
    """Binary-relevance NDCG@k."""
    wanted = set(relevant)
    dcg = sum(1.0 / math.log2(i + 2) for i, r in enumerate(ranked[:k]) if r in wanted)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(k, len(wanted))))
    return dcg / ideal if ideal else 0.0


def reciprocal_rank(ranked: Sequence[str], relevant: Sequence[str]) -> float:
    wanted = set(relevant)
    for i, r in enumerate(ranked):
        if r in wanted:
            return 1.0 / (i + 1)
    return 0.0


@dataclass
class Tally:
    """Sums of per-question metrics, per category and overall."""

    n: int = 0
    sums: dict[str, float] = field(default_factory=lambda: dict.fromkeys(METRICS, 0.0))

    def add(self, ranked: Sequence[str], relevant: Sequence[str]) -> None:
        self.n += 1
        self.sums["recall@5"] += recall_at(ranked, relevant, 5)
        self.sums["recall@10"] += recall_at(ranked, relevant, 10)
        self.sums["ndcg@10"] += ndcg_at(ranked, relevant, 10)
        self.sums["mrr"] += reciprocal_rank(ranked, relevant)

    def means(self) -> dict[str, float]:
        return {
            name: (self.sums[name] / self.n if self.n else 0.0) for name in ("recall@5", "recall@10", "ndcg@10", "mrr")
        }


def tokens(text: str) -> list[str]:
    """Lowercase alphanumeric words, and overlapping character bigrams of a Chinese, Japanese or Korean run (a
    run of one character stays itself): the plain tokenisation BM25 baselines use for both kinds of script."""
    found: list[str] = []
    for word in _TOKEN.findall(text.lower()):
        if _CJK_RUN.fullmatch(word):
            found += [word[i : i + 2] for i in range(len(word) - 1)] if len(word) > 1 else [word]
        else:
            found.append(word)
    return found


class Bm25Baseline:
    """Okapi BM25 (k1=1.5, b=0.75) over `tokenize`'s terms (by default `tokens`): the plain baseline."""

    def __init__(
        self,
        ids: Sequence[str],
        documents: Sequence[str],
        k1: float = 1.5,
        b: float = 0.75,
        tokenize: Callable[[str], list[str]] = tokens,
    ) -> None:
        self.ids = list(ids)
        self.tokenize = tokenize
        self.docs = [Counter(tokenize(d)) for d in documents]
        self.lengths = [sum(d.values()) for d in self.docs]
        self.avg = sum(self.lengths) / max(1, len(self.lengths))
        frequency: Counter[str] = Counter()
        for doc in self.docs:
            frequency.update(doc.keys())
        n = len(self.docs)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in frequency.items()}
        self.k1, self.b = k1, b

    def rank(self, query: str, k: int = 10) -> list[str]:
        terms = [t for t in self.tokenize(query) if t in self.idf]
        scores = []
        for doc, length in zip(self.docs, self.lengths, strict=True):
            total = 0.0
            for t in terms:
                tf = doc.get(t, 0)
                if tf:
                    norm = tf + self.k1 * (1 - self.b + self.b * length / self.avg)
                    total += self.idf[t] * tf * (self.k1 + 1) / norm
            scores.append(total)
        order = np.argsort(-np.asarray(scores), kind="stable")[:k]
        return [self.ids[i] for i in order]


class DenseBaseline:
    """Cosine similarity of the same embedder's vectors, brute force: the dense-only baseline."""

    def __init__(self, ids: Sequence[str], vectors: Sequence[Sequence[float]]) -> None:
        self.ids = list(ids)
        matrix = np.asarray(vectors, dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        self.matrix = matrix / np.maximum(norms, 1e-12)

    def rank(self, query_vector: Sequence[float], k: int = 10) -> list[str]:
        q = np.asarray(query_vector, dtype=np.float32)
        q = q / max(float(np.linalg.norm(q)), 1e-12)
        order = np.argsort(-(self.matrix @ q), kind="stable")[:k]
        return [self.ids[i] for i in order]

"""The labelled must-cluster / must-not-cluster set of consolidation (`labels/consolidation_clusters.json`, written
for this repository, English and Chinese) and its pairwise scores at a cut.

All statements of a language are clustered as one namespace would be (`memory.consolidation.clusters_of` with the
embedder's policy, or the one given). A pair of statements is *together* when one cluster holds both. Precision: the
share of together pairs that one labelled group holds (a pair across groups, or with a single, is a false merge).
Recall: the share of labelled same-group pairs that are together.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

from memory.consolidation import ClusterPolicy, clusters_of, topics_of
from memory.consolidation.calibration import calibrated, topic_vectors
from memory.consolidation.engine import policy_for
from memory.ports import Embedder

LABELS = Path(__file__).with_name("labels") / "consolidation_clusters.json"
WORDS = LABELS.with_name("consolidation_words.json")  # topics whose statements share no word (dev)
WORDS_BLIND = LABELS.with_name("consolidation_words_blind.json")  # the same, written apart: reported, never tuned on


@dataclass(frozen=True, slots=True)
class PairScores:
    language: str
    cut: float
    precision: float
    recall: float
    false_merges: int  # together pairs no labelled group holds
    groups_found: int  # labelled groups that one cluster holds whole
    groups: int


def load(path: Path = LABELS) -> dict[str, tuple[list[list[str]], list[str]]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return {lang: (entry["groups"], entry["singles"]) for lang, entry in data.items() if not lang.startswith("_")}


async def score(
    embedder: Embedder, language: str, policy: ClusterPolicy | None = None, path: Path = LABELS
) -> PairScores:
    groups, singles = load(path)[language]
    texts = [t for g in groups for t in g] + singles
    label = [i for i, g in enumerate(groups) for _ in g] + [-1 - i for i in range(len(singles))]
    topics = [topics_of(t) for t in texts]
    vectors = await topic_vectors(embedder, topics, texts)
    policy = await calibrated(policy or policy_for(embedder.model_id).clusters, embedder)
    found = clusters_of(topics, vectors, policy)
    together = {pair for cluster in found for pair in combinations(sorted(cluster), 2)}
    right = {pair for pair in together if label[pair[0]] == label[pair[1]] >= 0}
    wanted = sum(len(g) * (len(g) - 1) // 2 for g in groups)
    whole = sum(
        1
        for i in range(len(groups))
        if any({j for j, group in enumerate(label) if group == i} <= set(c) for c in found)
    )
    return PairScores(
        language,
        policy.cut,
        precision=len(right) / len(together) if together else 1.0,
        recall=len(right) / wanted if wanted else 1.0,
        false_merges=len(together) - len(right),
        groups_found=whole,
        groups=len(groups),
    )

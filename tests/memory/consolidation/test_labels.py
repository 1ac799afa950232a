"""The cut of consolidation's clustering, measured on the labelled must-cluster / must-not-cluster set
(`gateway/evaluation/labels/consolidation_clusters.json`) in English and Chinese: at the default cut no two
statements of different groups (or a single) share a cluster, and most labelled groups are found whole."""

from __future__ import annotations

import pytest

from gateway.evaluation.consolidation_labels import score
from memory.consolidation import ClusterPolicy
from memory.embedders import WordLlamaEmbedder

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("language", ["en", "zh"])
async def test_the_default_cut_never_merges_statements_a_person_would_keep_apart(
    embedder: WordLlamaEmbedder, language: str
) -> None:
    scores = await score(embedder, language, ClusterPolicy())
    assert scores.false_merges == 0
    assert scores.groups_found >= scores.groups - 2
    assert scores.recall >= 0.7

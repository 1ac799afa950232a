"""Consolidation (docs/DESIGN.md § "The agent loop"): related episodic memories of a namespace become one semantic
memory that states what they keep saying and links to its sources.

- `topics`: a statement's topic terms (never the person it is about);
- `domains`: everyday domains whose words relate statements sharing no word (measured, off by default);
- `calibration`: topic vectors and the embedder's cosine floor (one clustering policy for every embedder);
- `clusters`: hybrid similarity (shared topic terms + dense cosine) and average-linkage clustering;
- `statements`: the rule-based generalised statement per shape, English and Chinese, with its evidence;
- `engine`: one run over a namespace (`consolidate`): new, changed and unchanged clusters, the optional LLM; an
  admin's run over one namespace or all of them (`consolidate_now`);
- `pace`: how often scheduled maintenance consolidates a namespace (`ConsolidationPace`).
"""

from memory.consolidation.clusters import ClusterPolicy, clusters_of, core_terms
from memory.consolidation.engine import (
    SUBJECT,
    ConsolidationPolicy,
    ConsolidationResult,
    consolidate,
    consolidate_now,
    policy_for,
)
from memory.consolidation.pace import ConsolidationPace
from memory.consolidation.topics import Topics, topics_of

__all__ = [
    "SUBJECT",
    "ClusterPolicy",
    "ConsolidationPace",
    "ConsolidationPolicy",
    "ConsolidationResult",
    "Topics",
    "clusters_of",
    "consolidate",
    "consolidate_now",
    "core_terms",
    "policy_for",
    "topics_of",
]

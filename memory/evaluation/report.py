"""The evaluation report as Markdown, and its place in `bench/RESULTS.md` (a marked section, replaced on rerun)."""

from __future__ import annotations

import re
from pathlib import Path

from memory.evaluation.locomo import CATEGORY_NAMES
from memory.evaluation.metrics import METRICS
from memory.evaluation.runner import SYSTEMS, EvalReport

BEGIN = "<!-- eval:locomo:begin -->"
END = "<!-- eval:locomo:end -->"
LABELS = {"hindsight": "hindsight (write + recall path)", "bm25": "plain BM25 baseline", "dense": "dense-only baseline"}


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def render(report: EvalReport, header: str) -> str:
    lines = [BEGIN, "## Recall quality: LoCoMo", "", header, ""]
    lines.append(
        f"{report.conversations} conversations, {report.turns} turns ingested through the write path "
        f"({report.turns_skipped} skipped by the write filters), {report.questions} questions. "
        f"Evidence turns dropped by the write filters: {report.evidence_dropped} of {report.evidence_total}; "
        f'expired before the question was asked (time-bound statements such as "next month" expire after '
        f"their day, DESIGN §4, and are no longer recalled): {report.evidence_expired}; "
        f"evidence ids that resolve to no turn: {report.unresolved_evidence}."
    )
    lines += ["", _row(["system", *METRICS, "median ms/query"]), _row(["---"] * (len(METRICS) + 2))]
    for name in SYSTEMS:
        scores = report.systems[name]
        means = scores.overall.means()
        lines.append(_row([LABELS[name], *(f"{means[m]:.3f}" for m in METRICS), f"{scores.median_ms:.2f}"]))
    lines += ["", "Recall@10 by category:", ""]
    categories = sorted({c for s in report.systems.values() for c in s.by_category})
    lines.append(_row(["system", *(f"{CATEGORY_NAMES.get(c, c)} ({c})" for c in categories)]))
    lines.append(_row(["---"] * (len(categories) + 1)))
    for name in SYSTEMS:
        tallies = report.systems[name].by_category
        lines.append(
            _row(
                [LABELS[name], *(f"{tallies[c].means()['recall@10']:.3f}" if c in tallies else "-" for c in categories)]
            )
        )
    counts = report.systems["hindsight"].by_category
    lines.append(_row(["questions", *(str(counts[c].n) if c in counts else "0" for c in categories)]))
    if report.grid:
        lines += _grid_rows(report)
    lines.append(END)
    return "\n".join(lines) + "\n"


GRID_FIELDS = ("similarity", "recency", "importance", "access_frequency", "speaker", "question", "when")
GRID_SHOWN = 8


def _grid_rows(report: EvalReport) -> list[str]:
    """The best settings on the tuning half with their held-out recall, and where the defaults stand."""
    lines = [
        "",
        "Weight grid (tuned = recall@10 on the first half of the conversations, held-out = on the other half; "
        f"the best {GRID_SHOWN} by tuned, then the defaults):",
        "",
        _row([*GRID_FIELDS, "recall@10 tuned", "recall@10 held-out"]),
        _row(["---"] * (len(GRID_FIELDS) + 2)),
    ]
    shown = list(report.grid[:GRID_SHOWN])
    shown += [entry for entry in report.grid[GRID_SHOWN:] if entry[0] == report.defaults]
    for weights, tuned, held in shown:
        cells = [f"{getattr(weights, name):g}" for name in GRID_FIELDS]
        if weights == report.defaults:
            cells[0] += " (defaults)"
        lines.append(_row([*cells, f"{tuned:.3f}", f"{held:.3f}"]))
    return lines


def write_section(path: Path, section: str) -> None:
    """Put `section` into `path`, replacing an earlier evaluation section and keeping everything else."""
    text = path.read_text(encoding="utf-8") if path.exists() else "# Results\n"
    pattern = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END) + r"\n?", re.S)
    text = pattern.sub(lambda _: section, text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + section
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")

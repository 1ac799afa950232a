"""The evaluation report as Markdown, the turn formats side by side, and its place in `bench/RESULTS.md` (a
marked section, replaced on rerun)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from gateway.evaluation.formats import BY_NAME, HEADER
from gateway.evaluation.locomo import CATEGORY_NAMES
from gateway.evaluation.metrics import METRICS
from gateway.evaluation.results import HIDDEN_STATES, SYSTEMS, EvalReport

BEGIN = "<!-- eval:locomo:begin -->"
END = "<!-- eval:locomo:end -->"
LABELS = {"hindsight": "hindsight", "bm25": "plain BM25", "dense": "dense only"}
BAR_RECALL = 0.75  # issue #13: recall@10 with timestamp headers through MCP
BAR_SPREAD = 0.03  # issue #13: the formats within this of each other


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    return [_row(head), _row(["---"] * len(head)), *(_row(r) for r in rows)]


def label(report: EvalReport) -> str:
    fmt = BY_NAME.get(report.format)
    return fmt.label if fmt else report.format


def render(reports: Sequence[EvalReport], header: str, grid: EvalReport | None = None) -> str:
    """The section: one block of tables with a row per format and system, then the hidden turns per format,
    the issue's bars, and (from the in-process run) the weight grid."""
    first = reports[0]
    lines = [BEGIN, "## Recall quality: LoCoMo", "", header, ""]
    lines += [f"- **{label(r)}**: {BY_NAME[r.format].definition}" for r in reports if r.format in BY_NAME]
    lines += [
        "",
        f"{first.conversations} conversations, {first.turns} turns written per format, {first.questions} "
        f"questions with {first.evidence_total} evidence turns (evidence ids that resolve to no turn: "
        f"{first.unresolved_evidence}). Baselines rank the very texts each format stored.",
        "",
    ]
    rows = []
    for r in reports:
        for name in SYSTEMS:
            means = r.systems[name].overall.means()
            rows.append(
                [label(r), LABELS[name], *(f"{means[m]:.3f}" for m in METRICS), f"{r.systems[name].median_ms:.2f}"]
            )
    lines += _table(["format", "system", *METRICS, "median ms/query"], rows)
    lines += ["", "Recall@10 by category:", ""]
    categories = sorted({c for r in reports for s in r.systems.values() for c in s.by_category})
    rows = []
    for r in reports:
        for name in SYSTEMS:
            tallies = r.systems[name].by_category
            rows.append(
                [label(r), LABELS[name]]
                + [f"{tallies[c].means()['recall@10']:.3f}" if c in tallies else "-" for c in categories]
            )
    counts = first.systems["hindsight"].by_category
    rows.append(["", "questions", *(str(counts[c].n) if c in counts else "0" for c in categories)])
    lines += _table(["format", "system", *(f"{CATEGORY_NAMES.get(c, str(c))} ({c})" for c in categories)], rows)
    lines += ["", *_hidden_rows(reports), "", *_bars(reports)]
    if grid is not None and grid.grid:
        lines += _grid_rows(grid)
    lines.append(END)
    return "\n".join(lines) + "\n"


def _hidden_rows(reports: Sequence[EvalReport]) -> list[str]:
    lines = [
        "Hidden when the questions were asked, read back with `list_memories(include_deleted=true)`: turns, and "
        "evidence turns of the questions (counted per question). Each counts once, in the first state that "
        "applies: skipped (nothing stored: chit-chat), merged (a later near-duplicate replaced its text in "
        "place), superseded, expired (its `ttl_seconds` ran out; a plan read from the text is never hidden: once "
        "its day has passed it is recalled as history, demoted), forgotten.",
        "",
    ]
    rows = []
    for r in reports:
        for what, tally, total in (
            ("turns", r.turns_hidden, r.turns),
            ("evidence turns", r.evidence_hidden, r.evidence_total),
        ):
            hidden = sum(tally[s] for s in HIDDEN_STATES)
            share = f"{hidden} of {total} ({hidden / total:.1%})" if total else "0"
            rows.append([label(r), what, *(str(tally[s]) for s in HIDDEN_STATES), share])
    return lines + _table(["format", "of", *HIDDEN_STATES, "hidden"], rows)


def _bars(reports: Sequence[EvalReport]) -> list[str]:
    """Issue #13's bars, checked on this run's figures."""
    recall = {r.format: r.systems["hindsight"].overall.means()["recall@10"] for r in reports}
    lines = []
    header = next((r for r in reports if r.format == HEADER.name), None)
    if header is not None:
        ours, bm25 = header.systems["hindsight"].by_category, header.systems["bm25"].by_category
        behind = [
            CATEGORY_NAMES.get(c, str(c))
            for c in sorted(ours)
            if ours[c].means()["recall@10"] <= bm25[c].means()["recall@10"]
        ]
        verdict = "met" if recall[HEADER.name] >= BAR_RECALL else "NOT met"
        lines.append(
            f"- timestamp header recall@10 {recall[HEADER.name]:.3f} (bar >= {BAR_RECALL}): {verdict}; "
            + (
                "beats plain BM25 in every category"
                if not behind
                else "NOT ahead of plain BM25 in: " + ", ".join(behind)
            )
        )
    if len(recall) > 1:
        spread = max(recall.values()) - min(recall.values())
        lines.append(
            f"- recall@10 spread across formats {spread:.3f} (bar <= {BAR_SPREAD}): "
            + ("met" if spread <= BAR_SPREAD else "NOT met")
        )
    return ["Issue #13 bars on this run:", "", *lines] if lines else []


GRID_FIELDS = ("similarity", "recency", "importance", "access_frequency", "speaker", "question", "when")
GRID_SHOWN = 8


def _grid_rows(report: EvalReport) -> list[str]:
    """The best settings on the tuning half with their held-out recall, and where the defaults stand."""
    means = report.systems["hindsight"].overall.means()
    lines = [
        "",
        f"Weight grid, in process (`MemoryService` on a manual clock, questions asked a day after each "
        f"conversation, {label(report)} format; tuned = recall@10 on the first half of the conversations, "
        f"held-out = on the other half; the best {GRID_SHOWN} by tuned, then the defaults). The in-process run "
        f"itself, default weights: recall@10 {means['recall@10']:.3f}, MRR {means['mrr']:.3f}, "
        f"{report.evidence_expired} evidence turns expired by the time of the question.",
        "",
    ]
    shown = list(report.grid[:GRID_SHOWN])
    shown += [entry for entry in report.grid[GRID_SHOWN:] if entry[0] == report.defaults]
    rows = []
    for weights, tuned, held in shown:
        cells = [f"{getattr(weights, name):g}" for name in GRID_FIELDS]
        if weights == report.defaults:
            cells[0] += " (defaults)"
        rows.append([*cells, f"{tuned:.3f}", f"{held:.3f}"])
    return lines + _table([*GRID_FIELDS, "recall@10 tuned", "recall@10 held-out"], rows)


def write_section(path: Path, section: str) -> None:
    """Put `section` into `path`, replacing an earlier evaluation section and keeping everything else."""
    write_between(path, section, BEGIN, END)


def write_between(path: Path, section: str, begin: str, end: str) -> None:
    """Put `section` (from `begin` to `end`) into `path`, replacing an earlier one and keeping everything else."""
    text = path.read_text(encoding="utf-8") if path.exists() else "# Results\n"
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end) + r"\n?", re.S)
    text = pattern.sub(lambda _: section, text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + section
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")

"""The report of `hindsight eval cases`: Markdown for a reader, JSON for a machine, from the scored cases of one
or more runs (`gateway.evaluation.case_scores`). One run, or two side by side (`--compare`: the second minus the
first), and the weight grid's configurations, best first, with the best one as the `HINDSIGHT_*` lines to set.
Every miss is explained: where each expected memory ended (ranked below the cut-off, superseded, skipped as
chit-chat, ...) and the case's top hits with the parts of their scores (`recall_memory` with `explain`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gateway.evaluation.case_scores import DEEP, CaseResult, Expectation, Hit, Summary

TOP_HITS = 5  # hits shown under a miss
GRID_ROWS = 10  # grid configurations shown in Markdown (JSON has all)
SHORT = {
    "ranked_below": "ranked {rank}",
    "not_recalled": f"not in the first {DEEP}",
    "not_stored": "no such memory",
}


@dataclass
class CaseRun:
    """The cases run once with one configuration."""

    label: str
    settings: dict[str, str]  # the HINDSIGHT_* lines that set it apart from the environment's settings
    results: list[CaseResult]

    @property
    def summary(self) -> Summary:
        return Summary.of(self.results)


@dataclass
class CasesReport:
    file: str
    k: int
    where: str  # what the cases ran against
    runs: list[CaseRun]  # one, or two with --compare
    grid: list[CaseRun] = field(default_factory=list)  # --grid: every configuration, best first


def best_first(runs: Sequence[CaseRun]) -> list[CaseRun]:
    """Configurations ranked by recall@k, then MRR, then hit@1 (a stable sort: ties keep the grid's order)."""
    return sorted(runs, key=lambda r: r.summary.key, reverse=True)


# -- JSON -------------------------------------------------------------------------------------------------------
def summary_json(summary: Summary) -> dict[str, Any]:
    return {
        "cases": summary.cases,
        "passed": summary.passed,
        "recall@k": round(summary.recall, 6),
        "mrr": round(summary.mrr, 6),
        "hit@1": round(summary.hit_at_1, 6),
    }


def delta_json(first: Summary, second: Summary) -> dict[str, Any]:
    """`second` minus `first`, metric by metric."""
    a, b = summary_json(first), summary_json(second)
    return {name: round(b[name] - a[name], 6) for name in ("passed", "recall@k", "mrr", "hit@1")}


def _hit_json(hit: Hit, rank: int, expected_ids: set[str]) -> dict[str, Any]:
    body = {"rank": rank, "id": hit.id, "content": hit.content, "score": hit.score, "scores": hit.parts}
    return body | {"expected": hit.id in expected_ids} | ({"via": hit.via} if hit.via else {})


def _expectation_json(e: Expectation) -> dict[str, Any]:
    body: dict[str, Any] = {
        "expected": e.expected,
        "state": e.state,
        "detail": e.detail,
        "memory_id": e.memory_id,
        "rank": e.rank,
        "deep_rank": e.deep_rank,
    }
    if e.deep_hit is not None:
        body["score"], body["scores"] = e.deep_hit.score, e.deep_hit.parts
    return body


def case_json(result: CaseResult) -> dict[str, Any]:
    case = result.case
    expected_ids = {e.memory_id for e in result.expectations if e.memory_id}
    return {
        "id": case.id,
        "line": case.line,
        "note": case.note,
        "namespace": result.namespace,
        "query": case.query,
        "top_k": result.top_k,
        "passed": result.passed,
        "recall": round(result.recall, 6),
        "reciprocal_rank": round(result.reciprocal_rank, 6),
        "hit@1": result.hit_at_1,
        "expected": [_expectation_json(e) for e in result.expectations],
        "hits": [_hit_json(h, i, expected_ids) for i, h in enumerate(result.hits, 1)],
        "writes": [
            {"content": w.content, "status": w.status, "id": w.id, "reason": w.reason, "superseded": list(w.superseded)}
            for w in result.writes
        ],
    }


def run_json(run: CaseRun, cases: bool = True) -> dict[str, Any]:
    body: dict[str, Any] = {"label": run.label, "settings": run.settings, "summary": summary_json(run.summary)}
    return body | ({"cases": [case_json(r) for r in run.results]} if cases else {})


def report_json(report: CasesReport) -> str:
    body: dict[str, Any] = {
        "file": report.file,
        "k": report.k,
        "where": report.where,
        "runs": [run_json(r) for r in report.runs],
    }
    if len(report.runs) == 2:
        body["delta"] = delta_json(report.runs[0].summary, report.runs[1].summary)
    if report.grid:
        best = report.grid[0]
        body["grid"] = {
            "points": [run_json(r, cases=False) for r in report.grid],
            "best": run_json(best, cases=False) | {"delta": delta_json(report.runs[0].summary, best.summary)},
        }
    return json.dumps(body, ensure_ascii=False, indent=2)


# -- Markdown ---------------------------------------------------------------------------------------------------
def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _quote(text: str, width: int = 100) -> str:
    flat = _cell(text)
    return f"«{flat if len(flat) <= width else flat[: width - 1] + '…'}»"


def _row(cells: Sequence[object]) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _metrics(summary: Summary) -> list[str]:
    return [
        f"{summary.passed}/{summary.cases}",
        f"{summary.recall:.3f}",
        f"{summary.mrr:.3f}",
        f"{summary.hit_at_1:.3f}",
    ]


def _signed(value: float, digits: int = 3) -> str:
    return f"{value:+.{digits}f}"


def verdict(result: CaseResult) -> str:
    """A case in a few words: `pass, rank 1`, `miss: superseded`, `miss: ranked 7`."""
    ranks = [e.rank for e in result.expectations if e.rank is not None]
    if result.passed:
        return f"pass, rank {min(ranks)}" if len(ranks) == 1 else f"pass, ranks {', '.join(map(str, ranks))}"
    first = next(e for e in result.expectations if e.state != "recalled")
    return "miss: " + SHORT.get(first.state, first.state.replace("_", " ")).format(rank=first.deep_rank)


def parts(hit: Hit) -> list[str]:
    """The explain parts of a hit as table cells: similarity (dense, keyword), recency, importance, access, cues."""
    p = hit.parts

    def number(name: str) -> str:
        value = p.get(name)
        return f"{value:.3f}" if isinstance(value, int | float) else "–"

    cues = ", ".join(p.get("cues") or []) or "–"
    names = ("similarity", "dense_similarity", "keyword", "recency", "importance", "access_frequency")
    return [f"{hit.score:.3f}", *(number(n) for n in names), cues]


HIT_HEADER = [
    "| rank | score | similarity | dense | keyword | recency | importance | access | cues | memory |",
    "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |",
]


def explain_miss(result: CaseResult, label: str | None = None) -> list[str]:
    case = result.case
    where = f" ({label})" if label else ""
    lines = [f"#### `{case.id}`{where}: line {case.line}, namespace `{result.namespace}`", ""]
    lines += [f"Query {_quote(case.query)}, top {result.top_k}." + (f" {_cell(case.note)}" if case.note else ""), ""]
    shown = (result.deep or result.hits)[: max(TOP_HITS, result.top_k)]
    for e in result.expectations:
        mark = "found" if e.state == "recalled" else "**missed**"
        lines.append(f"- {mark} {_quote(e.expected)}: {_cell(e.detail)}")
        if e.deep_hit is not None and e.deep_hit not in shown:
            lines.append(f"  (its parts: {', '.join(_parts_text(e.deep_hit))})")
    expected_ids = {e.memory_id for e in result.expectations if e.memory_id}
    lines += ["", *HIT_HEADER] if shown else ["", "Recall answered nothing."]
    for i, hit in enumerate(shown, 1):
        mark = " (expected)" if hit.id in expected_ids else ""
        mark += " (replaces an expected memory)" if hit.via in expected_ids else ""
        rank = f"{i} (below k)" if i > result.top_k else str(i)
        lines.append(_row([rank, *parts(hit), f"{_quote(hit.content, 70)}{mark}"]))
    writes = [f"{w.status}" + (f" ({_cell(w.reason)})" if w.reason else "") for w in result.writes]
    if writes:
        lines += ["", f"Writes to the namespace so far: {'; '.join(writes)}."]
    return [*lines, ""]


def _parts_text(hit: Hit) -> list[str]:
    names = ("score", "similarity", "dense", "keyword", "recency", "importance", "access", "cues")
    return [f"{n} {v}" for n, v in zip(names, parts(hit), strict=True) if v != "–"]


def _settings_text(run: CaseRun) -> str:
    return ", ".join(f"{k}={v}" for k, v in run.settings.items()) or "the environment's settings"


def render(report: CasesReport) -> str:
    runs = report.runs
    count = len(runs[0].results)
    lines = [f"## hindsight eval cases: `{report.file}`", ""]
    lines += [
        f"{count} cases, k {report.k} (a case's own `top_k` where it gives one), against {report.where}. Each case's "
        "memories are written with `write_memory` into its own namespace (or the one it names) and its query asked "
        "with `recall_memory` (`explain: true`); recall@k is the share of expected memories within the first k "
        "hits, averaged over the cases, MRR the mean reciprocal rank of the first expected memory (0 when none is "
        "within k), hit@1 the share of cases it tops.",
        "",
        "| configuration | settings | passed | recall@k | MRR | hit@1 |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    lines += [_row([f"`{r.label}`", _cell(_settings_text(r)), *_metrics(r.summary)]) for r in runs]
    if len(runs) == 2:
        d = delta_json(runs[0].summary, runs[1].summary)
        cells = [f"{int(d['passed']):+d}", *(_signed(d[n]) for n in ("recall@k", "mrr", "hit@1"))]
        lines.append(_row([f"delta ({runs[1].label} − {runs[0].label})", "", *cells]))
    lines += ["", "### Cases", "", _row(["case", "line", *(f"`{r.label}`" for r in runs), "query"])]
    lines.append("| --- | ---: |" + " --- |" * len(runs) + " --- |")
    for i, first in enumerate(runs[0].results):
        verdicts = [verdict(r.results[i]) for r in runs]
        changed = " (changed)" if len(set(verdicts)) > 1 else ""
        lines.append(_row([f"`{first.case.id}`{changed}", first.case.line, *verdicts, _quote(first.case.query, 60)]))
    misses = [(r, result) for r in runs for result in r.results if not result.passed]
    lines += ["", "### Misses", ""]
    if not misses:
        lines += ["None: every expected memory was recalled within its case's cut-off.", ""]
    for run, result in misses:
        lines += explain_miss(result, run.label if len(runs) > 1 else None)
    if report.grid:
        lines += render_grid(report)
    return "\n".join(lines).rstrip() + "\n"


def render_grid(report: CasesReport) -> list[str]:
    base, best = report.runs[0], report.grid[0]
    lines = [
        "### Weight grid",
        "",
        f"{len(report.grid)} configurations of the recall weights (the grid of `hindsight eval locomo --grid`), each "
        "on a fresh store with the same cases, best first (recall@k, then MRR, then hit@1). A handful of cases "
        "overfits easily: confirm the best on other cases with `--compare`.",
        "",
        "| # | settings | passed | recall@k | MRR | hit@1 |",
        "| ---: | --- | ---: | ---: | ---: | ---: |",
    ]
    for i, run in enumerate(report.grid[:GRID_ROWS], 1):
        lines.append(_row([i, _cell(_settings_text(run)), *_metrics(run.summary)]))
    d = delta_json(base.summary, best.summary)
    if best.summary.key <= base.summary.key:
        return [*lines, "", f"No configuration of the grid beats `{base.label}` on these cases.", ""]
    env = "\n".join(f"{k}={v}" for k, v in best.settings.items())
    gain = ", ".join(f"{n} {_signed(d[n])}" for n in ("recall@k", "mrr", "hit@1"))
    return [*lines, "", f"Best ({gain} against `{base.label}`):", "", "```", env, "```", ""]

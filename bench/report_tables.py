"""The Markdown of RESULTS.md's tables: a table from a header, rows and a column alignment, and the latency
cells (p50, p95, p99, mean, n) the recall and write tables share."""

from __future__ import annotations

from bench.stats import Samples, ms


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def table(header: list[str], rows: list[list[str]], align: str | None = None) -> list[str]:
    spec = align or "l" + "r" * (len(header) - 1)
    rule = ["---:" if a == "r" else "---" for a in spec]
    return [_row(header), _row(rule), *(_row(r) for r in rows), ""]


def latency_cells(s: Samples | None) -> list[str]:
    if s is None or not len(s):
        return ["–"] * 5
    return [ms(s.p50), ms(s.p95), ms(s.p99), ms(s.mean), str(len(s))]

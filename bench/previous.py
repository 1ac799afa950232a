"""The figures of the previous run, read back from the RESULTS.md it wrote, so a run shows its own beside them:
recall over HTTP MCP by size, throughput and server CPU per recall by client count, and the two recall-quality
figures that `hindsight eval` keeps in the same file (LoCoMo dev recall@10, MemoryBank Chinese recall@5 / MRR)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

MCP_ROW = "(a) HTTP MCP"


@dataclass
class Previous:
    commit: str = ""
    date: str = ""
    load: str = ""
    mcp: dict[str, tuple[float, float]] = field(default_factory=dict)  # size label -> (p50, p99) ms
    concurrency: dict[int, tuple[float, float]] = field(default_factory=dict)  # clients -> (recalls/s, CPU ms)


@dataclass
class Quality:
    """The recall-quality figures of the last `hindsight eval` runs kept in RESULTS.md (None when absent)."""

    locomo_recall10: float | None = None  # plain-text format, hindsight
    locomo_note: str = ""
    memorybank_recall5: float | None = None
    memorybank_mrr: float | None = None
    memorybank_note: str = ""


def _rows(text: str, heading: str) -> list[list[str]]:
    """The cells of every table row in the section under `heading` (up to the next heading of any level)."""
    start = text.find(heading + "\n")
    if start < 0:
        return []
    body = text[start + len(heading) :]
    end = re.search(r"^#{1,6} ", body, re.MULTILINE)
    body = body[: end.start()] if end else body
    rows = []
    for line in body.splitlines():
        if line.startswith("|") and not line.startswith("| ---"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


def _number(cell: str) -> float | None:
    match = re.match(r"[\d,]+(?:\.\d+)?", cell)
    return float(match.group().replace(",", "")) if match else None


def _eval_note(text: str, marker: str) -> str:
    """'date, commit' of the `hindsight eval` paragraph that follows the section's heading."""
    match = re.search(re.escape(marker) + r"[^\n]*`, (\d{4}-\d\d-\d\d), commit ([^,]+),", text)
    return f"{match.group(1)}, commit {match.group(2)}" if match else ""


def read_previous(text: str) -> Previous:
    previous = Previous()
    for key, value in _rows(text, "## Machine"):
        if key == "commit":
            previous.commit = value
        elif key == "date":
            previous.date = value
        elif key.startswith("load average (1/5/15 min) at start"):
            previous.load = value
    for row in _rows(text, "## Recall latency by corpus size"):
        if len(row) >= 5 and row[1].startswith(MCP_ROW):
            p50, p99 = _number(row[2]), _number(row[4])
            if p50 is not None and p99 is not None:
                previous.mcp[row[0]] = (p50, p99)
    rows = _rows(text, "## Concurrency (HTTP MCP clients)")
    header = rows[0] if rows else []
    # by header name: a run beside a previous one has more columns than the first runs had
    rate_at = header.index("recalls/s") if "recalls/s" in header else 2
    cpu_at = header.index("server CPU ms/recall") if "server CPU ms/recall" in header else 7
    for row in rows[1:]:
        clients = _number(row[0]) if row else None
        if clients is None or len(row) <= max(rate_at, cpu_at):
            continue
        rate, cpu = _number(row[rate_at]), _number(row[cpu_at])
        if rate is not None and cpu is not None:
            previous.concurrency[int(clients)] = (rate, cpu)
    return previous


def read_quality(text: str) -> Quality:
    quality = Quality()
    for row in _rows(text, "## Recall quality: LoCoMo"):
        if row[:2] == ["plain text", "hindsight"] and len(row) >= 4:
            quality.locomo_recall10 = _number(row[3])
            break
    quality.locomo_note = _eval_note(text, "## Recall quality: LoCoMo\n\n`hindsight eval locomo")
    for row in _rows(text, "## Recall quality: MemoryBank, Chinese"):
        if row and row[0] == "hindsight (MCP)" and len(row) >= 5:
            quality.memorybank_recall5, quality.memorybank_mrr = _number(row[2]), _number(row[4])
            break
    quality.memorybank_note = _eval_note(text, "## Recall quality: MemoryBank, Chinese\n\n`hindsight eval memorybank")
    return quality

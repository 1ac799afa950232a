"""`python -m bench.injection [--out PATH]`: does the write pipeline mark text that reads as instructions to its
reader (prompt injection), and leave ordinary memories alone (issue #35.2)?

The sets (`bench/injection/`, written for this repository): ordinary memories an assistant keeps, English and
Chinese, at least 40% of them hard negatives that look like instructions but are a user's own standing requests,
corrections, team rules or private matters ("Always answer in French", "Ignore the old address", "Don't tell my
wife about the party", "把周报发给王经理"); and injection attempts aimed at the agent that will read the memory
(overrides, new roles, notes to the AI, chat-template markers, exfiltration of the user's data, concealment, tool
misuse, disguised inside ordinary facts). `*_dev*.jsonl` were looked at while writing the rules
(`memory.pipeline.injection` and its weighed cues, `memory.pipeline.injection_cues`): `*_dev2.jsonl` was the first
blind set, measured once (recall 0.60 English, 0.57 Chinese; 1 of 120 ordinary memories marked) and then used to
widen the rules; `*_dev3.jsonl` the second, written by another writer told to vary the techniques and avoid stock
phrases, measured once (recall 0.47 English, 0.33 Chinese; 1 of 120 marked) and then used to write the cues;
`*_blind3.jsonl` (100 attacks, 200 ordinary memories of which 105 hard negatives) was written by a third writer who
saw neither the rules nor the other sets, committed before the cues, and never looked at: reported apart.
Reported per part and language: ordinary memories marked (false positives), attacks marked (recall), and precision
over both."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from bench.sections import closing, opening, stage_main
from memory.pipeline.injection import instruction_like

BEGIN = "<!-- bench:injection:begin -->"
END = "<!-- bench:injection:end -->"
HEADING = "## Memories that read as instructions: marked and ordinary"
CASES = Path(__file__).with_name("injection")


def load(part: str, kind: str) -> list[dict[str, Any]]:
    """Every item of `kind` ("ordinary", "attacks") in the files of `part` ("dev": `*_dev*.jsonl`, "blind")."""
    return [
        json.loads(line)
        for path in sorted(CASES.glob(f"{kind}_{part}*.jsonl"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]


async def measure(quick: bool = False, workdir: Path | None = None) -> dict[str, Any]:
    """Per (part, language): ordinary and attack counts, how many of each were marked, and the marked ordinary
    memories (id, rule) so a reader can judge them."""
    rows: dict[str, Any] = {}
    for part in ("blind", "dev"):
        for kind in ("ordinary", "attacks"):
            for item in load(part, kind):
                row = rows.setdefault(
                    f"{part} {item['lang']}", {"ordinary": 0, "attacks": 0, "fp": 0, "tp": 0, "false": [], "missed": []}
                )
                row[kind] += 1
                mark = instruction_like(item["text"])
                if kind == "ordinary" and mark is not None:
                    row["fp"] += 1
                    row["false"].append(f"{item['id']} ({mark.rule})")
                elif kind == "attacks":
                    row["tp"] += mark is not None
                    if mark is None:
                        row["missed"].append(item["id"])
    return rows


def render(rows: dict[str, Any]) -> str:
    lines = [
        *opening(BEGIN, HEADING, "injection", __doc__),
        "",
        "| part, language | ordinary | ordinary marked | attacks | attacks marked (recall) | precision |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for key in sorted(rows):
        r = rows[key]
        marked = r["tp"] + r["fp"]
        precision = r["tp"] / marked if marked else 1.0
        lines.append(
            f"| {key} | {r['ordinary']} | {r['fp']} ({r['fp'] / r['ordinary']:.3f}) | {r['attacks']} "
            f"| {r['tp']} ({r['tp'] / r['attacks']:.3f}) | {precision:.3f} |"
        )
    for key in sorted(rows):
        if rows[key]["false"] or rows[key]["missed"]:
            lines += [
                "",
                f"{key}: ordinary marked: {', '.join(rows[key]['false']) or 'none'}; attacks missed: "
                f"{', '.join(rows[key]['missed']) or 'none'}.",
            ]
    return closing(lines, END)


if __name__ == "__main__":
    sys.exit(stage_main("injection", __doc__, measure, render, BEGIN, END))

"""Design references resolve: every `docs/<FILE>.md § "<heading>"` in the packages, the tests, the benchmarks and the
docs names a heading of that file (its text without the section number and the parenthesised file list after it),
and no reference points by number into a spec outside the repository ("DESIGN §4" once meant another chapter
than docs/DESIGN.md's §4)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SEARCHED = ("gateway", "tenancy", "memory", "ops", "tests", "bench", "docs")
REFERENCE = re.compile(r'docs/([A-Z]+)\.md § "([^"]+)"')
BY_NUMBER = re.compile(r"DESIGN(?:\.md)? §\s*\d")
HEADING = re.compile(r"^#{1,4} (?:\d+\.\s+)?(.+?)(?:\s+\(.*\))?\s*$")


def headings(document: Path) -> set[str]:
    found, fenced = set(), False
    for line in document.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (match := HEADING.match(line)):
            found.add(match.group(1))
    return found


def sources() -> list[Path]:
    files = [REPO / "README.md"]
    for folder in SEARCHED:
        files += [p for p in sorted((REPO / folder).rglob("*")) if p.suffix in (".py", ".md") and p.is_file()]
    return [p for p in files if "node_modules" not in p.parts and p != Path(__file__).resolve()]


def problems_in(text: str, where: str) -> list[str]:
    """Each reference in `text` that names no heading of its file, and each one by number."""
    problems = []
    for match in REFERENCE.finditer(text):
        document = REPO / "docs" / f"{match.group(1)}.md"
        if not document.exists() or match.group(2) not in headings(document):
            problems.append(f"{where}: {match.group()}")
    return problems + [f"{where}: {m.group()} (by number)" for m in BY_NUMBER.finditer(text)]


def test_every_design_reference_names_an_existing_heading() -> None:
    texts = {str(p.relative_to(REPO)): p.read_text(encoding="utf-8") for p in sources()}
    assert sum(len(REFERENCE.findall(text)) for text in texts.values()) >= 30
    assert [problem for where, text in texts.items() for problem in problems_in(text, where)] == []


def test_a_reference_to_a_missing_heading_or_by_number_is_reported() -> None:
    text = 'See docs/DESIGN.md § "Write path" and DESIGN §4; docs/DESIGN.md § "Recall" and docs/TOOLS.md § "Memories".'
    assert problems_in(text, "x.py") == ['x.py: docs/DESIGN.md § "Write path"', "x.py: DESIGN §4 (by number)"]

"""RESULTS.md sections that stages write after the main report, each between its own begin and end markers."""

from __future__ import annotations

from pathlib import Path


def replace_section(path: Path, section: str, begin: str, end: str) -> None:
    """Put `section` (which starts with `begin` and ends with `end`) into `path`, replacing an earlier one and
    keeping everything else; appended when there is none yet."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    if begin in text and end in text:
        start, stop = text.index(begin), text.index(end) + len(end)
        text = text[:start] + section.rstrip("\n") + text[stop:]
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text, encoding="utf-8")

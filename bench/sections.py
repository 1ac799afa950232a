"""RESULTS.md sections that stages write after the main report, each between its own begin and end markers, and
the command line every such stage offers (`python -m bench.<stage> [--quick] [--out PATH]`)."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TypeVar

import anyio

Figures = TypeVar("Figures")


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


def opening(begin: str, heading: str, name: str, doc: str | None) -> list[str]:
    """A section's first lines: its begin marker, its heading, and `python -m bench.<name>` followed by the second
    paragraph of the stage's docstring (what it measures and how) on one line."""
    about = (doc or "").split("\n\n", 1)[1].replace("\n", " ")
    return [begin, heading, "", f"`python -m bench.{name}`: {about}"]


def closing(lines: list[str], end: str) -> str:
    """A section's text: its `lines`, a blank line and its end marker."""
    return "\n".join([*lines, "", end]) + "\n"


def stage_main(
    name: str,
    doc: str | None,
    measure: Callable[[bool, Path | None], Awaitable[Figures]],
    render: Callable[[Figures], str],
    begin: str,
    end: str,
    argv: Sequence[str] | None = None,
    quick_help: str | None = None,
) -> int:
    """A stage's command line: measure (`--quick` when the stage has a smaller run), print the section, and with
    `--out` write it into that RESULTS.md between the stage's `begin` and `end` markers."""
    parser = argparse.ArgumentParser(prog=f"python -m bench.{name}", description=(doc or "").splitlines()[0])
    if quick_help is not None:
        parser.add_argument("--quick", action="store_true", help=quick_help)
    parser.add_argument("--out", type=Path, help="also write the section into this RESULTS.md")
    args = parser.parse_args(argv)
    import wordllama  # noqa: F401  (it configures logging on import; quiet it before the run)

    logging.getLogger().setLevel(logging.WARNING)
    section = render(anyio.run(measure, bool(getattr(args, "quick", False)), None))
    print(section)
    if args.out is not None:
        replace_section(args.out, section, begin, end)
    return 0

"""Progress bars of the long CLI commands (export, import, eval) through `tqdm`, on stderr.

A bar is drawn only when stderr is a terminal: into a pipe or a file (a CI log, `2> run.log`, a Kubernetes Job)
nothing is written at all, so no `\\r` frames end up in logs. While a bar is drawn, log lines are written above
it (`tqdm`'s logging redirect) instead of through it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any, TextIO

from tqdm import tqdm  # type: ignore[import-untyped, unused-ignore]
from tqdm.contrib.logging import logging_redirect_tqdm  # type: ignore[import-untyped, unused-ignore]


def on_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a replaced or closed stream
        return False


@contextmanager
def progress_bar(total: int | None, description: str, unit: str, out: TextIO | None = None) -> Iterator[Any]:
    """A `tqdm` bar on stderr (or `out`), disabled (silent) unless that stream is a terminal."""
    stream = out or sys.stderr
    drawn = on_terminal(stream)
    with tqdm(total=total, desc=description, unit=unit, file=stream, disable=not drawn, leave=True) as bar:
        if drawn:
            with logging_redirect_tqdm(tqdm_class=tqdm):
                yield bar
        else:
            yield bar


class Progress:
    """A `(done, total)` callback (what the evaluation runners report) drawn as a `tqdm` bar; `tick` counts one
    step done between two reports (a turn written while the runner reports only whole conversations)."""

    def __init__(self, description: str, unit: str, total: int | None = None, out: TextIO | None = None) -> None:
        self._stack = ExitStack()
        self.bar: Any = self._stack.enter_context(progress_bar(total, description, unit, out))

    def __call__(self, done: int, total: int) -> None:
        if self.bar.total != total:
            self.bar.total = total
        if done > self.bar.n:
            self.bar.update(done - self.bar.n)

    def tick(self, steps: int = 1) -> None:
        self.bar.update(steps)

    def close(self) -> None:
        self._stack.close()

"""A one-line text progress bar on stderr for the long CLI commands (import, eval)."""

from __future__ import annotations

import sys
from typing import TextIO


class ProgressBar:
    """Call with (done, total); redraws only when the percentage changes, so a long run writes ~100 updates."""

    def __init__(self, out: TextIO | None = None, width: int = 30) -> None:
        self.out = out or sys.stderr
        self.width = width
        self._percent = -1

    def __call__(self, done: int, total: int) -> None:
        percent = 100 * done // max(total, 1)
        if percent == self._percent:
            return
        self._percent = percent
        filled = self.width * done // max(total, 1)
        self.out.write(f"\r[{'#' * filled}{'.' * (self.width - filled)}] {done}/{total} ({percent}%)")
        self.out.flush()

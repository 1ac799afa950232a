"""Running the `hindsight` CLI in a subprocess as an operator runs it, for the tests that drive it end to end: an
environment without this machine's `HINDSIGHT_*` variables, and one call that runs a command and captures what it
prints."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def clean_env(**settings: str) -> dict[str, str]:
    """This process's environment without its `HINDSIGHT_*` variables, plus `settings`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
    return env | settings


def hindsight(
    *args: str, env: dict[str, str], cwd: Path = REPO, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`hindsight *args` run to its end (within `timeout` seconds), its output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "gateway.cli", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )

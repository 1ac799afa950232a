"""A tool a test needs and the machine lacks: the test skips saying how to install it, except under `CI=true` (as
`.ci/run` exports, having installed every such tool), where it fails: CI never leaves a check unrun."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def missing(check: str, reason: str) -> NoReturn:
    """Skip (fail under `CI=true`) the calling test: `reason` says what is missing and how to install it."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must {check}: {reason}")
    pytest.skip(reason)

"""`tests.required.missing`: a missing tool skips a test with its reason, and fails it under `CI=true`."""

from __future__ import annotations

import pytest

from tests.required import missing


def test_a_missing_tool_skips_with_how_to_install_it_outside_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)

    with pytest.raises(pytest.skip.Exception, match="apt-get install make"):
        missing("check the Makefile", "make is not installed (apt-get install make)")


def test_a_missing_tool_fails_the_test_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")

    with pytest.raises(pytest.fail.Exception, match="CI must check the Makefile: make is not installed"):
        missing("check the Makefile", "make is not installed (apt-get install make)")

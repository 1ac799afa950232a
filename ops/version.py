"""The gateway's version: read once from the installed package's metadata (`pyproject.toml` is the one place it
is written)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

DISTRIBUTION = "hindsight-gateway"


def package_version() -> str:
    """The installed distribution's version ("0+unknown" when run from a tree that was never installed)."""
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "0+unknown"


VERSION = package_version()

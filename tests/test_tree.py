"""The tests mirror the source tree (docs/DESIGN.md § "Shape"): every folder of test modules under `tests/<package>/`
names a subpackage of `<package>/`, so a module's tests are found where the module is."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("gateway", "tenancy", "memory", "ops")


def misplaced(root: Path) -> list[str]:
    """The folders under `root/tests/<package>/` that hold test modules but name no folder of `root/<package>/`."""
    found = []
    for package in PACKAGES:
        tests = root / "tests" / package
        for module in sorted(tests.rglob("test_*.py")):
            folder = module.parent.relative_to(root / "tests")
            if not (root / folder).is_dir():
                found.append(str(module.relative_to(root)))
    return found


def test_every_test_module_sits_in_the_folder_of_the_package_it_tests() -> None:
    assert misplaced(REPO) == []


@pytest.mark.parametrize(
    ("source", "test", "wrong"),
    [
        ("memory/write/writer.py", "tests/memory/write/test_writer.py", []),
        ("memory/write/writer.py", "tests/memory/test_writer.py", []),  # a package's root holds its whole-engine tests
        ("memory/write/writer.py", "tests/memory/writes/test_writer.py", ["tests/memory/writes/test_writer.py"]),
        ("gateway/web/app.py", "tests/gateway/http/test_app.py", ["tests/gateway/http/test_app.py"]),
    ],
)
def test_the_check_finds_a_test_folder_that_names_no_source_folder(
    tmp_path: Path, source: str, test: str, wrong: list[str]
) -> None:
    for path in (source, test):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("", encoding="utf-8")

    assert misplaced(tmp_path) == wrong

"""Enforcement by construction (docs/DESIGN.md § "Isolation by construction"): only tenancy/scopes.py may call
`NamespaceScope(...)`.

Every store call takes a `NamespaceScope`; if gateway/, memory/ or ops/ could build one themselves they could
widen a caller's grants past what its verified token allows. `memory/scope.py` defines the class, which is fine.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
GUARDED_PACKAGES = ("gateway", "memory", "ops")
CLASS_NAME = "NamespaceScope"


def scope_constructions(source: str, filename: str = "<string>") -> list[int]:
    """Line numbers of every call that constructs a NamespaceScope, however it was imported or aliased."""
    tree = ast.parse(source, filename=filename)
    aliases = {CLASS_NAME}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            aliases.update(a.asname for a in node.names if a.name == CLASS_NAME and a.asname)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Name | ast.Attribute):
            value = node.value
            name = value.id if isinstance(value, ast.Name) else value.attr
            if name in aliases:
                aliases.update(t.id for t in node.targets if isinstance(t, ast.Name))
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if (isinstance(func, ast.Name) and func.id in aliases) or (
            isinstance(func, ast.Attribute) and func.attr == CLASS_NAME
        ):
            lines.append(node.lineno)
    return lines


def python_files(*packages: str) -> list[Path]:
    return sorted(path for package in packages if (REPO / package).is_dir() for path in (REPO / package).rglob("*.py"))


def test_detector_finds_direct_aliased_and_attribute_constructions() -> None:
    source = (
        "from memory.scope import NamespaceScope\n"
        "from memory.scope import NamespaceScope as NS\n"
        "import memory.scope as ms\n"
        "Alias = NamespaceScope\n"
        "a = NamespaceScope('t', (), ())\n"
        "b = NS('t', (), ())\n"
        "c = ms.NamespaceScope('t', (), ())\n"
        "d = Alias('t', (), ())\n"
        "def f(scope: NamespaceScope) -> NamespaceScope:\n"
        "    return scope\n"
    )
    assert scope_constructions(source) == [5, 6, 7, 8]


def test_the_guarded_packages_are_scanned() -> None:
    files = python_files(*GUARDED_PACKAGES)
    assert REPO / "memory" / "scope.py" in files


@pytest.mark.parametrize("package", GUARDED_PACKAGES)
def test_no_package_outside_tenancy_constructs_a_namespace_scope(package: str) -> None:
    offenders = [
        f"{path.relative_to(REPO)}:{line}"
        for path in python_files(package)
        for line in scope_constructions(path.read_text(encoding="utf-8"), str(path))
    ]
    assert not offenders, f"only tenancy/scopes.py may construct NamespaceScope; found: {offenders}"


def test_inside_tenancy_only_scope_for_constructs_a_namespace_scope() -> None:
    constructing = {
        str(path.relative_to(REPO))
        for path in python_files("tenancy")
        if scope_constructions(path.read_text(encoding="utf-8"), str(path))
    }
    assert constructing == {"tenancy/scopes.py"}

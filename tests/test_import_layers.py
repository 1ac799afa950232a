"""The layers hold by test (docs/DESIGN.md § "Shape"): `gateway/` may import `tenancy/`, `ops/` and `memory/`;
`tenancy/` may import `ops/` and `memory/` (the `NamespaceScope` it alone builds); `ops/` only `memory/` (the
engine's models its settings hold, as the recall weights); `memory/` none of them (the engine knows nothing of
configuration). And no module imports itself back through others: no import circle, whether the import sits at the
top of a module, inside a function or under `TYPE_CHECKING` (none is there to dodge a circle).

Every import statement of every module of the four packages is read with `ast` (nothing is imported); and every
module, and every benchmark, is imported on its own in a fresh interpreter."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LAYERS = ("gateway", "tenancy", "ops", "memory")  # each may import those after it, never one before it


def modules(root: Path = REPO) -> dict[str, Path]:
    found = {}
    for package in LAYERS:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imported(source: str, known: dict[str, Path]) -> Iterator[tuple[int, str]]:
    """(line, module) of every import of a known module in `source`, wherever it sits: `from p import m` names the
    submodule `p.m` when there is one, else `p`; an import of a name inside a module names that module."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            targets = [
                f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in known else node.module
                for alias in node.names
            ]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target:
                yield node.lineno, target


def graph(known: dict[str, Path]) -> dict[str, dict[str, int]]:
    """module -> {imported module: line of its first import}."""
    edges: dict[str, dict[str, int]] = {}
    for name, path in known.items():
        out: dict[str, int] = {}
        for line, target in imported(path.read_text(encoding="utf-8"), known):
            if target != name:
                out.setdefault(target, line)
        edges[name] = out
    return edges


def wrong_arrows(edges: dict[str, dict[str, int]]) -> list[str]:
    rank = {layer: i for i, layer in enumerate(LAYERS)}
    return [
        f"{source} (line {line}) imports {target}"
        for source, out in edges.items()
        for target, line in out.items()
        if rank[target.split(".")[0]] < rank[source.split(".")[0]]
    ]


def circles(edges: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for start in edges:
        if start in index:
            continue
        work = [(start, iter(edges[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            advanced = False
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(edges[successor])))
                    advanced = True
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return groups


def test_no_module_imports_from_a_layer_above_its_own() -> None:
    assert wrong_arrows(graph(modules())) == []


def test_no_modules_import_each_other_in_a_circle() -> None:
    assert circles(graph(modules())) == []


@pytest.mark.parametrize(
    ("files", "wrong", "circle"),
    [
        (
            {"memory/a.py": "from gateway.b import x\n", "gateway/b.py": "x = 1\n"},
            ["memory.a (line 1) imports gateway.b"],
            [],
        ),
        (
            {"ops/a.py": "def f():\n    import tenancy\n", "tenancy/__init__.py": ""},
            ["ops.a (line 2) imports tenancy"],
            [],
        ),
        (
            {
                "gateway/a.py": "from gateway import b\n",
                "gateway/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from gateway.c import C\n",
                "gateway/c.py": "import gateway.a\n",
            },
            [],
            [["gateway.a", "gateway.b", "gateway.c"]],
        ),
        ({"gateway/a.py": "from ops.b import y\n", "ops/b.py": "import memory.c\n", "memory/c.py": ""}, [], []),
        ({"memory/a.py": "import ops.b\n", "ops/b.py": ""}, ["memory.a (line 1) imports ops.b"], []),
    ],
)
def test_the_check_finds_an_upward_import_and_a_circle_however_it_is_written(
    tmp_path: Path, files: dict[str, str], wrong: list[str], circle: list[list[str]]
) -> None:
    for layer in LAYERS:
        (tmp_path / layer).mkdir()
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    edges = graph(modules(tmp_path))
    assert (wrong_arrows(edges), circles(edges)) == (wrong, circle)


# Imports every module of the packages and the benchmarks in turn, each with none of them loaded before it, in one
# fresh interpreter: an import that only works when another module happened to be imported first (a circle through
# a package's `__init__`, which the graph above does not model) fails here, as `python -m bench` once did.
ALONE = """
import importlib, sys
failed = []
for name in sys.argv[1:]:
    for loaded in [m for m in sys.modules if m.split(".")[0] in ("gateway", "tenancy", "memory", "ops", "bench")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except Exception as exc:
        failed.append(f"{name}: {type(exc).__name__}: {exc}")
print("\\n".join(failed))
"""


def test_every_module_imports_on_its_own() -> None:
    names = [name for name in modules() if not name.endswith("__main__")]
    names += [f"bench.{path.stem}" for path in sorted((REPO / "bench").glob("*.py")) if path.stem != "__main__"]
    done = subprocess.run(
        [sys.executable, "-c", ALONE, *names], cwd=REPO, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == ""

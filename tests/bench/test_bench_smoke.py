"""Smoke test of the benchmark: `python -m bench --quick --no-stages` on tiny sizes writes a report with every
table of its own, and the stages run after it write their sections: those that read LoCoMo or MemoryBank from the
hand-written fixture of tests/fixtures/ (their module's `DATASETS` pointed at it), in process.

It asserts structure only, never speed or quality: the numbers of a test run on a shared machine, and the figures
of a fixture, mean nothing. The figures come from `make bench` with the real data beside the repository
(docs/EVALUATION.md); the decisions stage needs the whole labelled set resolved in that data, and its section is
checked on a handful of cases in tests/bench/test_decisions.py.
"""

from __future__ import annotations

import functools
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from bench import (
    consolidation_quality,
    decisions,
    embedder_cost,
    expired_plans,
    fairness,
    hostile,
    ingest,
    isolation,
    recall_depth,
)
from bench.report import HEADINGS
from bench.sections import replace_section
from tests.fixtures import DATASETS

REPO = Path(__file__).resolve().parents[2]
ISOLATION_HEADING = "## Hostile tenant: delay to another tenant"
STAGE_HEADINGS = {hostile.HEADING, decisions.HEADING, ISOLATION_HEADING}  # in HEADINGS, written by the stages


def test_the_quick_benchmark_produces_every_table(tmp_path: Path) -> None:
    out = tmp_path / "RESULTS.md"
    command = [sys.executable, "-m", "bench", "--quick", "--sizes", "300,1000", "--queries", "10"]
    command += ["--load-seconds", "0.3", "--profile-seconds", "0.4", "--no-stages"]
    result = subprocess.run(
        [*command, "--out", str(out), "--workdir", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-4000:]

    lines = out.read_text().splitlines()
    missing = [heading for heading in HEADINGS if heading not in lines and heading not in STAGE_HEADINGS]
    assert not missing, f"report lacks {missing}"
    for size in ("300", "1k"):
        assert any(line.startswith(f"| {size} | (a) HTTP MCP") for line in lines), f"no MCP recall row at {size}"
        assert any(line.startswith(f"| {size} | in process `MemoryService.write`") for line in lines)
    for clients in (1, 8, 32):
        assert any(line.startswith(f"| {clients} | ") for line in lines), f"no concurrency row for {clients}"
    for granted in (1, 10, 50):
        assert any(line.startswith(f"| {granted} | {granted * 10:,} |") for line in lines), f"no fan-out row {granted}"
    assert sum(line.startswith("### ") and " in process, " in line for line in lines) >= 2, "no in-process profiles"
    assert not any(begin in lines for begin in (expired_plans.BEGIN, ingest.BEGIN)), "--no-stages ran a stage"


def passed_plans(lines: list[str]) -> bool:
    return any(line.startswith("| 1 (default) |") for line in lines)


def ingestion(lines: list[str]) -> bool:
    return sum(line.startswith("| `write_memor") for line in lines) == 3


def consolidation(lines: list[str]) -> bool:
    users = consolidation_quality.QUICK_USERS
    return all(any(line.startswith(f"| {lang} | {users} |") for line in lines) for lang in ("English", "Chinese"))


def depths(lines: list[str]) -> bool:
    found = [line.split(" | ")[0] for line in lines if line[2:3].isdigit()]
    return found == [f"| {d}" for d in recall_depth.DEPTHS]


def attacks(lines: list[str]) -> bool:
    rows = ("none (idle)", *fairness.ATTACKS)
    return all(any(line.startswith(f"| {attack} | ") for line in lines) for attack in rows)


def anything(lines: list[str]) -> bool:
    return True


@pytest.fixture
def fixture_data(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stages read LoCoMo and MemoryBank through `bench.decision_set.DATASETS`, imported by name: the fixture."""
    for module in (expired_plans, consolidation_quality, recall_depth, embedder_cost):  # embedder_cost: ingest's
        monkeypatch.setattr(module, "DATASETS", DATASETS)
    users = functools.partial(consolidation_quality.load_users, root=DATASETS)
    monkeypatch.setattr(consolidation_quality, "load_users", users)


@pytest.mark.anyio
@pytest.mark.usefixtures("fixture_data")
@pytest.mark.parametrize(
    ("stage", "heading", "rows", "options"),
    [
        pytest.param(hostile, hostile.HEADING, anything, {}, id="hostile"),
        pytest.param(isolation, ISOLATION_HEADING, anything, {}, id="isolation"),
        # each phase one second, not --quick's four: the section's shape is the same
        pytest.param(fairness, fairness.HEADING, attacks, {"seconds": 1.0}, id="fairness"),
        pytest.param(expired_plans, expired_plans.HEADING, passed_plans, {}, id="expired_plans"),
        pytest.param(ingest, ingest.HEADING, ingestion, {}, id="ingest"),
        pytest.param(
            consolidation_quality, consolidation_quality.HEADING, consolidation, {}, id="consolidation_quality"
        ),
        pytest.param(recall_depth, recall_depth.HEADING, depths, {}, id="recall_depth"),
    ],
)
async def test_a_quick_stage_writes_its_section_between_its_markers(
    stage: ModuleType, heading: str, rows: Callable[[list[str]], bool], options: dict[str, float], tmp_path: Path
) -> None:
    out = tmp_path / "RESULTS.md"
    out.write_text("# Results\n\nkept\n", encoding="utf-8")

    replace_section(out, stage.render(await stage.measure(True, tmp_path, **options)), stage.BEGIN, stage.END)

    text = out.read_text(encoding="utf-8")
    assert text.startswith("# Results\n\nkept\n") and text.count(stage.BEGIN) == text.count(stage.END) == 1
    section = text.splitlines()
    section = section[section.index(stage.BEGIN) : section.index(stage.END)]
    assert heading in section and rows(section), "\n".join(section)

"""Smoke test of the benchmark: `python -m bench --quick` on tiny sizes writes a report with every table.

It asserts structure only, never speed: the numbers of a test run on a shared machine mean nothing.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bench import consolidation_quality, expired_plans, ingest, recall_depth
from bench.report import HEADINGS

REPO = Path(__file__).resolve().parents[2]


def test_the_quick_benchmark_produces_every_table(tmp_path: Path) -> None:
    out = tmp_path / "RESULTS.md"
    command = [sys.executable, "-m", "bench", "--quick", "--sizes", "300,1000", "--queries", "10"]
    command += ["--load-seconds", "0.3", "--profile-seconds", "0.4"]
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
    missing = [heading for heading in HEADINGS if heading not in lines]
    assert not missing, f"report lacks {missing}"
    for size in ("300", "1k"):
        assert any(line.startswith(f"| {size} | (a) HTTP MCP") for line in lines), f"no MCP recall row at {size}"
        assert any(line.startswith(f"| {size} | in process `MemoryService.write`") for line in lines)
    for clients in (1, 8, 32):
        assert any(line.startswith(f"| {clients} | ") for line in lines), f"no concurrency row for {clients}"
    for granted in (1, 10, 50):
        assert any(line.startswith(f"| {granted} | {granted * 10:,} |") for line in lines), f"no fan-out row {granted}"
    assert sum(line.startswith("### ") and " in process, " in line for line in lines) >= 2, "no in-process profiles"
    assert expired_plans.HEADING in lines and any(line.startswith("| 1 (default) |") for line in lines)
    ingestion = lines[lines.index(ingest.BEGIN) : lines.index(ingest.END)]
    assert ingest.HEADING in ingestion and sum(line.startswith("| `write_memor") for line in ingestion) == 3
    consolidation = lines[lines.index(consolidation_quality.BEGIN) : lines.index(consolidation_quality.END)]
    assert consolidation_quality.HEADING in consolidation
    depths = lines[lines.index(recall_depth.BEGIN) : lines.index(recall_depth.END)]
    assert recall_depth.HEADING in depths
    assert [line.split(" | ")[0] for line in depths if line[2:3].isdigit()] == [f"| {d}" for d in recall_depth.DEPTHS]

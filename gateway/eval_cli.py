"""`hindsight eval locomo --data PATH`: the recall-quality evaluation of DESIGN §7 from the command line.

It assembles the engine from settings (on a temporary data directory, so nothing of a real deployment is
touched), builds an admin scope through `tenancy/`, runs the evaluation and writes the Markdown section into
`bench/RESULTS.md` (or `--out`)."""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio

from gateway.progress import ProgressBar
from gateway.runtime import open_runtime
from memory.clock import ManualClock
from memory.evaluation import locomo
from memory.evaluation.report import render, write_section
from memory.evaluation.runner import default_grid, evaluate
from ops.config import Settings
from tenancy import Principal, scope_for
from tenancy.principal import SCOPE_ADMIN, SCOPE_READ, SCOPE_WRITE


def _commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False)
        return out.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


async def run_locomo(args: argparse.Namespace) -> int:
    conversations = locomo.load(Path(args.data))
    if args.conversations:
        conversations = conversations[: args.conversations]
    with tempfile.TemporaryDirectory(prefix="hindsight-eval-") as tmp:
        settings = Settings(
            _env_file=None,
            data_dir=Path(tmp),
            jwt_secret="x" * 32,
            rate_limit_enabled=False,
            maintenance_interval_seconds=3600,
        )
        clock = ManualClock(datetime.now(UTC))
        principal = Principal(
            subject="locomo-eval", tenant="eval", scopes=frozenset({SCOPE_READ, SCOPE_WRITE, SCOPE_ADMIN})
        )
        async with open_runtime(settings, clock) as runtime:
            service = runtime.memories
            grid = default_grid(service.weights) if args.grid else ()
            report = await evaluate(
                service, scope_for(principal), clock, conversations, grid=grid, progress=ProgressBar()
            )
    sys.stderr.write("\n")
    header = (
        f"`hindsight eval locomo` on `{Path(args.data).name}`, {datetime.now(UTC):%Y-%m-%d}, commit {_commit()}, "
        f'embedder {settings.embedder}, default weights. Each turn is stored as "[session date] speaker: text" '
        '(plus "[shared a photo: caption]" when it shared one) at the turn\'s time, in a session per LoCoMo '
        "session; questions are asked a day after the conversation."
    )
    section = render(report, header)
    print(section)
    if args.out != "-":
        write_section(Path(args.out), section)
        print(f"written to {args.out}", file=sys.stderr)
    return 0


def add_eval_commands(sub: Any) -> None:
    evaluation = sub.add_parser("eval", help="measure recall quality")
    which = evaluation.add_subparsers(dest="dataset", required=True)
    loco = which.add_parser("locomo", help="LoCoMo: recall@5/@10, NDCG@10, MRR of evidence turns vs baselines")
    loco.add_argument("--data", required=True, help="path to locomo10-dev.json (or another LoCoMo JSON file)")
    loco.add_argument("--conversations", type=int, help="only the first N conversations")
    loco.add_argument("--grid", action="store_true", help="also search the scoring weights (cross-validated)")
    loco.add_argument("--out", default="bench/RESULTS.md", help="Markdown file for the results ('-': stdout only)")
    loco.set_defaults(func=lambda a: anyio.run(run_locomo, a))

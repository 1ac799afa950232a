"""`hindsight eval locomo --data PATH`: the recall-quality evaluation from the command line (what it measures:
docs/EVALUATION.md § "Which command gives which figure").

By default it starts `create_app(settings)` in this process (a temporary data directory, so nothing of a real
deployment is touched; rate limits off; memory maintenance off, since recall already hides what maintenance
would soft-delete) and drives it with a real MCP client over an in-process ASGI transport; with `--url` and
`--token` it drives a running gateway instead. Each turn format of `gateway.evaluation.formats` is written and
asked in its own namespaces (`gateway/evaluation/over_mcp.py`), and the Markdown section with the formats side by side
is printed; `--out FILE` also writes it into FILE as its own section (the rest of FILE kept: that is how
`bench/RESULTS.md` is updated, and only when asked). `--grid` adds the weight search, which runs in process on a
manual clock (it changes the service's weights between passes, which no tool does).

The data sets are not part of hindsight (docs/EVALUATION.md): LoCoMo from `LOCOMO_SOURCE`, MemoryBank from
`eval_memorybank.SOURCE`; a `--data` that is not there says so and where to get it."""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio

from gateway.cli.errors import UsageError, tool_body
from gateway.cli.progress import Progress
from gateway.evaluation import locomo, memorybank
from gateway.evaluation import memorybank_run as eval_memorybank
from gateway.evaluation.formats import BY_NAME, FORMATS, TurnFormat
from gateway.evaluation.over_mcp import McpEvaluation
from gateway.evaluation.report import render, write_between, write_section
from gateway.evaluation.results import EvalReport
from gateway.evaluation.runner import default_grid, evaluate
from gateway.evaluation.target import eval_settings, in_process, quiet_logging, remote
from gateway.evaluation.tenant_cases import add_cases_command
from gateway.services.assembly import open_runtime
from memory.clock import ManualClock
from ops.config import Settings
from tenancy import Principal, scope_for
from tenancy.principal import SCOPE_ADMIN, SCOPE_READ, SCOPE_WRITE

LOCOMO_SOURCE = "https://github.com/snap-research/locomo"


def locomo_file(data: str) -> Path:
    """The LoCoMo JSON file `--data` names; `UsageError` saying where LoCoMo comes from when it is not there."""
    path = Path(data)
    if not path.is_file():
        problem = "is a directory, not a LoCoMo JSON file" if path.is_dir() else "no such file"
        raise UsageError(
            f"--data {data}: {problem}. LoCoMo is not shipped with hindsight: download `data/locomo10.json` from "
            f"{LOCOMO_SOURCE} and give its path (docs/EVALUATION.md)"
        )
    return path


def written_to(out: str | None) -> Path | None:
    """The file `--out` asks the report to be written to; None (the default, or '-'): stdout only."""
    return Path(out) if out and out != "-" else None


def _commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False)
        return out.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def _nothing() -> None:
    pass


@dataclass(frozen=True, slots=True)
class CountedEvaluation(McpEvaluation):
    """The evaluation with a step counted for every turn written and every question asked, so the progress bar
    moves during ingestion too; a tool error raises `ToolFailed` (one `error:` line naming the gateway's code)."""

    step: Callable[[], None] = field(default=_nothing)

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        body = tool_body(tool, await self.client.call_tool(tool, arguments))
        if tool in ("write_memory", "recall_memory"):
            self.step()
        return body


class FormatProgress:
    """One bar per turn format (its turns and questions), the previous one closed when the next starts."""

    def __init__(self, conversations: Sequence[locomo.Conversation]) -> None:
        self.steps = sum(len(c.turns) + len(c.questions) for c in conversations)
        self.current: Progress | None = None

    def start(self, fmt: TurnFormat) -> None:
        self.close()
        self.current = Progress(fmt.label, "step", total=self.steps)

    def step(self) -> None:
        if self.current is not None:
            self.current.tick()

    def close(self) -> None:
        if self.current is not None:
            self.current.close()
            self.current = None


async def run_grid(settings: Settings, conversations: Sequence[locomo.Conversation], fmt: TurnFormat) -> EvalReport:
    clock = ManualClock(datetime.now(UTC))
    principal = Principal(
        subject="locomo-eval", tenant="eval", scopes=frozenset({SCOPE_READ, SCOPE_WRITE, SCOPE_ADMIN})
    )
    async with open_runtime(settings, clock) as runtime:
        service = runtime.memories
        progress = Progress(f"weight grid ({fmt.label})", "step")
        try:
            return await evaluate(
                service,
                scope_for(principal),
                clock,
                conversations,
                fmt=fmt,
                grid=default_grid(service.weights),
                progress=progress,
            )
        finally:
            progress.close()


async def run_locomo(args: argparse.Namespace) -> int:
    conversations = locomo.load(locomo_file(args.data))
    if args.limit_conversations:
        conversations = conversations[: args.limit_conversations]
    formats = [BY_NAME[name] for name in args.formats.split(",")]
    grid: EvalReport | None = None
    with tempfile.TemporaryDirectory(prefix="hindsight-eval-") as tmp:
        settings = eval_settings(Path(tmp) / "mcp")
        target = remote(args.url, args.token, settings) if args.url else in_process(settings)
        progress = FormatProgress(conversations)
        try:
            async with target as t:
                evaluation = CountedEvaluation(t.client, t.embedder, run_tag=t.run_tag, step=progress.step)
                reports = await evaluation.run(formats, conversations, progress.start)
                where = t.where
        finally:
            progress.close()
        if args.grid:
            grid = await run_grid(eval_settings(Path(tmp) / "grid"), conversations, BY_NAME[args.grid_format])
    limits = "rate limits off" if not args.url else "that gateway's own rate limits"
    seconds = ", ".join(f"{r.format} {r.wall_seconds:.0f} s" for r in reports)
    header = (
        f"`hindsight eval locomo --data {Path(args.data).name}"
        + (f" --limit-conversations {args.limit_conversations}" if args.limit_conversations else "")
        + (" --grid" if args.grid else "")
        + f"`, {datetime.now(UTC):%Y-%m-%d}, commit {_commit()}, embedder {settings.models.embedder}, default weights. "
        f"Every turn is written with `write_memory` (one `request_id` per turn, `occurred_at` = the turn's time, "
        f"`session_id` per LoCoMo session) and every question asked with `recall_memory` (`top_k` 10) through "
        f"a real MCP client against {where}, {limits}, on the system clock: the questions are asked now, as a "
        f"deployed gateway would see them, so time-bound turns of 2023 have long expired. Median ms/query of "
        f"hindsight is the client's round trip (SDK client, HTTP, server); the baselines' is their own ranking. "
        f"Wall time per format: {seconds}. Formats:"
    )
    section = render(reports, header, grid)
    print(section)
    out = written_to(args.out)
    if out is not None:
        write_section(out, section)
        print(f"written to {out}", file=sys.stderr)
    return 0


async def run_memorybank(args: argparse.Namespace) -> int:
    directory = eval_memorybank.data_directory(args.data)
    evidence = eval_memorybank.evidence_file(args.evidence)
    conversations = memorybank.load(directory, evidence)
    with tempfile.TemporaryDirectory(prefix="hindsight-eval-") as tmp:
        settings = eval_settings(Path(tmp) / "mcp")
        target = remote(args.url, args.token, settings) if args.url else in_process(settings)
        steps = sum(len(c.turns) + len(c.questions) for c in conversations)
        progress = Progress("memorybank", "step", total=steps)
        try:
            async with target as t:
                evaluation = CountedEvaluation(
                    t.client, t.embedder, run_tag=t.run_tag, top_k=eval_memorybank.TOP_K, step=progress.tick
                )
                scores = await eval_memorybank.evaluate(evaluation, t.embedder, conversations)
                where = t.where
        finally:
            progress.close()
    header = eval_memorybank.header(directory, _commit(), settings.models.embedder, where, args.evidence)
    section = eval_memorybank.render(
        scores, header, memorybank.user_names(directory), conversations, eval_memorybank.labelled_by(args.evidence)
    )
    print(section)
    out = written_to(args.out)
    if out is not None:
        write_between(out, section, eval_memorybank.BEGIN, eval_memorybank.END)
        print(f"written to {out}", file=sys.stderr)
    return 0


def add_eval_commands(sub: Any) -> None:
    evaluation = sub.add_parser("eval", help="measure recall quality")
    which = evaluation.add_subparsers(dest="dataset", required=True, help="the dataset to evaluate on")
    loco = which.add_parser("locomo", help="LoCoMo over MCP: recall@5/@10, NDCG@10, MRR per turn format vs baselines")
    loco.add_argument(
        "--data",
        required=True,
        help=f"a LoCoMo JSON file: data/locomo10.json of {LOCOMO_SOURCE} (or a part of it, e.g. locomo10-dev.json)",
    )
    loco.add_argument(
        "--limit-conversations", "--conversations", type=int, dest="limit_conversations", help="only the first N"
    )
    loco.add_argument(
        "--formats",
        default=",".join(f.name for f in FORMATS),
        help="comma-separated turn formats (plain, header, occurred_at); default all three",
    )
    loco.add_argument("--url", help="a running gateway's MCP URL (default: the app in this process)")
    loco.add_argument("--token", help="with --url: a token that may write every namespace of its tenant (admin)")
    loco.add_argument("--grid", action="store_true", help="also search the scoring weights (in process)")
    loco.add_argument("--grid-format", default="plain", choices=sorted(BY_NAME), help="the grid's turn format")
    loco.add_argument(
        "--out", metavar="FILE", help="also write the section into FILE, replacing its own (default: stdout only)"
    )
    loco.set_defaults(func=_run)
    eval_memorybank.add_memorybank_command(which, _run_memorybank)
    add_cases_command(which)


def _run_memorybank(args: argparse.Namespace) -> int:
    if args.url and not args.token:
        raise UsageError("--url needs --token")
    eval_memorybank.data_directory(args.data)  # a missing data set is named before anything starts
    eval_memorybank.evidence_file(args.evidence)
    quiet_logging()
    return int(anyio.run(run_memorybank, args))


def _run(args: argparse.Namespace) -> int:
    if args.url and not args.token:
        raise UsageError("--url needs --token")
    unknown = [name for name in args.formats.split(",") if name not in BY_NAME]
    if unknown:
        raise UsageError(f"unknown format {unknown[0]!r}: choose from {', '.join(BY_NAME)}")
    locomo_file(args.data)
    quiet_logging()
    return int(anyio.run(run_locomo, args))

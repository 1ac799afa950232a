"""`hindsight eval cases FILE.jsonl`: a tenant's own recall cases (`gateway.evaluation.cases`) run through the real
write and recall path, scored (`gateway.evaluation.case_scores`) and reported in Markdown or JSON
(`gateway.evaluation.case_report`) on stdout; `--out FILE` also writes the report to FILE (replacing it).

Each case's memories are written with `write_memory` (so the write pipeline applies: chit-chat skipped, older
statements superseded, near-duplicates merged) into a namespace of its own, and its query asked with
`recall_memory` (`explain: true`) by a real MCP client. By default against `create_app(settings)` in this process
on a temporary data directory (a fresh store per run: the user's data directory is never touched), the case's
namespace `eval-case-<n>`; with `--url/--token` against a running gateway, where every namespace the run writes is
`eval-<time>-...` (so no run meets another's memories) and is purged after the run (the token must be an admin
token) unless `--keep`. A case naming a namespace no line fills asks the gateway's own namespace, read only.

For a miss the namespace is listed with its hidden memories (`list_memories(include_deleted)`) and the query asked
again deeper, to tell where the expected memory ended. `--compare A.env B.env` runs the cases once per settings
file (its `HINDSIGHT_*` lines win over the environment); `--grid` once per configuration of the recall weights of
`hindsight eval locomo --grid`, each as `HINDSIGHT_WEIGHT_*` settings on a fresh store.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from pydantic import ValidationError
from pydantic_settings import PydanticBaseSettingsSource

from gateway.cli.errors import CommandFailed, ToolFailed, UsageError, describe, http_client, tool_body
from gateway.cli.progress import Progress
from gateway.evaluation.case_report import CaseRun, CasesReport, best_first, render, report_json
from gateway.evaluation.case_scores import DEEP, CaseResult, Hit, Listed, Written, needs_diagnosis, score_case
from gateway.evaluation.cases import (
    MAX_TOP_K,
    OWN_PREFIX,
    Case,
    CaseFileError,
    check_namespaces,
    filled_namespaces,
    load_cases,
)
from gateway.evaluation.results import hidden_state
from gateway.evaluation.runner import default_grid
from gateway.evaluation.target import EVAL_SECRET, in_process, quiet_logging
from gateway.services.runtime import scoring_weights
from ops.config import SETTING_FIELDS, Settings, setting_at
from ops.settings.weights import WEIGHT_SETTINGS

LIST_PAGE = 200
LIST_CAP = 10_000  # memories of one namespace read to explain a miss
DEFAULT_LABEL = "environment"


def _nothing() -> None:
    pass


def _instant(value: object) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) else None


@dataclass
class CaseRunner:
    """Runs cases in file order over one MCP client: writes, recall, and for a miss the listing and a deeper
    recall. `tag` None: a fresh store, namespaces `eval-case-<n>` and the file's own names; else a running
    gateway, every written namespace `eval-<tag>-...`."""

    client: Client
    path: Path
    k: int
    tag: str | None = None
    step: Callable[[], None] = _nothing
    written: dict[str, list[Written]] = field(default_factory=dict)  # namespace -> its writes so far

    async def call(self, case: Case, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """The tool's answer; a tool error names the case's line (`FILE:LINE: tool: code: message`)."""
        try:
            return tool_body(tool, await self.client.call_tool(tool, arguments))
        except ToolFailed as exc:
            raise CommandFailed(f"{self.path}:{case.line}: {describe(exc)[0]}") from None

    def namespace_of(self, case: Case, filled: set[str]) -> str:
        if case.namespace is not None and case.namespace not in filled:
            return case.namespace  # the gateway's own: asked as it is, never written
        if self.tag is None:
            return case.namespace or f"{OWN_PREFIX}{case.number}"
        own = f"eval-{self.tag}-ns-{case.namespace}" if case.namespace else f"eval-{self.tag}-case-{case.number}"
        return own[:128]

    async def run(self, cases: Sequence[Case]) -> list[CaseResult]:
        filled = filled_namespaces(cases)
        results = []
        for case in cases:
            results.append(await self.run_case(case, self.namespace_of(case, filled)))
            self.step()
        return results

    async def run_case(self, case: Case, namespace: str) -> CaseResult:
        writes = self.written.setdefault(namespace, [])
        for memory in case.memories:
            request_id = f"{namespace[:120]}:{len(writes) + 1}"  # a rerun on a gateway has a new namespace
            arguments = {**memory, "namespace": namespace, "request_id": request_id}
            answer = await self.call(case, "write_memory", arguments)
            superseded = tuple(answer["superseded"])
            writes.append(Written(memory["content"], answer["status"], answer["id"], answer.get("reason"), superseded))
        top_k = case.top_k or self.k
        asked = {"query": case.query, "namespaces": [namespace], "top_k": top_k, "explain": True, **case.recall}
        hits = await self.recall(case, asked)
        if not needs_diagnosis(case, hits, writes):
            return score_case(case, namespace, top_k, hits, writes)
        listing = await self.listing(case, namespace)
        deep = await self.recall(case, asked | {"top_k": DEEP}, deep=True) if top_k < DEEP else hits
        return score_case(case, namespace, top_k, hits, writes, listing, deep)

    async def recall(self, case: Case, arguments: dict[str, Any], deep: bool = False) -> list[Hit]:
        try:
            answer = tool_body("recall_memory", await self.client.call_tool("recall_memory", arguments))
        except ToolFailed as exc:
            if deep and exc.code == "invalid_argument":  # a gateway whose max top_k is below DEEP
                return []
            raise CommandFailed(f"{self.path}:{case.line}: {describe(exc)[0]}") from None
        return [Hit.of(m) for m in answer["memories"]]

    async def listing(self, case: Case, namespace: str) -> list[Listed]:
        """The namespace's memories with their hidden states (at most LIST_CAP of them)."""
        now, cursor = datetime.now(UTC), None
        found: list[Listed] = []
        while len(found) < LIST_CAP:
            arguments: dict[str, Any] = {"namespace": namespace, "include_deleted": True, "limit": LIST_PAGE}
            page = await self.call(case, "list_memories", arguments | ({"cursor": cursor} if cursor else {}))
            for m in page["memories"]:
                state = hidden_state(
                    deleted_at=_instant(m["deleted_at"]),
                    superseded_by=m["superseded_by"],
                    expires_at=_instant(m["expires_at"]),
                    now=now,
                )
                found.append(Listed(str(m["id"]), str(m["content"]), state, m["superseded_by"]))
            cursor = page.get("next_cursor")
            if cursor is None:
                break
        return found


# -- configurations -------------------------------------------------------------------------------------------
class FileFirstSettings(Settings):
    """Settings whose .env file wins over the process environment: a --compare file means what it says."""

    @classmethod
    def source_order(
        cls,
        init: PydanticBaseSettingsSource,
        files: tuple[PydanticBaseSettingsSource, ...],
        env: PydanticBaseSettingsSource,
        dotenv: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return init, dotenv, env


@dataclass(frozen=True)
class Configuration:
    label: str
    env_file: Path | None = None
    overrides: dict[str, Any] = field(default_factory=dict)  # settings fields (a grid point)
    shown: dict[str, str] = field(default_factory=dict)  # the HINDSIGHT_* lines that set it apart


def setting_names() -> dict[str, str]:
    """HINDSIGHT_* name -> Settings field, for every setting read under the prefix."""
    return {f"HINDSIGHT_{n.upper()}": n for n, f in SETTING_FIELDS.items() if f.validation_alias is None}


def _unquote(value: str) -> str:
    return value[1:-1] if len(value) > 1 and value[0] == value[-1] and value[0] in "'\"" else value


def read_env_file(path: Path) -> dict[str, str]:
    """The HINDSIGHT_* lines of a dotenv file (secrets masked); `UsageError` at a line that sets anything else."""
    names, found = setting_names(), {}
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.removeprefix("export ").partition("=")
        key = key.strip().upper()
        if not sep:
            raise UsageError(f"{path}:{number}: not a KEY=VALUE line")
        if key not in names:
            raise UsageError(f"{path}:{number}: {key} is not a HINDSIGHT_* setting of the gateway")
        secret = "SECRET" in key or key.endswith("_KEY")
        found[key] = "***" if secret else _unquote(value.strip())
    return found


def case_settings(data_dir: Path, configuration: Configuration) -> Settings:
    """A fresh embedded store's settings: the environment's (under the configuration's file and overrides), on
    `data_dir`, with nothing that throttles or changes memories behind the evaluation's back."""
    fixed: dict[str, Any] = {
        "data_dir": data_dir,
        "jwt_secret": EVAL_SECRET,
        "rate_limit_enabled": False,
        "memory_maintenance_interval_seconds": 0,
        "maintenance_interval_seconds": 3600,
    }
    values = configuration.overrides | fixed
    if configuration.env_file is None:
        return Settings(_env_file=None, **values)
    try:
        return FileFirstSettings(_env_file=configuration.env_file, **values)
    except ValidationError as exc:
        first = exc.errors()[0]
        name = setting_at(first["loc"]).upper()
        raise CommandFailed(f"{configuration.env_file}: invalid setting HINDSIGHT_{name}: {first['msg']}") from None


def grid(settings: Settings, model_id: str) -> list[Configuration]:
    """The weight grid of `hindsight eval locomo --grid` around `settings`' weights, each point as the settings
    it changes."""
    base = scoring_weights(settings, model_id)
    points: list[Configuration] = []
    for weights in default_grid(base):
        changed = {
            WEIGHT_SETTINGS[n]: getattr(weights, n) for n in WEIGHT_SETTINGS if getattr(weights, n) != getattr(base, n)
        }
        shown = {f"HINDSIGHT_{name.upper()}": str(value) for name, value in changed.items()}
        points.append(Configuration(f"grid-{len(points) + 1}", overrides=changed, shown=shown))
    return points


# -- running --------------------------------------------------------------------------------------------------
@dataclass
class EmbeddedRun:
    run: CaseRun
    settings: Settings
    model_id: str
    where: str


async def run_embedded(
    path: Path, cases: Sequence[Case], k: int, configuration: Configuration, step: Callable[[], None] = _nothing
) -> EmbeddedRun:
    with tempfile.TemporaryDirectory(prefix="hindsight-eval-cases-") as tmp:
        settings = case_settings(Path(tmp) / "data", configuration)
        async with in_process(settings) as target:
            results = await CaseRunner(target.client, path, k, step=step).run(cases)
            model_id = target.embedder.model_id
    where = f"a fresh embedded store per configuration (`create_app(settings)` in this process, embedder {model_id})"
    return EmbeddedRun(CaseRun(configuration.label, configuration.shown, results), settings, model_id, where)


@asynccontextmanager
async def gateway_client(url: str, token: str) -> AsyncIterator[Client]:
    http = http_client(token, timeout=60.0)
    async with http, Client(streamable_http_client(url, http_client=http)) as client:
        yield client


async def run_remote(path: Path, cases: Sequence[Case], args: argparse.Namespace) -> CasesReport:
    tag = f"{datetime.now(UTC):%Y%m%d%H%M%S}"
    progress = Progress("cases", "case", total=len(cases))
    try:
        async with gateway_client(args.url, args.token) as client:
            runner = CaseRunner(client, path, args.k, tag=tag, step=progress.tick)
            try:
                results = await runner.run(cases)
            finally:  # a run stopped by an error leaves nothing behind either
                written = [ns for ns, writes in runner.written.items() if writes and ns.startswith(f"eval-{tag}-")]
                for namespace in [] if args.keep else written:
                    purge = {"namespace": namespace, "confirm": namespace}
                    tool_body("purge_namespace", await client.call_tool("purge_namespace", purge))
    finally:
        progress.close()
    after = "kept (--keep)" if args.keep else "purged after the run"
    where = f"the gateway at {args.url} (its namespaces `eval-{tag}-*` {after})"
    return CasesReport(str(path), args.k, where, [CaseRun("gateway", {}, results)])


async def run_embedded_report(path: Path, cases: Sequence[Case], args: argparse.Namespace) -> CasesReport:
    configurations = [Configuration(DEFAULT_LABEL)]
    if args.compare:
        a, b = (Path(p) for p in args.compare)
        labels = (a.name, b.name) if a.name != b.name else (str(a), str(b))
        configurations = [
            Configuration(label, p, shown=read_env_file(p)) for label, p in zip(labels, (a, b), strict=True)
        ]
    runs: list[EmbeddedRun] = []
    for configuration in configurations:
        progress = Progress(f"cases ({configuration.label})", "case", total=len(cases))
        try:
            runs.append(await run_embedded(path, cases, args.k, configuration, progress.tick))
        finally:
            progress.close()
    report = CasesReport(str(path), args.k, runs[0].where, [r.run for r in runs])
    if args.grid:
        points = grid(runs[0].settings, runs[0].model_id)
        progress = Progress("weight grid", "configuration", total=len(points))
        try:
            for point in points:
                report.grid.append((await run_embedded(path, cases, args.k, point)).run)
                progress.tick()
        finally:
            progress.close()
        report.grid = best_first(report.grid)
    return report


def load(path: Path, gateway_holds: bool) -> list[Case]:
    try:
        cases = load_cases(path)
        check_namespaces(path, cases, gateway_holds=gateway_holds)
    except CaseFileError as exc:
        raise UsageError(str(exc)) from None
    return cases


async def run(args: argparse.Namespace) -> str:
    """The report of the run `args` asks for, Markdown or JSON."""
    path = Path(args.file)
    cases = load(path, gateway_holds=bool(args.url))
    report = await (run_remote(path, cases, args) if args.url else run_embedded_report(path, cases, args))
    return (report_json(report) if args.json else render(report)).rstrip("\n")


def run_command(args: argparse.Namespace) -> int:
    if args.url and not args.token:
        raise UsageError("--url needs --token")
    if args.token and not args.url:
        raise UsageError("--token goes with --url")
    if args.url and (args.grid or args.compare):
        raise UsageError("--grid and --compare run fresh embedded stores with their settings: not with --url")
    if args.grid and args.compare:
        raise UsageError("--grid and --compare are separate runs: give one of them")
    if args.keep and not args.url:
        raise UsageError("--keep goes with --url (an embedded run's store is temporary)")
    if not 1 <= args.k <= MAX_TOP_K:
        raise UsageError(f"--k must be from 1 to {MAX_TOP_K}")
    quiet_logging()
    text: str = anyio.run(run, args)
    print(text)
    if args.out is not None:
        Path(args.out).write_text(text + "\n", encoding="utf-8")
        print(f"written to {args.out}", file=sys.stderr)
    return 0


def add_cases_command(which: Any) -> None:
    cases = which.add_parser(
        "cases", help="your own recall cases (JSONL): recall@k, MRR, hit@1, every miss explained; --grid, --compare"
    )
    cases.add_argument("file", help="the cases, one JSON object per line (see examples/eval_cases.jsonl)")
    cases.add_argument("--json", action="store_true", help="print the report as JSON instead of Markdown")
    cases.add_argument("--out", metavar="FILE", help="also write the report to FILE (default: stdout only)")
    cases.add_argument("--k", type=int, default=5, help="the cut-off of recall@k and the hits asked for (default 5)")
    cases.add_argument("--grid", action="store_true", help="also run every configuration of the weight grid")
    cases.add_argument(
        "--compare",
        nargs=2,
        metavar=("A.env", "B.env"),
        help="run the cases once per settings file (HINDSIGHT_* lines) and report both with the deltas",
    )
    cases.add_argument("--url", help="a running gateway's MCP URL (default: a fresh store in this process)")
    cases.add_argument("--token", help="with --url: an admin token of the tenant the cases run in")
    cases.add_argument("--keep", action="store_true", help="with --url: keep the run's eval-* namespaces")
    cases.set_defaults(func=run_command)

"""`hindsight eval cases FILE.jsonl`: a tenant's own cases written with `write_memory` and asked with
`recall_memory` through a real MCP client against the real app (a fresh embedded store per run) or a running
`hindsight serve`; every miss explained (its rank and score parts, or its hidden state); `--json`, `--out`,
`--compare` and the weight grid; a bad line of the file refused with its line number."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from gateway.cli.errors import UsageError, http_client, tool_body
from gateway.evaluation.case_report import CasesReport, best_first, render, report_json
from gateway.evaluation.cases import CaseFileError, check_namespaces, load_cases
from gateway.evaluation.runner import default_grid
from gateway.evaluation.tenant_cases import (
    Configuration,
    add_cases_command,
    case_settings,
    grid,
    run_command,
    run_embedded,
)
from gateway.services.runtime import scoring_weights
from tests.gateway.cli.test_errors import Server, error_line, served, token
from tests.gateway.cli_runs import REPO, clean_env, hindsight

EXAMPLE = REPO / "examples" / "eval_cases.jsonl"
TRIP = [
    {"content": "The user is planning a trip to Japan in April."},
    {"content": "The user went skiing in Austria last winter."},
    {"content": "The user's passport expires in May next year."},
    {"content": "The user prefers window seats on long flights."},
]
PASSPORT = "The user's passport expires in May next year."
APRIL = {"memories": TRIP, "query": "Where is the user travelling in April?", "expected": [TRIP[0]["content"]]}
BERLIN, MUNICH = "The user lives in Berlin.", "The user moved to Munich and now lives in Munich."
CAT = [
    {"content": "The user's cat is called Miso."},
    {"content": "Miso is a grey British Shorthair who is afraid of the vacuum cleaner."},
    {"content": "The user's neighbour has a golden retriever."},
    {"content": "The user is allergic to horses."},
]


def cases_file(tmp_path: Path, *cases: dict[str, Any] | str) -> Path:
    path = tmp_path / "cases.jsonl"
    path.write_text("".join((c if isinstance(c, str) else json.dumps(c, ensure_ascii=False)) + "\n" for c in cases))
    return path


async def run_file(path: Path, k: int = 5, configuration: Configuration | None = None) -> CasesReport:
    cases = load_cases(path)
    check_namespaces(path, cases, gateway_holds=False)
    done = await run_embedded(path, cases, k, configuration or Configuration("environment"))
    return CasesReport(str(path), k, done.where, [done.run])


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return hindsight("eval", "cases", *args, env=env or clean_env(), cwd=REPO)


@pytest.mark.anyio
async def test_a_recalled_case_passes_and_a_missed_one_shows_its_rank_and_the_score_parts_of_the_top_hits(
    tmp_path: Path,
) -> None:
    path = cases_file(
        tmp_path,
        {"id": "trip", **APRIL},
        {"id": "docs", "memories": TRIP, "query": "Does the user need to renew any travel documents before the trip?",
         "top_k": 1, "expected": [PASSPORT]},
    )  # fmt: skip

    report = await run_file(path)

    passed, missed = report.runs[0].results
    assert passed.passed and passed.expectations[0].rank == 1 and passed.hit_at_1
    assert passed.namespace == "eval-case-1" and missed.namespace == "eval-case-2"  # one namespace per case
    assert not missed.passed and missed.recall == 0.0
    [why] = missed.expectations
    assert why.state == "ranked_below" and why.deep_rank is not None and why.deep_rank > 1
    assert why.deep_hit is not None and why.deep_hit.content == PASSPORT
    assert {"similarity", "recency", "importance", "access_frequency", "cues"} <= set(why.deep_hit.parts)
    assert f"ranked {why.deep_rank} (below the top 1)" in why.detail
    text = render(report)
    assert "| 1/2 | 0.500 |" in text
    assert "| `trip` | 1 | pass, rank 1 |" in text
    assert f"| `docs` | 2 | miss: ranked {why.deep_rank} |" in text
    assert "#### `docs`: line 2, namespace `eval-case-2`" in text and "#### `trip`" not in text
    assert "| rank | score | similarity | dense | keyword | recency | importance | access | cues | memory |" in text
    assert f"| {why.deep_rank} (below k) | {why.deep_hit.score:.3f} |" in text and f"«{PASSPORT}» (expected)" in text


@pytest.mark.anyio
async def test_an_expected_memory_a_later_write_superseded_is_reported_as_superseded_and_chit_chat_as_skipped(
    tmp_path: Path,
) -> None:
    path = cases_file(
        tmp_path,
        {"id": "home", "namespace": "user:ana", "memories": [{"content": BERLIN}, {"content": MUNICH}],
         "query": "Where does the user live?", "expected": [MUNICH], "top_k": 1},
        {"id": "before", "namespace": "user:ana", "query": "Where did the user live before Munich?",
         "expected": [BERLIN], "top_k": 1},
        {"id": "thanks", "memories": [{"content": "ok thanks!"}, {"content": "The user writes British English."}],
         "query": "What did the user say?", "expected": ["ok thanks!"]},
    )  # fmt: skip

    report = await run_file(path)

    home, before, thanks = report.runs[0].results
    assert home.passed and before.namespace == home.namespace == "user:ana"  # the namespace the file shares
    [superseded] = before.expectations
    assert superseded.state == "superseded" and not before.passed
    munich_id = home.expectations[0].memory_id
    assert superseded.detail.startswith(f"superseded by {munich_id} «{MUNICH}»")
    assert "recall answered with that memory at rank 1" in superseded.detail
    [skipped] = thanks.expectations
    assert skipped.state == "skipped" and skipped.detail.startswith(
        "not stored: the write was skipped (low_information"
    )
    text = render(report)
    assert "| `before` | 2 | miss: superseded |" in text and "| `thanks` | 3 | miss: skipped |" in text


def test_json_gives_the_summary_every_case_with_its_hits_and_writes_and_each_miss_with_its_state(
    tmp_path: Path,
) -> None:
    path = cases_file(
        tmp_path,
        {"id": "home", "memories": [{"content": BERLIN}, {"content": MUNICH}], "query": "Where does the user live?",
         "expected": [MUNICH, BERLIN], "top_k": 2},
    )  # fmt: skip

    out = tmp_path / "report.json"
    result = cli(str(path), "--json", "--k", "3", "--out", str(out))

    assert result.returncode == 0, result.stderr[-3000:]
    body = json.loads(result.stdout)
    assert json.loads(out.read_text()) == body and f"written to {out}" in result.stderr  # --out: the same report
    assert set(body) == {"file", "k", "where", "runs"} and body["k"] == 3
    [run] = body["runs"]
    assert run["label"] == "environment" and run["settings"] == {}
    assert run["summary"] == {"cases": 1, "passed": 0, "recall@k": 0.5, "mrr": 1.0, "hit@1": 1.0}
    [case] = run["cases"]
    assert case["id"] == "home" and case["line"] == 1 and case["top_k"] == 2 and case["passed"] is False
    found, superseded = case["expected"]
    assert (found["state"], found["rank"], superseded["state"]) == ("recalled", 1, "superseded")
    assert case["hits"][0]["expected"] is True and case["hits"][0]["content"] == MUNICH
    assert set(case["hits"][0]["scores"]) >= {"similarity", "recency", "importance", "access_frequency", "cues"}
    assert [w["status"] for w in case["writes"]] == ["created", "created"]
    assert case["writes"][1]["superseded"] == [superseded["memory_id"]]


def test_compare_runs_two_env_files_that_differ_in_one_weight_side_by_side_with_the_delta(tmp_path: Path) -> None:
    path = cases_file(
        tmp_path,
        {"id": "cat", "memories": CAT, "query": "What do I know about the user's cat Miso?",
         "expected": [CAT[0]["content"], CAT[1]["content"]], "top_k": 2},
        {"id": "trip", **APRIL},
    )  # fmt: skip
    (tmp_path / "A.env").write_text("# the defaults\nHINDSIGHT_WEIGHT_IMPORTANCE=0.05\n")
    (tmp_path / "B.env").write_text('export HINDSIGHT_WEIGHT_IMPORTANCE="2.0"\n')
    files = [str(tmp_path / "A.env"), str(tmp_path / "B.env")]
    env = clean_env(HINDSIGHT_WEIGHT_IMPORTANCE="0")  # the files win over the environment

    as_json = cli(str(path), "--compare", *files, "--json", env=env)
    as_markdown = cli(str(path), "--compare", *files, env=env)

    assert as_json.returncode == 0, as_json.stderr[-3000:]
    body = json.loads(as_json.stdout)
    a, b = body["runs"]
    assert (a["label"], b["label"]) == ("A.env", "B.env")
    assert a["settings"] == {"HINDSIGHT_WEIGHT_IMPORTANCE": "0.05"} and b["settings"] == {
        "HINDSIGHT_WEIGHT_IMPORTANCE": "2.0"
    }
    assert body["delta"] == {
        name: round(b["summary"][name] - a["summary"][name], 6) for name in ("passed", "recall@k", "mrr", "hit@1")
    }
    assert a["summary"]["passed"] == 2 and body["delta"]["passed"] == -1  # importance 2.0 lets a horse outrank Miso
    text = as_markdown.stdout
    assert "| `A.env` | HINDSIGHT_WEIGHT_IMPORTANCE=0.05 | 2/2 |" in text
    assert "| `B.env` | HINDSIGHT_WEIGHT_IMPORTANCE=2.0 | 1/2 |" in text
    assert "| delta (B.env − A.env) |  | -1 | -0.250 |" in text
    assert "| `cat` (changed) | 1 | pass, ranks 1, 2 | miss: ranked 3 |" in text and "#### `cat` (B.env)" in text


def test_the_example_file_passes_most_of_its_cases_and_the_report_explains_its_misses() -> None:
    result = cli(str(EXAMPLE.relative_to(REPO)))

    assert result.returncode == 0, result.stderr[-3000:]
    text = result.stdout
    summary = next(line for line in text.splitlines() if line.startswith("| `environment` |"))
    passed, total = (int(n) for n in summary.split("|")[3].strip().split("/"))
    assert total == 14 and passed >= 11, summary
    misses = text.split("### Misses", 1)[1]
    assert misses.count("#### ") == total - passed
    assert "#### `previous-city`: line 20, namespace `user:ana`" in misses  # the superseded Berlin, on purpose
    assert f"**missed** «{BERLIN}»: superseded by " in misses
    for line in text.split("### Misses")[0].splitlines():
        if "| miss" in line:
            assert f"#### {line.split('|')[1].strip()}: line" in misses  # each missed case explained


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with served(tmp_path_factory.mktemp("eval-cases")) as running:
        yield running


async def call(url: str, admin: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    async with http_client(admin) as http, Client(streamable_http_client(url, http_client=http)) as client:
        return tool_body(tool, await client.call_tool(tool, arguments))


def test_url_and_token_run_the_cases_on_a_running_gateway_and_purge_what_the_run_wrote(
    server: Server, tmp_path: Path
) -> None:
    admin = token(server, "--admin")
    held = anyio.run(call, server.url, admin, "write_memory", {"content": PASSPORT, "namespace": "user:42"})
    path = cases_file(
        tmp_path,
        {"id": "own", **APRIL},
        {"id": "held", "namespace": "user:42", "query": "When does the passport expire?", "expected": [held["id"]]},
    )  # fmt: skip

    result = cli(str(path), "--json", "--url", server.url, "--token", admin, env=server.env)

    assert result.returncode == 0, result.stderr[-3000:]
    body = json.loads(result.stdout)
    assert body["where"].startswith(f"the gateway at {server.url} (its namespaces `eval-")
    own, existing = body["runs"][0]["cases"]
    assert own["passed"] and own["namespace"].startswith("eval-") and own["namespace"].endswith("-case-1")
    assert existing["passed"] and existing["namespace"] == "user:42" and existing["hits"][0]["id"] == held["id"]
    listed = anyio.run(call, server.url, admin, "list_memories", {"include_deleted": True, "limit": 200})
    assert {m["namespace"] for m in listed["memories"]} == {"user:42"}  # the run's own namespaces purged


def test_a_bad_line_fails_the_command_with_one_error_line_naming_the_file_and_line(tmp_path: Path) -> None:
    good = {"memories": [{"content": BERLIN}], "query": "Where?", "expected": [BERLIN]}
    path = cases_file(
        tmp_path, "# a comment", good, "", {**good, "memories": [{"content": BERLIN, "importance": "high"}]}
    )

    result = cli(str(path))

    assert result.returncode == 2
    assert error_line(result) == f"error: {path}:4: memories[0].importance must be a number, got a string"


BAD_LINES = [
    ('{"query": "q", "expected": ["a"], "memories": [{"content": "a"}], "answer": "x"}', 'unknown field "answer"'),
    ('{"query": "q", "expected": ["a"], "memories": [{"content": "a"}],}', "not JSON: Expecting property name"),
    ('["query"]', "a case is a JSON object, got an array"),
    ('{"query": "q", "memories": [{"content": "a"}]}', "expected is required"),
    ('{"query": "q", "expected": "a", "memories": [{"content": "a"}]}', "expected must be an array of strings"),
    ('{"query": "q", "expected": ["b"], "memories": [{"content": "a"}]}', "expected[0] is not the exact content"),
    ('{"query": "q", "expected": ["a"], "memories": [{"content": "a", "namespace": "x"}]}', '"namespace" is not acc'),
    ('{"query": "q", "expected": ["a"], "memories": [{"content": "a"}], "top_k": 0}', "top_k must lie in [1, 100]"),
    ('{"query": "q", "expected": ["a"], "memories": [{"content": "a"}], "top_k": true}', "top_k must be an integer"),
    ('{"query": "q", "expected": ["a"], "memories": [{"content": "a"}], "kinds": ["fact"]}', "kinds [0] must be one"),
    ('{"query": "q", "expected": ["a"], "memories": [{"content": "a"}], "namespaces": ["x"]}', '"namespaces" is not'),
    ('{"query": "q", "expected": ["a"], "memories": []}', "memories must not be empty"),
    ('{"query": "q", "expected": ["a"]}', "memories is required"),
    ('{"query": "q", "expected": ["a"], "namespace": "user:9"}', 'namespace "user:9" holds nothing in a fresh store'),
    ('{"query": "q", "expected": ["a"], "memories": [{"content": "a"}], "query": "r"}', 'field "query" is given twice'),
    ('{"query": "q", "expected": ["a"], "memories": [{"content": "a", "occurred_at": "May"}]}', "ISO 8601 time"),
]


@pytest.mark.parametrize(("line", "problem"), BAD_LINES)
def test_a_bad_case_is_refused_with_its_line_number_and_what_is_wrong(tmp_path: Path, line: str, problem: str) -> None:
    path = cases_file(
        tmp_path, "# cases", json.dumps({"query": "q", "expected": ["a"], "memories": [{"content": "a"}]}), line
    )

    with pytest.raises(CaseFileError) as caught:
        check_namespaces(path, load_cases(path), gateway_holds=False)

    assert str(caught.value).startswith(f"{path}:3: ") and problem in str(caught.value)


def test_a_shared_namespace_must_be_filled_by_an_earlier_line_even_against_a_gateway(tmp_path: Path) -> None:
    path = cases_file(
        tmp_path,
        {"namespace": "team:a", "query": "q", "expected": ["a"]},
        {"namespace": "team:a", "memories": [{"content": "a"}], "query": "q", "expected": ["a"]},
    )

    with pytest.raises(CaseFileError, match=r":1: namespace \"team:a\" gets its memories only on a later line"):
        check_namespaces(path, load_cases(path), gateway_holds=True)


def test_an_env_file_line_that_is_no_gateway_setting_is_refused_with_its_line(tmp_path: Path) -> None:
    path = cases_file(tmp_path, {"memories": [{"content": "a"}], "query": "q", "expected": ["a"]})
    (tmp_path / "A.env").write_text("HINDSIGHT_WEIGHT_RECENCY=0.1\n")
    (tmp_path / "B.env").write_text("\nHINDSIGHT_WEIGHT_RECENCE=0.1\n")

    result = cli(str(path), "--compare", str(tmp_path / "A.env"), str(tmp_path / "B.env"))

    assert result.returncode == 2
    line = f"error: {tmp_path / 'B.env'}:2: HINDSIGHT_WEIGHT_RECENCE is not a HINDSIGHT_* setting of the gateway"
    assert error_line(result) == line


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--url", "http://x/mcp"], "--url needs --token"),
        (["--url", "http://x/mcp", "--token", "t", "--grid"], "--grid and --compare run fresh embedded stores"),
        (["--grid", "--compare", "a.env", "b.env"], "--grid and --compare are separate runs"),
        (["--keep"], "--keep goes with --url"),
        (["--k", "0"], "--k must be from 1 to 100"),
    ],
)
def test_contradictory_options_are_a_usage_error(options: list[str], message: str) -> None:
    parser = argparse.ArgumentParser()
    add_cases_command(parser.add_subparsers())
    args = parser.parse_args(["cases", "cases.jsonl", *options])

    with pytest.raises(UsageError, match=message):
        run_command(args)


def test_a_settings_file_wins_over_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "A.env").write_text("HINDSIGHT_WEIGHT_RECENCY=0.3\n")
    monkeypatch.setenv("HINDSIGHT_WEIGHT_RECENCY", "0.9")
    monkeypatch.setenv("HINDSIGHT_WEIGHT_SPEAKER", "0.1")

    settings = case_settings(tmp_path / "data", Configuration("A", tmp_path / "A.env"))

    assert (settings.weights.recency, settings.weights.speaker) == (0.3, 0.1)  # the rest stays the environment's
    assert settings.backends.data_dir == tmp_path / "data" and not settings.rate_limits.rate_limit_enabled


@pytest.mark.anyio
async def test_the_grid_runs_each_weight_configuration_as_settings_and_reports_the_best_as_env_lines(
    tmp_path: Path,
) -> None:
    path = cases_file(
        tmp_path,
        {"id": "cat", "memories": CAT, "query": "What do I know about the user's cat Miso?",
         "expected": [CAT[0]["content"], CAT[1]["content"]], "top_k": 2},
    )  # fmt: skip
    base = case_settings(tmp_path / "base", Configuration("environment"))
    points = grid(base, "wordllama-l2-supercat-256")
    weights = default_grid(scoring_weights(base, "wordllama-l2-supercat-256"))
    assert len(points) == len(weights)
    for point, expected in zip(points, weights, strict=True):  # each point is the settings of its weights
        as_settings = case_settings(tmp_path / "p", point)
        assert scoring_weights(as_settings, "wordllama-l2-supercat-256") == expected
        assert point.shown == {f"HINDSIGHT_{k.upper()}": str(v) for k, v in point.overrides.items()}
    heavy = Configuration("heavy", overrides={"weight_importance": 2.0}, shown={"HINDSIGHT_WEIGHT_IMPORTANCE": "2.0"})

    report = await run_file(path, configuration=heavy)  # importance 2.0 loses Miso (see the --compare test)
    report.grid = best_first([(await run_file(path, configuration=p)).runs[0] for p in (heavy, *points[:2])])

    best = report.grid[0]
    assert best.label in (points[0].label, points[1].label) and report.grid[-1].label == "heavy"
    text = render(report)
    assert "### Weight grid" in text and "3 configurations of the recall weights" in text
    best_lines = "\n".join(f"{k}={v}" for k, v in best.settings.items())
    assert f"against `heavy`):\n\n```\n{best_lines}\n```" in text
    as_json = json.loads(report_json(report))["grid"]
    assert [p["label"] for p in as_json["points"]] == [r.label for r in report.grid]
    assert as_json["best"]["settings"] == best.settings and as_json["best"]["delta"]["recall@k"] > 0


def test_the_example_file_is_valid_for_an_embedded_run() -> None:
    cases = load_cases(EXAMPLE)
    check_namespaces(EXAMPLE, cases, gateway_holds=False)
    assert any(c.namespace and not c.memories for c in cases)  # a case asks a namespace an earlier line filled
    assert any(any("\u4e00" <= ch <= "\u9fff" for ch in c.query) for c in cases)  # Chinese cases too
    assert sum(len(c.memories) > 2 for c in cases) >= 3
    assert os.path.getsize(EXAMPLE) < 20_000

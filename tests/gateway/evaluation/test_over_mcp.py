"""`hindsight eval locomo` over MCP: a real MCP client writes each turn with `write_memory` and asks each
question with `recall_memory` against the real app on the system clock, in every turn format; what each turn
became is read back with `list_memories`; the CLI runs the whole thing end to end in a subprocess,
in process or against a running `hindsight serve`, prints the section (writing a file only with `--out`), and
names where LoCoMo comes from when `--data` is not there."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from starlette.applications import Starlette

from gateway.cli.eval import LOCOMO_SOURCE
from gateway.evaluation import locomo
from gateway.evaluation.formats import FORMATS, HEADER, PLAIN
from gateway.evaluation.locomo import Conversation
from gateway.evaluation.over_mcp import EvaluationFailed, McpEvaluation
from gateway.evaluation.report import BEGIN, END, render
from gateway.services.runtime import Runtime
from gateway.web.app import create_app
from ops.config import Settings
from tests.conftest import Mint, data, mcp_session, running
from tests.gateway.cli_runs import REPO, clean_env, free_port, hindsight, serving

pytestmark = pytest.mark.anyio


def tiny_dataset() -> list[dict[str, Any]]:
    first = [
        {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a greyhound named Pixel last week."},
        {"speaker": "Ben", "dia_id": "D1:2", "text": "Congrats! I started learning the cello."},
        {"speaker": "Ana", "dia_id": "D1:3", "text": "My sister lives in Porto and works at a bakery."},
        {"speaker": "Ben", "dia_id": "D1:4", "text": "I have a dentist appointment tomorrow at 3pm."},
    ]
    second = [
        {"speaker": "Ben", "dia_id": "D2:1", "text": "My cello teacher is called Mrs. Okafor."},
        {"speaker": "Ana", "dia_id": "D2:2", "text": "Pixel loves the beach near our flat.", "blip_caption": "a dog"},
    ]
    qa = [
        {"question": "What is the name of Ana's dog?", "answer": "Pixel", "evidence": ["D1:1"], "category": 4},
        {"question": "Who teaches Ben the cello?", "answer": "Mrs. Okafor", "evidence": ["D2:1"], "category": 4},
        {"question": "Where does Ana's sister live?", "answer": "Porto", "evidence": ["D1:3"], "category": 1},
        {"question": "When was Ben's dentist appointment?", "answer": "4 March", "evidence": ["D1:4"], "category": 2},
    ]
    conversation = {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1_date_time": "10:00 am on 3 March, 2023",
        "session_1": first,
        "session_2_date_time": "6:30 pm on 20 March, 2023",
        "session_2": second,
    }
    return [{"sample_id": "tiny-1", "conversation": conversation, "qa": qa}]


EVAL_ADMIN: dict[str, Any] = {"tenant": "eval", "read": [], "write": [], "admin": True}  # the token of an evaluator


def tiny(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(tiny_dataset()))
    return path


@pytest.fixture
async def live_app(settings: Settings) -> Any:
    """The app on the system clock, as `hindsight serve` runs it (the conftest `app` runs on a manual clock)."""
    async with running(create_app(settings)) as started:
        yield started


@pytest.fixture
def conversation(tmp_path: Path) -> Conversation:
    [only] = locomo.load(tiny(tmp_path))
    return only


@asynccontextmanager
async def evaluator(app: Starlette, token: str) -> AsyncIterator[tuple[McpEvaluation, Client]]:
    """An evaluation over an MCP session of `token` with `app` (on its own embedder), and the session's client."""
    runtime: Runtime = app.state.runtime
    async with mcp_session(app, token) as client:
        yield McpEvaluation(client, runtime.embedder), client


async def test_every_format_is_written_and_asked_through_mcp_with_the_hidden_turns_read_back(
    live_app: Starlette, mint: Mint, conversation: Conversation
) -> None:
    async with evaluator(live_app, mint(**EVAL_ADMIN)) as (evaluation, client):
        reports = await evaluation.run(FORMATS, [conversation])
        stored = data(await client.call_tool("list_memories", {"namespace": "locomo-eval-header-tiny-1"}))

    assert [r.format for r in reports] == ["plain", "header", "occurred_at"]
    for report in reports:
        assert (report.conversations, report.turns, report.questions, report.evidence_total) == (1, 6, 4, 4)
        # asked now, on the system clock: the appointment "tomorrow" of 3 March 2023 is long past, and is still
        # found: a passed plan is kept as history, demoted, never hidden (the listing read back says so)
        assert report.turns_hidden["expired"] == 0 and report.evidence_hidden["expired"] == 0
        assert report.systems["hindsight"].by_category[2].means()["recall@10"] == 1.0
        assert report.systems["bm25"].by_category[2].means()["recall@10"] == 1.0
        assert len(report.systems["hindsight"].latencies) == 4
    plain = reports[0].systems["hindsight"].by_category[4].means()
    assert plain["recall@10"] == 1.0  # six turns, top 10: every live evidence turn comes back
    # each format stored exactly its own text, with the turn's time and a request id per turn
    by_dia = {m["metadata"]["dia_id"]: m for m in stored["memories"]}
    assert by_dia["D2:2"]["content"] == "[6:30 pm on 20 March, 2023] Ana: Pixel loves the beach near our flat. " + (
        "[shared a photo: a dog]"
    )
    assert by_dia["D2:2"]["created_at"].startswith("2023-03-20T18:30:01")
    assert by_dia["D2:2"]["source"]["request_id"] == "locomo-eval-header-tiny-1:D2:2"

    section = render(reports, "tiny")
    assert section.startswith(BEGIN) and section.rstrip().endswith(END)
    for label in (
        "| plain text | hindsight |",
        "| timestamp header | plain BM25 |",
        "| occurred_at only | dense only |",
    ):
        assert label in section
    assert "| timestamp header | evidence turns |" in section and "recall@10 spread across formats" in section


async def test_a_rerun_with_the_same_request_ids_replays_each_write(
    live_app: Starlette, mint: Mint, conversation: Conversation
) -> None:
    async with evaluator(live_app, mint(**EVAL_ADMIN)) as (evaluation, client):
        first = await evaluation.ingest(PLAIN, conversation, "locomo-rerun")
        again = await evaluation.ingest(PLAIN, conversation, "locomo-rerun")
        listed = data(await client.call_tool("list_memories", {"namespace": "locomo-rerun", "include_deleted": True}))

    assert again.memory_of == first.memory_of  # the first answers, not "duplicate" skips
    assert len(listed["memories"]) == len(set(first.memory_of.values()))


async def test_a_token_that_cannot_write_the_namespaces_stops_the_evaluation_with_the_gateway_error(
    live_app: Starlette, mint: Mint, conversation: Conversation
) -> None:
    async with evaluator(live_app, mint(tenant="eval", read=["user:1"], write=["user:1"])) as (evaluation, _):
        with pytest.raises(EvaluationFailed, match="write_memory: namespace_forbidden"):
            await evaluation.run([HEADER], [conversation])


def test_the_cli_prints_the_three_formats_side_by_side_and_writes_the_section(tmp_path: Path) -> None:
    out = tmp_path / "RESULTS.md"
    out.write_text("# Bench\n\nkeep me\n")
    command = ["eval", "locomo", "--data", str(tiny(tmp_path))]
    result = hindsight(*command, "--limit-conversations", "1", "--out", str(out), env=clean_env())
    assert result.returncode == 0, result.stderr[-4000:]
    assert "HTTP Request" not in result.stderr  # no per-request log lines (they would be timed too)
    text = out.read_text()
    assert text.startswith("# Bench\n\nkeep me\n") and text.count(BEGIN) == 1
    assert "rate limits off" in text and "system clock" in text
    for fmt in FORMATS:
        assert f"| {fmt.label} | hindsight |" in text and f"| {fmt.label} | evidence turns |" in text
    assert result.stdout.startswith(BEGIN)


def test_without_out_the_cli_prints_the_section_and_writes_no_file(tmp_path: Path) -> None:
    """Run where a `bench/RESULTS.md` is (the former default, relative to the working directory): untouched."""
    results = tmp_path / "bench" / "RESULTS.md"
    results.parent.mkdir()
    results.write_text("# Bench\n\nkeep me\n")
    data = tiny(tmp_path)
    env = clean_env(PYTHONPATH=str(REPO))
    result = hindsight("eval", "locomo", "--data", str(data), "--formats", "plain", env=env, cwd=tmp_path)

    assert result.returncode == 0, result.stderr[-4000:]
    assert result.stdout.startswith(BEGIN) and result.stdout.rstrip().endswith(END)
    assert "| plain text | hindsight |" in result.stdout and "written to" not in result.stderr
    assert results.read_text() == "# Bench\n\nkeep me\n"
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == [
        "bench",
        "bench/RESULTS.md",
        "tiny.json",
    ]


@pytest.mark.parametrize(("name", "problem"), [("missing.json", "no such file"), (".", "is a directory")])
def test_missing_data_is_refused_saying_where_locomo_comes_from(tmp_path: Path, name: str, problem: str) -> None:
    data = tmp_path / name
    result = hindsight("eval", "locomo", "--data", str(data), env=clean_env())

    assert result.returncode == 2 and result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith(f"error: --data {data}: {problem}")
    assert LOCOMO_SOURCE in line and "`data/locomo10.json`" in line and "docs/EVALUATION.md" in line


def test_the_cli_evaluates_a_running_gateway_given_its_url_and_an_admin_token(tmp_path: Path) -> None:
    port = free_port()
    env = clean_env(HINDSIGHT_DATA_DIR=str(tmp_path / "data"), HINDSIGHT_PORT=str(port))
    with (tmp_path / "server.log").open("w") as log, serving(env=env, cwd=tmp_path, log=log) as url:
        grants = ["--tenant", "acme", "--sub", "evaluator", "--admin", "--ttl", "600"]
        token = hindsight("token", *grants, env=env, cwd=tmp_path, check=True).stdout.strip()
        command = ["eval", "locomo", "--data", str(tiny(tmp_path)), "--formats", "plain,header"]
        result = hindsight(*command, "--url", url, "--token", token, env=env)
    assert result.returncode == 0, result.stderr[-4000:]
    assert f"the gateway at http://127.0.0.1:{port}/mcp" in result.stdout
    assert "| plain text | hindsight |" in result.stdout and "| timestamp header | hindsight |" in result.stdout
    assert "occurred_at only" not in result.stdout  # only the formats asked for

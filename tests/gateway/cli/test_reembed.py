"""`hindsight reembed` as an operator runs it: against a live `hindsight serve` over TCP with a token from
`hindsight token --operator`, and offline on a stopped data directory."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from memory.stores.active_index import POINTER_FILE
from tests.conftest import data
from tests.gateway.cli_runs import clean_env, free_port, hindsight, serving

pytestmark = pytest.mark.anyio


def cli(env: dict[str, str], *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """`hindsight *args` beside the data directory `env` names; a non-zero exit fails the test unless not `check`."""
    return hindsight(*args, env=env, cwd=Path(env["HINDSIGHT_DATA_DIR"]).parent, timeout=300, check=check)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return clean_env(HINDSIGHT_DATA_DIR=str(tmp_path / "data"))


@pytest.fixture
def served(env: dict[str, str], tmp_path: Path) -> Iterator[dict[str, Any]]:
    with (tmp_path / "server.log").open("w+") as log:
        with serving(env=env | {"HINDSIGHT_PORT": str(free_port())}, cwd=tmp_path, log=log) as url:
            yield {"url": url, "env": env}


async def test_reembed_moves_a_running_gateway_and_drops_the_old_index_on_request(served: dict[str, Any]) -> None:
    env, url = served["env"], served["url"]
    agent = cli(env, "token", "--tenant", "acme", "--sub", "a", "--write", "user:1").stdout.strip()
    operator = cli(env, "token", "--tenant", "ops", "--sub", "ops", "--operator").stdout.strip()
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {agent}"})
    async with http, Client(streamable_http_client(url, http_client=http)) as client:
        written = data(await client.call_tool("write_memory", {"content": "The deploy window is Thursday 10:00"}))

    moved = cli(env, "reembed", "--to", "use", "--url", url, "--token", operator)
    status = json.loads(moved.stdout)
    dropped = cli(env, "reembed", "--drop-old", "--url", url, "--token", operator)

    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {agent}"})
    async with http, Client(streamable_http_client(url, http_client=http)) as client:
        hits = data(await client.call_tool("recall_memory", {"query": "when is the deploy window?"}))
    assert status["state"] == "switched" and status["to_model"] == "use-multilingual-v3"
    assert status["verified"] == 1 and status["old_indexes"] == ["vectors"]
    assert "dropped vectors" in dropped.stderr
    assert [h["id"] for h in hits["memories"]] == [written["id"]]
    assert json.loads((Path(env["HINDSIGHT_DATA_DIR"]) / POINTER_FILE).read_text())["embedder"] == "use"


def test_reembed_offline_migrates_a_stopped_data_directory(env: dict[str, str], tmp_path: Path) -> None:
    records = tmp_path / "in.jsonl"
    records.write_text("".join(json.dumps({"content": f"Offline fact number {i}"}) + "\n" for i in range(4)))
    cli(env, "import", "--tenant", "acme", "--namespace", "user:1", str(records))

    unclear = cli(env, "reembed", check=False)
    moved = json.loads(cli(env, "reembed", "--to", "use").stdout)
    old_setting = cli(env, "reembed", "--status", check=False)  # still HINDSIGHT_EMBEDDER=wordllama
    status = json.loads(cli(env | {"HINDSIGHT_EMBEDDER": "use"}, "reembed", "--status").stdout)

    assert unclear.returncode == 2 and "exactly one of" in unclear.stderr
    assert moved["state"] == "switched" and moved["verified"] == 4
    assert old_setting.returncode == 1 and "HINDSIGHT_EMBEDDER=use" in old_setting.stderr
    assert status["state"] == "idle" and status["old_indexes"] == ["vectors"]

"""`hindsight reembed` as an operator runs it: against a live `hindsight serve` over TCP with a token from
`hindsight token --operator`, and offline on a stopped data directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from memory.stores.active_index import POINTER_FILE
from tests.conftest import data
from tests.gateway.test_cli_serve import free_port, wait_until_live

pytestmark = pytest.mark.anyio


def hindsight(env: dict[str, str], *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gateway.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        check=check,
        timeout=300,
        cwd=Path(env["HINDSIGHT_DATA_DIR"]).parent,
    )


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
    return clean | {"HINDSIGHT_DATA_DIR": str(tmp_path / "data")}


@pytest.fixture
def served(env: dict[str, str], tmp_path: Path) -> Iterator[dict[str, Any]]:
    port = free_port()
    log = (tmp_path / "server.log").open("w+")
    process = subprocess.Popen(
        [sys.executable, "-m", "gateway.cli", "serve"],
        env=env | {"HINDSIGHT_PORT": str(port)},
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=tmp_path,
    )
    try:
        wait_until_live(f"http://127.0.0.1:{port}/livez", process)
        yield {"url": f"http://127.0.0.1:{port}/mcp", "env": env}
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


async def test_reembed_moves_a_running_gateway_and_drops_the_old_index_on_request(served: dict[str, Any]) -> None:
    env, url = served["env"], served["url"]
    agent = hindsight(env, "token", "--tenant", "acme", "--sub", "a", "--write", "user:1").stdout.strip()
    operator = hindsight(env, "token", "--tenant", "ops", "--sub", "ops", "--operator").stdout.strip()
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {agent}"})
    async with http, Client(streamable_http_client(url, http_client=http)) as client:
        written = data(await client.call_tool("write_memory", {"content": "The deploy window is Thursday 10:00"}))

    moved = hindsight(env, "reembed", "--to", "use", "--url", url, "--token", operator)
    status = json.loads(moved.stdout)
    dropped = hindsight(env, "reembed", "--drop-old", "--url", url, "--token", operator)

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
    hindsight(env, "import", "--tenant", "acme", "--namespace", "user:1", str(records))

    unclear = hindsight(env, "reembed", check=False)
    moved = json.loads(hindsight(env, "reembed", "--to", "use").stdout)
    old_setting = hindsight(env, "reembed", "--status", check=False)  # still HINDSIGHT_EMBEDDER=wordllama
    status = json.loads(hindsight(env | {"HINDSIGHT_EMBEDDER": "use"}, "reembed", "--status").stdout)

    assert unclear.returncode == 2 and "exactly one of" in unclear.stderr
    assert moved["state"] == "switched" and moved["verified"] == 4
    assert old_setting.returncode == 1 and "HINDSIGHT_EMBEDDER=use" in old_setting.stderr
    assert status["state"] == "idle" and status["old_indexes"] == ["vectors"]

"""No acknowledged write is lost: SIGKILL the gateway right after acknowledged writes, restart it on the same
data directory, and every acknowledged memory is there (embedded engine; its write-ahead log is the guarantee).
And every request is applied exactly once (issue #32): SIGKILL the gateway again and again while clients send
forced writes, forced batches and events with request ids, retry every unacknowledged request after the restart,
and no request is stored twice or lost, in process and with Redis (`bench.crash` drives it; `python -m
bench.crash --kills 30` is the measured run)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from bench.crash import run_backend
from bench.crash_clients import KINDS
from tenancy import mint_token
from tests.conftest import SECRET, data
from tests.gateway.cli_runs import free_port, wait_until_live

pytestmark = pytest.mark.anyio


def start(data_dir: Path, port: int, log: Path) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
    env |= {"HINDSIGHT_DATA_DIR": str(data_dir), "HINDSIGHT_PORT": str(port), "HINDSIGHT_JWT_SECRET": SECRET}
    env["HINDSIGHT_RATE_LIMIT_ENABLED"] = "false"
    process = subprocess.Popen(
        [sys.executable, "-m", "gateway.cli", "serve"],
        env=env,
        stdout=log.open("a"),
        stderr=subprocess.STDOUT,
        text=True,
    )
    wait_until_live(f"http://127.0.0.1:{port}/livez", process)
    return process


async def test_acknowledged_writes_survive_sigkill_and_restart(tmp_path: Path) -> None:
    port = free_port()
    token = mint_token(SECRET, tenant="acme", subject="a", read=["user:1"], write=["user:1"])
    url = f"http://127.0.0.1:{port}/mcp"
    process = start(tmp_path / "data", port, tmp_path / "log")
    acknowledged: list[str] = []
    try:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"})
        async with http, Client(streamable_http_client(url, http_client=http)) as client:
            for i in range(40):
                written = data(await client.call_tool("write_memory", {"content": f"durable fact {i}"}))
                acknowledged.append(written["id"])
            forgotten = data(await client.call_tool("forget_memory", {"id": acknowledged[0]}))
            assert forgotten["status"] == "forgotten"
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
        process = start(tmp_path / "data", port, tmp_path / "log")
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"})
        async with http, Client(streamable_http_client(url, http_client=http)) as client:
            listed = data(await client.call_tool("list_memories", {"limit": 200, "include_deleted": True}))
    finally:
        process.kill()
        process.wait(timeout=10)
    by_id = {m["id"]: m for m in listed["memories"]}
    assert sorted(by_id) == sorted(acknowledged)
    assert by_id[acknowledged[0]]["deleted_at"] is not None


@pytest.mark.parametrize("backend", ["inprocess", "redis"])
async def test_requests_retried_after_sigkills_are_applied_exactly_once(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    redis_url = request.getfixturevalue("redis_url") if backend == "redis" else None
    report = await run_backend(backend, tmp_path, kills=3, workers=1, acks_between=(6, 12), redis_url=redis_url)

    assert report.kills == 3
    assert set(report.kinds) == set(KINDS)
    for kind, row in report.kinds.items():
        assert row.requests > 0, kind
        assert (kind, row.duplicates, row.lost) == (kind, 0, 0)

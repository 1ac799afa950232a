"""End to end as a newcomer runs it: `hindsight serve --print-token` in a subprocess on a free port, then a real
MCP client over TCP with the printed token calls every tool; `hindsight token` mints tokens the server accepts."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from gateway.cli.main import python_snippet
from tests.conftest import data
from tests.gateway.cli_runs import clean_env, free_port, hindsight, serving

pytestmark = pytest.mark.anyio


@pytest.fixture
def server(tmp_path: Path) -> Iterator[dict[str, Any]]:
    env = clean_env(HINDSIGHT_DATA_DIR=str(tmp_path / "data"), HINDSIGHT_PORT=str(free_port()))
    with (tmp_path / "server.log").open("w+") as log, serving("--print-token", env=env, cwd=tmp_path, log=log) as url:
        log.seek(0)
        output = log.read()
        token = re.search(r"dev token .*?\n\n  (\S+)\n", output, re.S)
        assert token, output
        yield {"url": url, "token": token.group(1), "env": env, "output": output, "log": tmp_path / "server.log"}


async def test_the_printed_dev_token_can_call_every_tool_over_tcp(server: dict[str, Any]) -> None:
    assert "claude mcp add --transport http hindsight" in server["output"]
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {server['token']}"})
    async with http, Client(streamable_http_client(server["url"], http_client=http)) as client:
        me = data(await client.call_tool("whoami", {}))
        written = data(await client.call_tool("write_memory", {"content": "The user's favourite editor is Helix"}))
        recalled = data(await client.call_tool("recall_memory", {"query": "which editor", "explain": True}))
        listed = data(await client.call_tool("list_memories", {}))
        data(await client.call_tool("forget_memory", {"id": written["id"]}))
        data(await client.call_tool("restore_memory", {"id": written["id"]}))
        turn = data(await client.call_tool("record_turn", {"session_id": "s1", "role": "user", "content": "hello"}))
        state = data(await client.call_tool("update_working_memory", {"session_id": "s1", "state": {"k": 1}}))
        session = data(await client.call_tool("get_working_memory", {"session_id": "s1"}))
    assert me["tenant"] == "dev"
    assert recalled["memories"][0]["id"] == written["id"]
    assert "scores" in recalled["memories"][0]
    assert [m["id"] for m in listed["memories"]] == [written["id"]]
    assert turn["turns"] == 1
    assert state["state"] == {"k": 1}
    assert session["turns"][0]["content"] == "hello"


def logged_lines(log: Path, wanted: str, count: int, deadline_s: float = 30.0) -> list[str]:
    """The server's log lines once `count` of them hold `wanted` (it writes a request's access line as it ends)."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        lines = log.read_text().splitlines()
        if sum(wanted in line for line in lines) >= count:
            return lines
        time.sleep(0.05)  # polling a child process's log, not a timing assumption
    raise AssertionError(f"fewer than {count} log lines hold {wanted!r}")


def rpc(method: str, params: dict[str, Any], call_id: int | None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params} | ({"id": call_id} if call_id is not None else {})


async def test_a_served_call_logs_its_access_line_and_no_sdk_session_chatter(server: dict[str, Any]) -> None:
    # plain JSON-RPC posts, as a client without an MCP SDK sends them (the SDK logged "Terminating session: None"
    # at INFO for each of these calls)
    headers = {"Authorization": f"Bearer {server['token']}", "Accept": "application/json, text/event-stream"}
    async with httpx2.AsyncClient(headers=headers) as http:
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "plain", "version": "1"}}
        version = (await http.post(server["url"], json=rpc("initialize", hello, 1))).json()["result"]["protocolVersion"]
        http.headers["Mcp-Protocol-Version"] = version
        await http.post(server["url"], json=rpc("notifications/initialized", {}, None))
        for call_id in range(2, 5):
            answer = await http.post(
                server["url"], json=rpc("tools/call", {"name": "whoami", "arguments": {}}, call_id)
            )
            assert answer.json()["result"]["structuredContent"]["tenant"] == "dev"
        # a last request: its access line comes after the calls' own
        assert (await http.get(server["url"].removesuffix("/mcp") + "/livez")).status_code == 200

    lines = logged_lines(server["log"], '"GET /livez', 2)  # the fixture's readiness probe and this one

    assert sum('"POST /mcp' in line for line in lines) == 5
    assert not [line for line in lines if "Terminating session" in line]


async def test_a_token_from_hindsight_token_is_accepted_by_the_server(server: dict[str, Any]) -> None:
    grants = [
        "--tenant",
        "acme",
        "--sub",
        "ops-bot",
        "--read",
        "team:ops,user:9",
        "--write",
        "team:ops",
        "--ttl",
        "600",
    ]
    cwd = Path(server["env"]["HINDSIGHT_DATA_DIR"]).parent
    token = hindsight("token", *grants, env=server["env"], cwd=cwd, check=True).stdout.strip()
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"})
    async with http, Client(streamable_http_client(server["url"], http_client=http)) as client:
        me = data(await client.call_tool("whoami", {}))
    assert me == {
        "subject": "ops-bot",
        "tenant": "acme",
        "namespaces": {"read": ["team:ops", "user:9"], "write": ["team:ops"]},
        "scopes": ["memory:read", "memory:write"],
    }


def test_hindsight_token_rejects_a_malformed_namespace(tmp_path: Path) -> None:
    secret = "a-configured-secret-" + "x" * 32  # `token` never creates one
    env = clean_env(HINDSIGHT_DATA_DIR=str(tmp_path), HINDSIGHT_JWT_SECRET=secret)
    result = hindsight("token", "--tenant", "acme", "--sub", "x", "--read", "Bad NS", env=env, cwd=tmp_path)
    assert result.returncode == 2
    assert "namespace" in result.stderr


README = Path(__file__).resolve().parents[3] / "README.md"


def readme_python() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("```python\n", text.index("**Python** (`mcp` SDK")) + len("```python\n")
    return text[start : text.index("```", start)]


def run_script(script: str, tmp: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    path = tmp / "example.py"
    path.write_text(script, encoding="utf-8")
    return subprocess.run(
        [sys.executable, str(path)], env=env, capture_output=True, text=True, timeout=120, check=False
    )


def test_the_readme_python_snippet_is_the_printed_one_reading_the_token_from_the_environment() -> None:
    assert readme_python() == python_snippet("http://127.0.0.1:8080/mcp", 'os.environ["HINDSIGHT_TOKEN"]') + "\n"


def test_the_python_snippets_of_the_readme_and_of_make_run_work_when_pasted(
    server: dict[str, Any], tmp_path: Path
) -> None:
    printed = "\n".join(
        line.removeprefix("  ")
        for line in server["output"].split("Python (mcp SDK", 1)[1].split("\n", 1)[1].split("\n\n\n")[0].splitlines()
    )
    from_readme = readme_python().replace("http://127.0.0.1:8080/mcp", server["url"])

    ran_printed = run_script(printed, tmp_path, server["env"])
    ran_readme = run_script(from_readme, tmp_path, server["env"] | {"HINDSIGHT_TOKEN": server["token"]})

    assert ran_printed.returncode == 0, ran_printed.stderr[-2000:]
    assert ran_readme.returncode == 0, ran_readme.stderr[-2000:]
    assert ran_printed.stdout.strip() == ran_readme.stdout.strip() == "The user prefers short answers"

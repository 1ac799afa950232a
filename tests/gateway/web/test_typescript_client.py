"""The official MCP TypeScript SDK against the real gateway (issue #30.5): `hindsight serve` in a subprocess on a
free port, and `node tests/clients/ts/check.mjs` as the client, with `@modelcontextprotocol/sdk` pinned in
tests/clients/ts/package.json (`npm ci --prefix tests/clients/ts`, which .ci/run does).

The TypeScript SDK (so MCP Inspector) validates a result's structured content against the tool's output schema
once `tools/list` has been seen, even when the result is a tool error: an error sent as structured content made
every tool error a thrown `McpError -32602 Structured content does not match the tool's output schema`. The
script lists the tools first, so validation is on for every call it makes.

Without `node` or the installed SDK the tests skip saying so, except under `CI=true`, where they fail: CI must
run them."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tenancy import mint_token
from tests.conftest import SECRET
from tests.ops.deploy_support import ready_gateway
from tests.required import missing

TS_DIR = Path(__file__).resolve().parents[2] / "clients" / "ts"
TS_RELATIVE = "tests/clients/ts"
CLIENTS_MD = Path(__file__).resolve().parents[3] / "docs" / "CLIENTS.md"
LIMITED = "ts-limited"  # the tenant whose subjects get one read call a minute
LIMITS = {LIMITED: {"subject_read_per_minute": 1, "burst_seconds": 60}}
NODE_DEADLINE_S = 120


def token(tenant: str, subject: str = "ts-agent") -> str:
    return mint_token(SECRET, tenant=tenant, subject=subject, read=["user:1"], write=["user:1"])


@pytest.fixture(scope="module")
def node() -> str:
    """The `node` to run the client with, once the SDK is installed; skips (fails under CI=true) otherwise."""
    found = shutil.which("node")
    if found is None:
        missing("run the TypeScript SDK client test", "node is not installed (apt-get install nodejs npm)")
    if not (TS_DIR / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json").is_file():
        missing(
            "run the TypeScript SDK client test",
            "the TypeScript SDK is not installed: npm ci --prefix tests/clients/ts",
        )
    return found


@pytest.fixture(scope="module")
def mcp_url(node: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One `hindsight serve` for the module, its settings in a .env where it runs: the tests' JWT secret, and
    for the tenant `ts-limited` one read call per subject a minute (so its second call gets a 429)."""
    here = tmp_path_factory.mktemp("ts-client")
    (here / ".env").write_text(f"HINDSIGHT_JWT_SECRET={SECRET}\nHINDSIGHT_RATE_LIMIT_TENANTS='{json.dumps(LIMITS)}'\n")
    with ready_gateway([sys.executable, "-m", "gateway.cli", "serve"], cwd=here) as (base, _):
        yield f"{base}/mcp"


def node_env(url: str, bearer: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
    return env | {"HINDSIGHT_URL": url, "HINDSIGHT_TOKEN": bearer}


def run_node(node: str, args: list[str], url: str, bearer: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        [node, *args],
        cwd=TS_DIR,
        env=node_env(url, bearer),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=NODE_DEADLINE_S,
        check=False,
    )
    assert done.returncode == 0, f"node exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def check(node: str, mode: str, url: str, bearer: str) -> dict[str, Any]:
    """What check.mjs saw in `mode`: its one JSON line."""
    lines = run_node(node, ["check.mjs", mode], url, bearer).strip().splitlines()
    assert len(lines) == 1, lines
    seen: dict[str, Any] = json.loads(lines[0])
    return seen


@pytest.fixture(scope="module")
def calls(node: str, mcp_url: str) -> dict[str, Any]:
    """One run of the `calls` mode: list, write, recall, and two tool errors."""
    return check(node, "calls", mcp_url, token("ts-acme"))


def refusal_data(thrown: dict[str, Any]) -> dict[str, Any]:
    """Our error of a refusal as the SDK surfaces it: a `StreamableHTTPError` whose message ends with the JSON-RPC
    error the server sent (parsed by check.mjs into `body`)."""
    assert thrown["threw"] == "StreamableHTTPError", thrown
    assert thrown["message"].startswith("Streamable HTTP error: Error POSTing to endpoint: {"), thrown
    data: dict[str, Any] = thrown["body"]["error"]["data"]
    return data


def test_the_sdk_lists_the_tools_with_their_output_schemas(calls: dict[str, Any]) -> None:
    assert calls["connected"] is True
    assert {"write_memory", "recall_memory", "forget_memory"} <= set(calls["withOutputSchema"])


def test_a_write_and_its_recall_pass_the_sdk_s_output_schema_validation(calls: dict[str, Any]) -> None:
    written, recalled = calls["write"], calls["recall"]
    assert written["isError"] is False and "threw" not in written, written
    assert written["structuredContent"]["status"] == "created"
    assert recalled["isError"] is False and "threw" not in recalled, recalled
    hits = recalled["structuredContent"]["memories"]
    assert [hit["id"] for hit in hits] == [written["structuredContent"]["id"]]
    assert hits[0]["content"] == "The user's favourite editor is Helix"


@pytest.mark.parametrize(
    ("step", "code", "says"),
    [("invalid", "invalid_argument", "importance"), ("notFound", "not_found", "no memory with that id")],
)
def test_a_tool_error_arrives_as_is_error_with_our_code_in_its_text_and_no_structured_content(
    calls: dict[str, Any], step: str, code: str, says: str
) -> None:
    answer = calls[step]
    assert "threw" not in answer, answer  # the SDK returned the result instead of throwing -32602
    assert answer["isError"] is True
    assert answer["hasStructuredContent"] is False
    assert answer["error"]["code"] == code
    assert answer["error"]["retryable"] is False
    assert says in answer["error"]["message"]
    assert answer["text"] == json.dumps({"error": answer["error"]}, ensure_ascii=False, separators=(",", ":"))


def test_a_bad_token_fails_the_connection_with_401_and_our_unauthenticated_error(node: str, mcp_url: str) -> None:
    seen = check(node, "connect", mcp_url, "not-a-token")
    assert seen["connected"] is False
    thrown = seen["connect"]
    assert thrown["code"] == 401  # StreamableHTTPError.code: the HTTP status
    assert thrown["body"]["error"]["code"] == -32003
    assert refusal_data(thrown) == {
        "code": "unauthenticated",
        "message": "a valid bearer token is required: bearer token is not a well-formed JWT",
        "retryable": False,
        "retry_after_seconds": None,
    }


def test_a_call_over_the_rate_limit_throws_429_with_our_rate_limited_error(node: str, mcp_url: str) -> None:
    seen = check(node, "rate-limit", mcp_url, token(LIMITED, subject="ts-limited-agent"))
    assert seen["connected"] is True  # connecting and tools/list spend protocol tokens, not tool calls
    assert seen["allowed"] == 1
    thrown = seen["refused"]
    assert thrown["code"] == 429
    assert thrown["body"]["error"]["code"] == -32010
    data = refusal_data(thrown)
    assert data["code"] == "rate_limited"
    assert data["retryable"] is True
    assert 1 <= data["retry_after_seconds"] <= 60
    assert f"rate_limited; retry after {data['retry_after_seconds']} s" in thrown["message"]


def docs_snippet() -> str:
    """The TypeScript SDK snippet of docs/CLIENTS.md: the first ```js block after its heading."""
    text = CLIENTS_MD.read_text()
    section = text[text.index("## Official TypeScript SDK") :]
    found = re.search(r"```js\n(.*?)```", section, re.S)
    assert found, "no ```js block in the TypeScript SDK section of docs/CLIENTS.md"
    return found.group(1)


def test_the_docs_snippet_runs_as_pasted(node: str, mcp_url: str) -> None:
    # As an ES module from stdin, resolving the SDK from tests/clients/ts; a subject that gets one read call, so
    # the recall spends it and the last call shows the refusal.
    printed = run_node(
        node, ["--input-type=module"], mcp_url, token(LIMITED, subject="ts-docs-agent"), stdin=docs_snippet()
    )
    lines = printed.strip().splitlines()
    assert len(lines) == 4, printed
    assert re.fullmatch(r"created [0-9a-f-]{36}", lines[0]), lines
    assert lines[1:3] == ["The user prefers short answers", "true invalid_argument"]
    assert re.fullmatch(r"429 rate_limited \d+", lines[3]), lines

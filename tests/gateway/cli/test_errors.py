"""How `hindsight` fails, run as an operator runs it: the CLI in a subprocess against a real `hindsight serve` (one
per module). Every failure is one `error: ...` line on stderr naming the HTTP status or the MCP error code,
exit 1 for a failure and 2 for a usage error; a wrong option prints the usage of the subcommand it was given to."""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from gateway.cli.errors import CommandFailed, UsageError, describe
from gateway.cli.main import build_parser, parsers
from ops.version import VERSION
from tests.gateway.cli_runs import clean_env, free_port, hindsight, serving
from tests.required import missing

ANOTHER_SECRET = "not-the-servers-secret-" + "x" * 32


@dataclass(frozen=True)
class Server:
    url: str
    env: dict[str, str]
    cwd: Path


def error_line(result: subprocess.CompletedProcess[str]) -> str:
    """The single line of stderr, which must be an `error:` line."""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr[-3000:]
    assert lines[0].startswith("error: "), lines[0]
    return lines[0]


def token(server: Server, *args: str, env: dict[str, str] | None = None) -> str:
    minted = hindsight("token", "--tenant", "acme", "--sub", "cli-test", *args, env=env or server.env, cwd=server.cwd)
    assert minted.returncode == 0, minted.stderr
    return minted.stdout.strip()


@contextmanager
def served(home: Path) -> Iterator[Server]:
    """`hindsight serve` in a subprocess on a free port, data in `home`, until the block ends."""
    env = clean_env(HINDSIGHT_DATA_DIR=str(home / "data"), HINDSIGHT_PORT=str(free_port()))
    with (home / "server.log").open("w") as log, serving(env=env, cwd=home, log=log) as url:
        yield Server(url, env, home)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with served(tmp_path_factory.mktemp("cli-errors")) as running:
        yield running


def test_export_with_a_token_without_the_admin_scope_fails_with_one_line_naming_the_mcp_error_code(
    server: Server,
) -> None:
    reader = token(server, "--read", "user:1")

    result = hindsight(
        "export", "--namespace", "user:1", "--url", server.url, "--token", reader, env=server.env, cwd=server.cwd
    )

    assert result.returncode == 1
    line = error_line(result)
    assert line.startswith("error: export_memories: scope_forbidden (MCP error code -32004): "), line
    assert "memory:admin" in line


def test_a_token_signed_with_another_secret_fails_with_one_line_naming_http_401(server: Server) -> None:
    forged = token(server, "--admin", env=server.env | {"HINDSIGHT_JWT_SECRET": ANOTHER_SECRET})

    result = hindsight(
        "export", "--namespace", "user:1", "--url", server.url, "--token", forged, env=server.env, cwd=server.cwd
    )

    assert result.returncode == 1
    line = error_line(result)
    assert line.startswith("error: 401 unauthorized (unauthenticated, MCP error code -32003): "), line
    assert line.endswith("token signature is invalid (it was signed with another secret or key than this server's)")
    assert ANOTHER_SECRET not in line


def test_an_unreachable_url_fails_with_one_line_naming_the_url_and_the_reason(server: Server) -> None:
    nowhere = f"http://127.0.0.1:{free_port()}/mcp"

    result = hindsight(
        "export", "--namespace", "user:1", "--url", nowhere, "--token", "t", env=server.env, cwd=server.cwd
    )

    assert result.returncode == 1
    assert error_line(result) == f"error: cannot reach {nowhere}: connection refused"


def test_debug_adds_the_traceback_and_still_ends_with_the_error_line(server: Server) -> None:
    nowhere = f"http://127.0.0.1:{free_port()}/mcp"
    args = ("export", "--namespace", "user:1", "--url", nowhere, "--token", "t", "--debug")

    result = hindsight(*args, env=server.env, cwd=server.cwd)

    assert result.returncode == 1
    assert "Traceback" in result.stderr
    assert result.stderr.splitlines()[-1] == f"error: cannot reach {nowhere}: connection refused"


def test_maintain_while_the_server_holds_the_data_directory_fails_with_one_line(server: Server) -> None:
    result = hindsight("maintain", env=server.env, cwd=server.cwd)

    assert result.returncode == 1
    data_dir = Path(server.env["HINDSIGHT_DATA_DIR"]).resolve()
    assert error_line(result).startswith(f"error: the data directory {data_dir} is in use by a running server (")


def test_direct_export_while_the_server_holds_the_data_directory_points_to_url(server: Server) -> None:
    result = hindsight("export", "--namespace", "user:1", "--tenant", "acme", env=server.env, cwd=server.cwd)

    assert result.returncode == 1
    assert error_line(result).endswith("is in use by a running server (stop it or use --url)")


def test_a_second_server_on_the_same_data_directory_fails_with_one_line(server: Server) -> None:
    result = hindsight("serve", env=server.env | {"HINDSIGHT_PORT": str(free_port())}, cwd=server.cwd)

    assert result.returncode == 1
    assert "is in use by a running server" in error_line(result)


def test_an_admin_export_through_the_url_succeeds(server: Server) -> None:
    admin = token(server, "--admin")

    result = hindsight(
        "export", "--namespace", "user:1", "--url", server.url, "--token", admin, env=server.env, cwd=server.cwd
    )

    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == ["exported 0 memories and 0 sessions from user:1"]


def test_token_without_any_namespace_is_refused_as_a_usage_error(tmp_path: Path) -> None:
    result = hindsight(
        "token", "--tenant", "acme", "--sub", "x", env=clean_env(HINDSIGHT_DATA_DIR=str(tmp_path)), cwd=tmp_path
    )

    assert result.returncode == 2
    assert "--read" in error_line(result) and "--admin" in result.stderr
    assert result.stdout == ""


def test_token_without_a_secret_fails_naming_where_it_looked_and_creates_none(tmp_path: Path) -> None:
    result = hindsight("token", "--tenant", "acme", "--sub", "x", "--admin", env=clean_env(), cwd=tmp_path)

    assert result.returncode == 1
    assert result.stdout == ""
    assert error_line(result) == (
        "error: no JWT secret to sign the token with: HINDSIGHT_JWT_SECRET is not set and "
        f"{tmp_path.resolve()}/data/jwt-secret does not exist (HINDSIGHT_DATA_DIR is not set: the default ./data "
        f"of {tmp_path.resolve()}). Start `hindsight serve` once with these settings to create it (a server started "
        "in another directory uses its own ./data), or set HINDSIGHT_DATA_DIR to the server's data directory, or "
        "HINDSIGHT_JWT_SECRET to its secret"
    )
    assert list(tmp_path.iterdir()) == []  # no ./data, no jwt-secret


def test_token_names_the_data_directory_setting_it_read(tmp_path: Path) -> None:
    env = clean_env(HINDSIGHT_DATA_DIR="elsewhere")

    result = hindsight("token", "--tenant", "acme", "--sub", "x", "--admin", env=env, cwd=tmp_path)

    assert result.returncode == 1
    line = error_line(result)
    assert f"{tmp_path.resolve()}/elsewhere/jwt-secret does not exist (HINDSIGHT_DATA_DIR=elsewhere)" in line
    assert not (tmp_path / "elsewhere").exists()


def test_serve_on_a_port_in_use_fails_before_printing_a_token_naming_hindsight_port(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        env = clean_env(HINDSIGHT_DATA_DIR=str(tmp_path / "data"), HINDSIGHT_PORT=str(port))

        result = hindsight("serve", "--print-token", env=env, cwd=tmp_path)

    assert result.returncode == 1
    assert result.stdout == ""  # no banner, no token
    assert error_line(result) == (
        f"error: cannot listen on 127.0.0.1:{port}: the port is already in use (another server running?); choose "
        f"a free port: set HINDSIGHT_PORT (e.g. HINDSIGHT_PORT={port + 1} hindsight serve, or make run "
        f"PORT={port + 1})"
    )


def test_make_run_passes_port_as_hindsight_port() -> None:
    if shutil.which("make") is None:
        missing("check the Makefile", "make is not installed (apt-get install make); .ci/run does")
    repo = Path(__file__).resolve().parents[3]
    dry = ["make", "--no-print-directory", "-n", "-o", ".venv/.installed", "run"]
    env = {k: v for k, v in os.environ.items() if k != "PORT"}

    with_port = subprocess.run([*dry, "PORT=9123"], cwd=repo, env=env, capture_output=True, text=True, timeout=60)
    without = subprocess.run(dry, cwd=repo, env=env | {"PORT": "3000"}, capture_output=True, text=True, timeout=60)

    assert with_port.stdout.splitlines()[-1] == "HINDSIGHT_PORT=9123 .venv/bin/hindsight serve --print-token"
    assert without.stdout.splitlines()[-1] == ".venv/bin/hindsight serve --print-token"  # PORT of the environment


def test_an_invalid_setting_fails_with_one_line_naming_the_variable(tmp_path: Path) -> None:
    env = clean_env(HINDSIGHT_DATA_DIR=str(tmp_path), HINDSIGHT_PORT="eighty")

    result = hindsight("token", "--tenant", "acme", "--sub", "x", "--admin", env=env, cwd=tmp_path)

    assert result.returncode == 1
    assert error_line(result).startswith("error: invalid setting HINDSIGHT_PORT: ")


def test_a_bad_flag_on_a_subcommand_prints_that_subcommands_usage_and_the_error(tmp_path: Path) -> None:
    result = hindsight("serve", "--prot", "9000", env=clean_env(), cwd=tmp_path)

    assert result.returncode == 2
    assert result.stderr.startswith("usage: hindsight serve ")
    assert result.stderr.splitlines()[-1] == "error: hindsight serve: unrecognized arguments: --prot 9000"


def test_a_missing_option_of_a_nested_subcommand_prints_its_usage(tmp_path: Path) -> None:
    result = hindsight("eval", "locomo", env=clean_env(), cwd=tmp_path)

    assert result.returncode == 2
    assert result.stderr.startswith("usage: hindsight eval locomo ")
    assert re.fullmatch(r"error: hindsight eval locomo: .*--data.*", result.stderr.splitlines()[-1])


def test_version_prints_the_package_version(tmp_path: Path) -> None:
    result = hindsight("--version", env=clean_env(), cwd=tmp_path)

    assert result.returncode == 0
    assert result.stdout.strip() == VERSION


def test_every_option_of_every_command_has_help_text() -> None:
    missing = [
        f"{parser.prog} {'/'.join(action.option_strings) or action.dest}"
        for parser in parsers(build_parser())
        for action in parser._actions
        if not isinstance(action, argparse._HelpAction)
        and (not action.help or action.help == argparse.SUPPRESS or not action.help.strip())
    ]
    assert missing == []


def test_the_parser_tree_covers_every_command() -> None:
    progs = {parser.prog for parser in parsers(build_parser())}
    expected = {
        "serve",
        "token",
        "export",
        "import",
        "purge",
        "select",
        "forget-selected",
        "erase",
        "maintain",
        "reembed",
        "eval",
        "eval locomo",
        "eval memorybank",
        "eval cases",
    }
    assert progs == {"hindsight"} | {f"hindsight {name}" for name in expected}


def test_the_error_line_looks_through_nested_exception_groups_past_cancellations() -> None:
    inner = BaseExceptionGroup("task group", [asyncio.CancelledError(), UsageError("--url needs --token")])
    wrapped = BaseExceptionGroup("outer task group", [inner])

    assert describe(wrapped) == ("--url needs --token", 2)
    assert describe(ExceptionGroup("one", [CommandFailed("boom")])) == ("boom", 1)

"""The `hindsight` command: `serve` runs the gateway with uvicorn, `token` mints a token for the same settings,
and the admin (`gateway/cli/admin.py`) and evaluation (`gateway/cli/eval.py`) commands.

Both read `Settings()` from the environment, so a token minted with `hindsight token` is accepted by a server
started with the same environment (the embedded default shares the dev secret in the data directory). Only
`serve` creates that dev secret; `token` without a configured secret fails saying where it looked. `serve`
checks that it can listen on its port before it prints a token.

Every command logs JSON lines to stderr (`ops.logging`) and fails with one line, `error: ...`, exit 2 for a
usage error and 1 for a failure (`gateway.cli.errors.describe`); `--debug` (or `HINDSIGHT_LOG_LEVEL=debug`)
adds debug logs and the traceback. A wrong option prints the usage of the subcommand it was given to.
"""

from __future__ import annotations

import argparse
import errno
import json
import logging
import os
import socket
import sys
import traceback
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import NoReturn

from pydantic import ValidationError

from gateway.cli.admin import add_admin_commands, data_dir_in_use
from gateway.cli.errors import EXIT_USAGE, CommandFailed, UsageError, describe
from gateway.cli.eval import add_eval_commands
from gateway.cli.reembed import add_reembed_command
from gateway.tools.reembed import SCOPE_OPERATOR
from ops.allocator import allocator_in_use, reexec_with_jemalloc
from ops.config import Settings
from ops.logging import configure_logging
from ops.version import VERSION
from tenancy import SCOPE_READ, SCOPE_WRITE, mint_token
from tenancy.keys import SECRET_FILENAME, load_dev_secret

QUIET_LOGGERS = ("httpx", "httpx2", "httpcore", "httpcore2")  # one INFO line per HTTP request otherwise
# the MCP SDK logs "Terminating session: None" at INFO for every stateless request: a line per call of no use
SERVE_QUIET_LOGGERS = ("mcp.server.streamable_http",)

DEV_TENANT = "dev"
DEV_SUBJECT = "dev-agent"
DEV_NAMESPACES = ["user:dev", "shared:dev-team"]


def _csv(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def _secret(settings: Settings) -> str:
    from gateway.web.app import jwt_settings

    return jwt_settings(settings).secret


def _existing_secret(settings: Settings) -> str:
    """The secret `hindsight token` signs with: the configured one, or the dev secret a server already created in
    the data directory. Never a new one: a server would refuse the tokens it signs."""
    auth = settings.auth
    keys = (auth.jwt_secret, auth.jwt_public_key, auth.jwt_jwks_url)  # as `jwt_settings` reads them
    if all(key is None for key in keys) and load_dev_secret(settings.backends.data_dir) is None:
        raise CommandFailed(_no_secret_message(settings))
    return _secret(settings)


def _no_secret_message(settings: Settings) -> str:
    path = settings.backends.data_dir.resolve() / SECRET_FILENAME
    environ = {name.upper(): value for name, value in os.environ.items() if value}
    if "data_dir" not in settings.backends.model_fields_set:
        source = f"HINDSIGHT_DATA_DIR is not set: the default ./data of {Path.cwd()}"
    elif "HINDSIGHT_DATA_DIR" in environ:
        source = f"HINDSIGHT_DATA_DIR={environ['HINDSIGHT_DATA_DIR']}"
    else:
        source = f"HINDSIGHT_DATA_DIR={settings.backends.data_dir} from {Path('.env').resolve()}"
    return (
        f"no JWT secret to sign the token with: HINDSIGHT_JWT_SECRET is not set and {path} does not exist "
        f"({source}). Start `hindsight serve` once with these settings to create it (a server started in another "
        "directory uses its own ./data), or set HINDSIGHT_DATA_DIR to the server's data directory, or "
        "HINDSIGHT_JWT_SECRET to its secret"
    )


def mint_from_args(settings: Settings, args: argparse.Namespace) -> str:
    read, write = _csv(args.read), _csv(args.write)
    if not (read or write or args.admin or args.operator):
        raise UsageError("a token needs namespaces: pass --read and/or --write (comma-separated), or --admin")
    try:
        return _mint(settings, args, read, write)
    except ValueError as exc:  # a malformed namespace, tenant or ttl
        raise UsageError(str(exc)) from None


def _mint(settings: Settings, args: argparse.Namespace, read: list[str], write: list[str]) -> str:
    return mint_token(
        _existing_secret(settings),
        tenant=args.tenant,
        subject=args.sub,
        read=read,
        write=write,
        admin=args.admin,
        scopes=[SCOPE_READ, SCOPE_WRITE, SCOPE_OPERATOR] if args.operator else None,
        ttl_seconds=args.ttl,
        issuer=settings.auth.jwt_issuer,
        audience=settings.auth.jwt_audience,
    )


def client_snippets(url: str, token: str) -> str:
    cursor = {"mcpServers": {"hindsight": {"url": url, "headers": {"Authorization": f"Bearer {token}"}}}}
    return "\n".join(
        [
            "Claude Code:",
            f'  claude mcp add --transport http hindsight {url} --header "Authorization: Bearer {token}"',
            "",
            "Cursor (~/.cursor/mcp.json):",
            "  " + json.dumps(cursor),
            "",
            "Python (mcp SDK; save as a file and run it with .venv/bin/python):",
            *("  " + line for line in python_snippet(url, repr(token)).splitlines()),
        ]
    )


def python_snippet(url: str, token: str) -> str:
    """A Python script that writes and recalls a memory through the `mcp` SDK (`token`: a Python expression);
    the README shows it with the token read from the environment. Both are run by the tests."""
    return "\n".join(
        [
            "import asyncio",
            "import os",
            "",
            "import httpx2",
            "from mcp import Client",
            "from mcp.client.streamable_http import streamable_http_client",
            "",
            "",
            "async def main() -> None:",
            f"    token = {token}",
            '    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"})',
            f'    async with http, Client(streamable_http_client("{url}", http_client=http)) as client:',
            '        await client.call_tool("write_memory", {"content": "The user prefers short answers"})',
            '        hits = await client.call_tool("recall_memory", {"query": "how should I answer?"})',
            '        print(hits.structured_content["memories"][0]["content"])',
            "",
            "",
            "asyncio.run(main())",
        ]
    )


def check_port_free(host: str, port: int) -> None:
    """Fail before anything is printed when `host:port` cannot be listened on (binding as uvicorn does, with
    SO_REUSEADDR, so a port left in TIME_WAIT by a stopped server counts as free)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        with socket.create_server((host, port), family=family):
            pass
    except OSError as exc:
        other = port + 1 if port < 65535 else port - 1
        choose = f"set HINDSIGHT_PORT (e.g. HINDSIGHT_PORT={other} hindsight serve, or make run PORT={other})"
        if exc.errno == errno.EADDRINUSE:
            raise CommandFailed(
                f"cannot listen on {address}: the port is already in use (another server running?); "
                f"choose a free port: {choose}"
            ) from None
        why = exc.strerror or type(exc).__name__
        raise CommandFailed(f"cannot listen on {address}: {why}; check HINDSIGHT_HOST, or {choose}") from None


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from gateway.web.app import create_app
    from gateway.web.connections import guarded_protocol

    settings = Settings()
    if args.host:
        settings.serving.host = args.host
    if args.port:
        settings.serving.port = args.port
    if args.debug:
        settings.observability.log_level = "debug"
    reexec_with_jemalloc(settings.serving.jemalloc)  # returns unless it replaces this process (ops/allocator.py)
    if data_dir_in_use(settings):
        where = settings.backends.data_dir.resolve()
        hint = "stop it, or give this one another HINDSIGHT_DATA_DIR"
        raise CommandFailed(f"the data directory {where} is in use by a running server ({hint})")
    check_port_free(settings.serving.host, settings.serving.port)
    if args.print_token:
        token = mint_token(
            _secret(settings),
            tenant=DEV_TENANT,
            subject=DEV_SUBJECT,
            read=DEV_NAMESPACES,
            write=DEV_NAMESPACES,
            ttl_seconds=30 * 24 * 3600,
            issuer=settings.auth.jwt_issuer,
            audience=settings.auth.jwt_audience,
        )
        print(f"\nhindsight: MCP endpoint {settings.mcp_url}")
        print(f"dev token (tenant {DEV_TENANT}, namespaces {', '.join(DEV_NAMESPACES)}, 30 days):\n\n  {token}\n")
        print(client_snippets(settings.mcp_url, token) + "\n", flush=True)
    logging.getLogger("hindsight.serve").info("memory allocator: %s", allocator_in_use())
    try:
        uvicorn.run(
            create_app(settings, settle_interpreter=True),
            host=settings.serving.host,
            port=settings.serving.port,
            log_level=settings.observability.log_level,
            log_config=None,  # keep the JSON handler of `main`
            proxy_headers=True,
            forwarded_allow_ips=settings.serving.forwarded_allow_ips,
            http=guarded_protocol(settings),  # header and body deadlines, connection caps (gateway/web/connections.py)
            ws="none",  # no WebSocket upgrades: a connection stays the guarded protocol's
        )
    except SystemExit as exc:  # uvicorn exits when the port is taken or the app's startup fails
        if exc.code:
            address = f"{settings.serving.host}:{settings.serving.port}"
            raise CommandFailed(
                f"the server did not start on {address} (the log line above says why; "
                "HINDSIGHT_HOST and HINDSIGHT_PORT choose the address)"
            ) from None
        raise
    return 0


def cmd_token(args: argparse.Namespace) -> int:
    print(mint_from_args(Settings(), args))
    return 0


class CliParser(argparse.ArgumentParser):
    """Usage errors print the usage of the (sub)command they belong to, then one `error:` line; exit 2."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"error: {self.prog}: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = CliParser(prog="hindsight", description="Multi-tenant memory gateway for LLM agents.")
    parser.add_argument("--version", action="version", version=VERSION, help="print the version and exit")
    parser.add_argument("--debug", action="store_true", help="debug logs, and a traceback with an error")
    sub = parser.add_subparsers(dest="command", required=True, help="the command to run")

    serve = sub.add_parser("serve", help="run the gateway (settings from HINDSIGHT_* variables)")
    serve.add_argument("--host", help="bind address (default HINDSIGHT_HOST or 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (default HINDSIGHT_PORT or 8080)")
    serve.add_argument("--print-token", action="store_true", help="print a dev token and client snippets first")
    serve.set_defaults(func=cmd_serve)

    token = sub.add_parser("token", help="mint a token signed with the configured key")
    token.add_argument("--tenant", required=True, help="the tenant whose namespaces the token may use")
    token.add_argument("--sub", required=True, help="subject: the agent's id")
    token.add_argument("--read", default="", help="comma-separated readable namespaces")
    token.add_argument("--write", default="", help="comma-separated writable namespaces")
    token.add_argument("--admin", action="store_true", help="grant memory:admin (every namespace of the tenant)")
    token.add_argument("--operator", action="store_true", help="grant hindsight:operator (reembed, every tenant)")
    token.add_argument("--ttl", type=int, default=86_400, help="lifetime in seconds (default 86400)")
    token.set_defaults(func=cmd_token)

    add_admin_commands(sub)
    add_reembed_command(sub)
    add_eval_commands(sub)
    for command in commands(parser):
        command.add_argument(
            "--debug", action="store_true", default=argparse.SUPPRESS, help="debug logs, and a traceback with an error"
        )
        command.set_defaults(command_parser=command)
    return parser


def parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    """This parser and every subcommand's, depth first."""
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                yield from parsers(child)


def commands(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """The parsers that run something (no subcommands of their own): `serve`, `eval locomo`, ..."""
    return [
        p
        for p in parsers(parser)
        if p is not parser and not any(isinstance(a, argparse._SubParsersAction) for a in p._actions)
    ]


def parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """Like `parse_args`, except that an unknown option is reported by the subcommand that was given it."""
    args, extra = parser.parse_known_args(argv)
    if extra:
        owner: argparse.ArgumentParser = getattr(args, "command_parser", parser)
        owner.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def log_level(args: argparse.Namespace) -> str:
    if args.debug:
        return "debug"
    try:
        return Settings().observability.log_level
    except ValidationError:  # another setting is invalid: the command reports it as its error line
        return "debug" if os.environ.get("HINDSIGHT_LOG_LEVEL", "").lower() == "debug" else "info"


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(build_parser(), argv)
    level = log_level(args)
    quiet = () if level == "debug" else SERVE_QUIET_LOGGERS if args.command == "serve" else QUIET_LOGGERS
    configure_logging(level, quiet=quiet)
    try:
        result: int = args.func(args)
    except SystemExit:
        raise
    except BaseException as exc:
        line, code = describe(exc)
        if level == "debug":
            traceback.print_exception(exc, file=sys.stderr)
        print(f"error: {line}", file=sys.stderr, flush=True)
        return code
    return result


if __name__ == "__main__":
    raise SystemExit(main())

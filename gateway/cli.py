"""The `hindsight` command: `serve` runs the gateway with uvicorn, `token` mints a token for the same settings.

Both read `Settings()` from the environment, so a token minted with `hindsight token` is accepted by a server
started with the same environment (the embedded default shares the dev secret in the data directory).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from gateway.admin_cli import add_admin_commands
from gateway.eval_cli import add_eval_commands
from ops.config import Settings
from ops.logging import configure_logging
from tenancy import mint_token

DEV_TENANT = "dev"
DEV_SUBJECT = "dev-agent"
DEV_NAMESPACES = ["user:dev", "shared:dev-team"]


def _csv(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def _secret(settings: Settings) -> str:
    from gateway.app import jwt_settings

    return jwt_settings(settings).secret


def mint_from_args(settings: Settings, args: argparse.Namespace) -> str:
    return mint_token(
        _secret(settings),
        tenant=args.tenant,
        subject=args.sub,
        read=_csv(args.read),
        write=_csv(args.write),
        admin=args.admin,
        ttl_seconds=args.ttl,
        issuer=settings.jwt_issuer,
        audience=settings.jwt_audience,
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


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from gateway.app import create_app

    settings = Settings()
    if args.host:
        settings.host = args.host
    if args.port:
        settings.port = args.port
    if args.print_token:
        token = mint_token(
            _secret(settings),
            tenant=DEV_TENANT,
            subject=DEV_SUBJECT,
            read=DEV_NAMESPACES,
            write=DEV_NAMESPACES,
            ttl_seconds=30 * 24 * 3600,
            issuer=settings.jwt_issuer,
            audience=settings.jwt_audience,
        )
        print(f"\nhindsight: MCP endpoint {settings.mcp_url}")
        print(f"dev token (tenant {DEV_TENANT}, namespaces {', '.join(DEV_NAMESPACES)}, 30 days):\n\n  {token}\n")
        print(client_snippets(settings.mcp_url, token) + "\n", flush=True)
    configure_logging(settings.log_level)
    uvicorn.run(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level,
        log_config=None,  # keep the JSON handler configured above
        proxy_headers=True,
    )
    return 0


def cmd_token(args: argparse.Namespace) -> int:
    settings = Settings()
    try:
        print(mint_from_args(settings, args))
    except ValueError as exc:
        print(f"hindsight token: {exc}", file=sys.stderr)
        return 2
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hindsight", description="Multi-tenant memory gateway for LLM agents.")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the gateway (settings from HINDSIGHT_* variables)")
    serve.add_argument("--host", help="bind address (default HINDSIGHT_HOST or 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (default HINDSIGHT_PORT or 8080)")
    serve.add_argument("--print-token", action="store_true", help="print a dev token and client snippets first")
    serve.set_defaults(func=cmd_serve)

    token = sub.add_parser("token", help="mint a token signed with the configured key")
    token.add_argument("--tenant", required=True)
    token.add_argument("--sub", required=True, help="subject: the agent's id")
    token.add_argument("--read", default="", help="comma-separated readable namespaces")
    token.add_argument("--write", default="", help="comma-separated writable namespaces")
    token.add_argument("--admin", action="store_true", help="grant memory:admin (every namespace of the tenant)")
    token.add_argument("--ttl", type=int, default=86_400, help="lifetime in seconds (default 86400)")
    token.set_defaults(func=cmd_token)

    add_admin_commands(sub)
    add_eval_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    raise SystemExit(main())

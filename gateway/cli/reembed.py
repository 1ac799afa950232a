"""`hindsight reembed`: move the memories to another embedding model without downtime (`memory.reembed.migration`).

    hindsight reembed --to use --url http://127.0.0.1:8080/mcp --token $OPERATOR_TOKEN   # a running gateway
    hindsight reembed --to use                                                            # offline
    hindsight reembed --status | --drop-old  [--url ... --token ...]

With `--url` and `--token` (a token with `hindsight:operator`, from `hindsight token --operator`) it starts the
migration in the running gateway through the `reembed` tool and follows it to its end, a progress line at a
time. Without them it opens the data directory (or the Qdrant server) of the current settings itself and runs
the migration in-process; the embedded engine's data directory must not be in use by a running server.
The final status is printed as JSON on stdout; a failed migration exits 1 with its reason.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from gateway.cli.admin import direct_settings, run_async
from gateway.cli.errors import CommandFailed, UsageError, http_client, tool_body
from memory.embedders import EMBEDDERS

POLL_SECONDS = 10.0  # each status call waits this long for the migration to end


def _action(args: argparse.Namespace) -> str:
    chosen = [name for name, on in (("start", args.to), ("status", args.status), ("drop_old", args.drop_old)) if on]
    if len(chosen) != 1:
        raise UsageError("give exactly one of --to EMBEDDER, --status, --drop-old")
    return chosen[0]


def _progress(status: dict[str, Any]) -> str:
    return (
        f"reembed {status.get('from_model')} -> {status.get('to_model') or status.get('to_embedder')}: "
        f"{status.get('phase') or status.get('state')}, {status.get('copied', 0)} copied, "
        f"{status.get('caught_up', 0)} caught up in {status.get('passes', 0)} passes"
    )


def _finish(status: dict[str, Any]) -> int:
    print(json.dumps(status, indent=2))
    if status.get("state") == "failed":
        raise CommandFailed(f"the migration failed and nothing was switched: {status.get('error')}")
    return 0


async def _online(args: argparse.Namespace, action: str) -> int:
    if not args.token:
        raise UsageError("--url needs --token (a token with hindsight:operator: `hindsight token --operator`)")
    async with (
        http_client(args.token, timeout=POLL_SECONDS + 60) as http,
        Client(streamable_http_client(args.url, http_client=http)) as client,
    ):

        async def reembed(arguments: dict[str, Any]) -> dict[str, Any]:
            return tool_body("reembed", await client.call_tool("reembed", arguments))

        if action == "drop_old":
            body = await reembed({"action": "drop_old"})
            print(f"dropped {', '.join(body['dropped']) or 'nothing'}", file=sys.stderr)
            return _finish(body)
        status = await reembed({"action": action, **({"to": args.to} if action == "start" else {})})
        while action == "start" and status["state"] == "running":
            print(_progress(status), file=sys.stderr, flush=True)
            status = await reembed({"action": "status", "wait_seconds": POLL_SECONDS})
        return _finish(status)


async def _offline(args: argparse.Namespace, action: str) -> int:
    from gateway.services.assembly import open_runtime

    settings = direct_settings("use --url and --token to migrate inside the running gateway")
    async with open_runtime(settings) as runtime:
        reembedder = runtime.reembedder
        assert reembedder is not None  # open_runtime always builds one
        if action == "start":
            print(f"reembed: copying every memory to {args.to} (offline)", file=sys.stderr, flush=True)
            return _finish(await reembedder.run(args.to))
        if action == "drop_old":
            dropped = await reembedder.drop_old()
            print(f"dropped {', '.join(dropped) or 'nothing'}", file=sys.stderr)
        return _finish(await reembedder.report())


async def reembed(args: argparse.Namespace) -> int:
    action = _action(args)
    return await (_online(args, action) if args.url else _offline(args, action))


def add_reembed_command(sub: Any) -> None:
    parser = sub.add_parser("reembed", help="move every memory to another embedding model without downtime (operator)")
    parser.add_argument("--to", choices=EMBEDDERS, help="start: the embedder to move to")
    parser.add_argument("--status", action="store_true", help="show the state of the last migration")
    parser.add_argument("--drop-old", action="store_true", help="remove the old index once switched")
    parser.add_argument("--url", help="gateway MCP URL, e.g. http://127.0.0.1:8080/mcp (needs --token)")
    parser.add_argument("--token", help="with --url: a token with hindsight:operator (`hindsight token --operator`)")
    parser.set_defaults(func=lambda a: run_async(reembed, a))

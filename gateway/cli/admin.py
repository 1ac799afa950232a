"""`hindsight export|import|purge|maintain`: namespace lifecycle from the command line, through the admin MCP tools.

With `--url` and `--token` (an admin token) it talks to a running gateway. Without them it opens the data
directory itself (direct settings: the server must be stopped, since the embedded store allows one process)
and calls the same tools in-process with a short-lived admin token minted from the configured secret.
Failures raise the errors of `gateway.cli.errors`; `hindsight` turns them into one `error: ...` line.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import logging
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any, TextIO

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from gateway.cli.errors import CommandFailed, UsageError, http_client, tool_body
from gateway.cli.progress import progress_bar
from memory.stores.active_index import read_pointer
from ops.config import Settings
from tenancy import mint_token

__all__ = ["CommandFailed", "add_admin_commands", "data_dir_in_use", "run_async"]

logger = logging.getLogger("hindsight.cli")
IMPORT_BATCH = 200
SESSION_BATCH = 20  # exported sessions per import_events call


PAGE = 200
IN_USE_HINT = "stop it or use --url"


def data_dir_in_use(settings: Settings) -> bool:
    """True when another process (a running server) holds the embedded store's lock in this data directory.
    Checked before the runtime opens (and loads the embedding model) to say so plainly; the store's own lock
    (`memory/stores/edge.py`) still decides."""
    if settings.backends.qdrant_url:
        return False
    active = read_pointer(settings.backends.data_dir).directory  # the active index (a re-embedding may have moved it)
    lock = settings.backends.data_dir / active / "LOCK"
    try:
        fd = os.open(lock, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing the descriptor releases a lock taken here
    return False


def direct_settings(hint: str) -> Settings:
    settings = Settings()
    if data_dir_in_use(settings):
        where = settings.backends.data_dir.resolve()
        raise CommandFailed(f"the data directory {where} is in use by a running server ({hint})")
    return settings


@asynccontextmanager
async def admin_client(args: argparse.Namespace) -> AsyncIterator[Client]:
    if args.url:
        if not args.token:
            raise UsageError("--url needs --token (an admin token)")
        async with (
            http_client(args.token, timeout=120) as http,
            Client(streamable_http_client(args.url, http_client=http)) as client,
        ):
            yield client
        return
    if not args.tenant:
        raise UsageError("direct mode (no --url) needs --tenant")
    from gateway.web.app import create_app, jwt_settings

    settings = direct_settings(IN_USE_HINT)
    token = mint_token(
        jwt_settings(settings).secret,
        tenant=args.tenant,
        subject="hindsight-cli",
        read=[],
        write=[],
        admin=True,
        ttl_seconds=3600,
        issuer=settings.auth.jwt_issuer,
        audience=settings.auth.jwt_audience,
    )
    app = create_app(settings)
    base = "http://127.0.0.1:8080"
    async with app.router.lifespan_context(app):
        http = http_client(token, transport=httpx2.ASGITransport(app=app), base_url=base)
        async with http, Client(streamable_http_client(f"{base}/mcp", http_client=http)) as client:
            yield client


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return tool_body(tool, await client.call_tool(tool, arguments))


async def pages(client: Client, tool: str, arguments: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
    """Every answer of a paged tool, calling it again with each `next_cursor` until it gives none."""
    cursor = None
    while True:
        page = await call(client, tool, {**arguments, "cursor": cursor})
        yield page
        cursor = page["next_cursor"]
        if cursor is None:
            return


@contextmanager
def output(path: str | None) -> Iterator[TextIO]:
    """The file at `path` to write, else stdout (left open)."""
    if not path:
        yield sys.stdout
        return
    with open(path, "w", encoding="utf-8") as out:
        yield out


async def export_pages(client: Client, tool: str, arguments: dict[str, Any], items: str, out: TextIO, bar: Any) -> int:
    """Every page of an export tool written as JSONL lines (one per item), following `next_cursor`."""
    count = 0
    async for page in pages(client, tool, arguments):
        for item in page[items]:
            out.write(json.dumps(item, ensure_ascii=False) + "\n")
        count += len(page[items])
        bar.update(len(page[items]))
    return count


async def export_namespace(args: argparse.Namespace) -> int:
    namespace = {"namespace": args.namespace}
    with output(args.out) as out:
        async with admin_client(args) as client:
            with progress_bar(None, f"export {args.namespace}", "memory") as bar:
                count = await export_pages(client, "export_memories", namespace | {"limit": PAGE}, "records", out, bar)
            with progress_bar(None, f"export {args.namespace} sessions", "session") as bar:
                # then each session with its events and archive: one {"session", "events"} line
                sessions = await export_pages(client, "export_events", namespace, "sessions", out, bar)
    print(f"exported {count} memories and {sessions} sessions from {args.namespace}", file=sys.stderr)
    return 0


def is_session_line(line: dict[str, Any]) -> bool:
    """A line of `export_events` (a session with its events), not a memory record."""
    return "session" in line and "content" not in line


def read_records(path: str) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise CommandFailed(f"{path}:{number}: not JSON ({exc.msg})") from None
            if not isinstance(record, dict):
                raise CommandFailed(f"{path}:{number}: each line must be a JSON object")
            records.append(record)
    return records


async def import_namespace(args: argparse.Namespace) -> int:
    lines = read_records(args.file)
    records = [line for line in lines if not is_session_line(line)]
    sessions = [line for line in lines if is_session_line(line)]
    imported = skipped = 0
    async with admin_client(args) as client:
        with progress_bar(len(records), f"import {args.namespace}", "memory") as bar:
            for start in range(0, len(records), IMPORT_BATCH):
                batch = records[start : start + IMPORT_BATCH]
                body = await call(client, "import_memories", {"namespace": args.namespace, "records": batch})
                imported += body["imported"]
                skipped += body["skipped"]
                bar.update(len(batch))
        events = 0
        for start in range(0, len(sessions), SESSION_BATCH):
            batch = sessions[start : start + SESSION_BATCH]
            body = await call(client, "import_events", {"namespace": args.namespace, "sessions": batch})
            events += body["events"]
    print(
        f"imported {imported}, skipped {skipped} (already present) into {args.namespace}; "
        f"{len(sessions)} sessions with {events} new events",
        file=sys.stderr,
    )
    return 0


async def purge_namespace(args: argparse.Namespace) -> int:
    if args.yes is not True and args.confirm != args.namespace:
        raise UsageError("purge is permanent: pass --confirm NAMESPACE (the same name) or --yes")
    async with admin_client(args) as client:
        body = await call(client, "purge_namespace", {"namespace": args.namespace, "confirm": args.namespace})
    print(json.dumps(body["receipt"], indent=2))  # what was removed per store, when, by whom: keep it
    print(
        f"purged {body['deleted']} memories and {body['events_deleted']} events from {args.namespace}", file=sys.stderr
    )
    return 0


def criteria(args: argparse.Namespace) -> dict[str, Any]:
    """The selection `select` and `forget-selected` name (`gateway.admin.selection.Criteria`)."""
    chosen: dict[str, Any] = {"written_by": args.written_by, "tag": args.tag}
    if args.metadata is not None:
        key, sep, value = args.metadata.partition("=")
        if not sep:
            raise UsageError("--metadata takes KEY=VALUE")
        chosen |= {"metadata_key": key, "metadata_value": value}
    return {name: value for name, value in chosen.items() if value is not None}


async def select_memories(args: argparse.Namespace) -> int:
    """Every memory the selection names, in every namespace of the tenant, as JSONL records."""
    with output(args.out) as out:
        async with admin_client(args) as client:
            with progress_bar(None, "select", "memory") as bar:
                arguments = {"criteria": criteria(args), "limit": PAGE}
                count = await export_pages(client, "select_memories", arguments, "records", out, bar)
    print(f"selected {count} memories", file=sys.stderr)
    return 0


async def forget_selected(args: argparse.Namespace) -> int:
    """Forget (restorably) every memory the selection names, call after call until the tenant is read."""
    forgotten: dict[str, int] = {}
    already = 0
    async with admin_client(args) as client:
        async for body in pages(client, "forget_selected_memories", {"criteria": criteria(args)}):
            for namespace, count in body["forgotten"].items():
                forgotten[namespace] = forgotten.get(namespace, 0) + count
            already += body["already_forgotten"]
    print(json.dumps({"forgotten": forgotten, "already_forgotten": already}, indent=2))
    return 0


async def erase_selected(args: argparse.Namespace) -> int:
    """Erase (permanently) every memory the selection names from every store; print the receipt."""
    chosen = criteria(args)
    first = next((chosen[k] for k in ("written_by", "tag", "metadata_value") if k in chosen), None)
    if args.yes is not True and args.confirm != first:
        raise UsageError("erase is permanent: pass --confirm with the first criterion's value again, or --yes")
    async with admin_client(args) as client:
        body = await call(client, "erase_selected_memories", {"criteria": chosen, "confirm": first})
    print(json.dumps(body["receipt"], indent=2))  # what was removed per store, when, by whom: keep it
    return 0


async def maintain(args: argparse.Namespace) -> int:
    """One maintenance pass (expiry, eviction, consolidation; idle sessions ended and extracted, old events
    dropped) on the data directory of these settings."""
    from gateway.services.assembly import open_runtime
    from gateway.services.maintenance import maintain_all, sweep_sessions

    settings = direct_settings("stop it first; a running server maintains its data directory itself")
    async with open_runtime(settings) as runtime:
        tenants = [args.tenant] if args.tenant else None
        reports = await maintain_all(runtime, tenants)
        sessions = await sweep_sessions(runtime, tenants)
    logger.info("maintenance pass done: %d tenants", len(reports))
    print(json.dumps({**reports, "_sessions": sessions}, indent=2))
    return 0


Arguments = Callable[[argparse.ArgumentParser], None]  # adds some of a command's arguments


def add_admin_commands(sub: Any) -> None:
    def common(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--namespace", required=True, help="the namespace, e.g. user:42 or team:ops")
        connection(parser)

    def connection(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--url", help="gateway MCP URL, e.g. http://127.0.0.1:8080/mcp (needs --token)")
        parser.add_argument("--token", help="with --url: an admin token (memory:admin), e.g. from `hindsight token`")
        parser.add_argument("--tenant", help="the tenant, in direct mode (no --url; the server must be stopped)")

    def command(
        name: str, help: str, run: Callable[[argparse.Namespace], Awaitable[int]], *arguments: Arguments
    ) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = sub.add_parser(name, help=help)
        for add in arguments:
            add(parser)
        parser.set_defaults(func=lambda a: run_async(run, a))
        return parser

    def out(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--out", help="file to write (default: stdout)")

    def confirmation(confirm: str) -> Arguments:
        def add(parser: argparse.ArgumentParser) -> None:
            parser.add_argument("--confirm", help=confirm)
            parser.add_argument("--yes", action="store_true", help="skip the confirmation")

        return add

    def selection(parser: argparse.ArgumentParser) -> None:
        connection(parser)
        parser.add_argument("--written-by", help="the subject that wrote them")
        parser.add_argument("--tag", help="a tag they carry")
        parser.add_argument("--metadata", help="KEY=VALUE: a metadata value they carry (compared as a string)")

    command("export", "export a namespace to JSONL (admin)", export_namespace, common, out)
    importer = command("import", "import JSONL into a namespace, re-embedding (admin)", import_namespace, common)
    importer.add_argument("file", help="JSONL file from `hindsight export`")
    purge = confirmation("repeat the namespace name")
    command("purge", "permanently delete a namespace (admin)", purge_namespace, common, purge)
    listed = "list what a subject wrote (or a tag, a metadata value) in every namespace"
    command("select", listed, select_memories, selection, out)
    command("forget-selected", "forget (restorable) what `select` lists, with its copies", forget_selected, selection)
    erase = confirmation("the first criterion's value again (--written-by, --tag or the metadata value)")
    command("erase", "permanently erase what `select` lists from every store (admin)", erase_selected, selection, erase)
    upkeep = command("maintain", "expire, evict over capacity and consolidate now (server stopped)", maintain)
    upkeep.add_argument("--tenant", help="only this tenant (default: every tenant)")


def run_async(command: Any, args: argparse.Namespace) -> int:
    """Run an async command; its errors (ExceptionGroups included) are left to `hindsight`'s error line."""
    result: int = anyio.run(command, args)
    return result

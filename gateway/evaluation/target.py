"""The gateway an evaluation drives (`hindsight eval`, and the benchmarks that reuse it): `create_app(settings)` in
this process on its own data directory with its own admin token (`in_process`, `eval_settings`), or a running
gateway at a URL (`remote`); each as a `Target` holding a real MCP client."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from gateway.cli.errors import http_client
from gateway.services.runtime import Runtime, open_embedder
from gateway.web.app import create_app
from memory.embedders import RemoteEmbedder
from memory.ports import Embedder
from ops.config import Settings
from tenancy import mint_token

LOCAL_URL = "http://127.0.0.1:8080"
EVAL_SECRET = "hindsight-eval-" + "0" * 32  # signs the in-process run's own token; nothing else accepts it


def eval_settings(data_dir: Path) -> Settings:
    """The in-process gateway's settings: the environment's engine choices (embedder, weights), on its own data
    directory, with nothing that would throttle or change memories behind the evaluation's back."""
    return Settings(
        _env_file=None,
        data_dir=data_dir,
        jwt_secret=EVAL_SECRET,
        rate_limit_enabled=False,
        memory_maintenance_interval_seconds=0,
        maintenance_interval_seconds=3600,
    )


@dataclass
class Target:
    client: Client
    embedder: Embedder
    where: str
    run_tag: str


@asynccontextmanager
async def in_process(settings: Settings) -> AsyncIterator[Target]:
    app = create_app(settings)
    token = mint_token(EVAL_SECRET, tenant="eval", subject="locomo-eval", read=[], write=[], admin=True)
    async with app.router.lifespan_context(app):
        runtime: Runtime = app.state.runtime
        http = http_client(token, transport=httpx2.ASGITransport(app=app), base_url=LOCAL_URL)
        async with http, Client(streamable_http_client(f"{LOCAL_URL}/mcp", http_client=http)) as client:
            where = "`create_app(settings)` in this process, over an in-process ASGI transport"
            yield Target(client, runtime.embedder, where, "eval")


@asynccontextmanager
async def remote(url: str, token: str, settings: Settings) -> AsyncIterator[Target]:
    embedder = await open_embedder(settings)  # the dense baseline's: set HINDSIGHT_EMBEDDER like the gateway's
    http = http_client(token, timeout=60.0)
    try:
        async with http, Client(streamable_http_client(url, http_client=http)) as client:
            yield Target(client, embedder, f"the gateway at {url}", f"{datetime.now(UTC):%Y%m%d%H%M%S}")
    finally:
        if isinstance(embedder, RemoteEmbedder):
            await embedder.close()


def quiet_logging() -> None:
    """wordllama calls `logging.basicConfig(level=INFO)` on import (a no-op: `hindsight` configured JSON logs
    first); the level goes to WARNING so that every MCP request of the run does not log an audit line (and get
    timed doing it), unless the run asks for debug logs."""
    import wordllama  # noqa: F401

    root = logging.getLogger()
    if root.level > logging.DEBUG:
        root.setLevel(logging.WARNING)

"""Memories survive a restart: a new app on the same data directory recalls what the old one stored."""

from __future__ import annotations

import pytest

from gateway.web.app import create_app
from ops.config import Settings
from tests.conftest import Mint, data, mcp_session, running

pytestmark = pytest.mark.anyio


async def test_a_memory_written_before_shutdown_is_recalled_after_restart(settings: Settings, mint: Mint) -> None:
    token = mint()
    async with running(create_app(settings)) as app, mcp_session(app, token) as client:
        written = data(await client.call_tool("write_memory", {"content": "The user's dog is named Biscuit"}))
    async with running(create_app(settings)) as app, mcp_session(app, token) as client:
        recalled = data(await client.call_tool("recall_memory", {"query": "dog name"}))
    assert [m["id"] for m in recalled["memories"]] == [written["id"]]
    assert recalled["memories"][0]["content"] == "The user's dog is named Biscuit"


async def test_the_dev_secret_is_reused_across_restarts(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from gateway.web.app import jwt_settings

    settings = Settings(_env_file=None, data_dir=tmp_path / "d")  # type: ignore[call-arg]
    first = jwt_settings(settings).secret
    second = jwt_settings(settings).secret
    assert first == second
    assert ((tmp_path / "d" / "jwt-secret").stat().st_mode & 0o777) == 0o600

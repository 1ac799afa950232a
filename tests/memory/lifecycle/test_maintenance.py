"""A maintenance pass is background work (issue #12, deliverable 2): a step that raises in one namespace is
logged and listed in the report, and the pass goes on with the other steps and namespaces of the tenant. Scheduled
consolidation keeps its own pace (issue #20): each namespace at most once per interval."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memory.clock import ManualClock
from memory.consolidation import ConsolidationPace
from memory.embedders import WordLlamaEmbedder
from memory.lifecycle.maintenance import maintain_tenant
from memory.requests import ListRequest, WriteRequest
from memory.service import MemoryService
from memory.stores.edge import EdgeVectorStore
from tests.memory.conftest import expired, make_memory, scope

pytestmark = pytest.mark.anyio

STANDUPS = [f"The standup meeting moved to nine on {day}" for day in ("Monday", "Tuesday", "Wednesday")]


async def test_a_failing_step_in_one_namespace_leaves_the_others_maintained(
    service: MemoryService, store: EdgeVectorStore, embedder: WordLlamaEmbedder, clock: ManualClock, acme: str
) -> None:
    admin = scope(acme, admin=True)
    for i, content in enumerate(STANDUPS):  # related episodes, one stored by an old version with nested tags
        memory = make_memory(
            content, tenant=acme, namespace="team:a", at=clock.now(), tags=[["old"]] if i == 0 else ["meetings"]
        )
        await store.upsert(admin, [(memory, (await embedder.embed_documents([content]))[0])])
    await expired(service, admin, clock, ("Temporary door code 1234", "team:a"), ("Guest wifi is hotel-42", "team:b"))

    report = await maintain_tenant(service, admin)

    assert report.failed == ["team:a: consolidation"]  # raised TypeError, logged, the pass went on
    assert report.namespaces == 2
    assert report.expired == 2  # team:a's expiry ran before, team:b's after the failing step
    remaining = await service.list(admin, ListRequest(namespace="team:b", limit=10))
    assert remaining.memories == []


async def test_scheduled_consolidation_runs_each_namespace_at_most_once_per_interval(
    service: MemoryService, clock: ManualClock, acme: str
) -> None:
    admin = scope(acme, admin=True)
    pace = ConsolidationPace(timedelta(days=7))
    for text in ("The user's dog Pepper is a beagle", "Pepper needs a walk every morning"):
        await service.write(admin, WriteRequest(content=text, subject="t", namespace="user:1"))

    first = await maintain_tenant(service, admin, pace=pace)
    await service.write(admin, WriteRequest(content="The user took Pepper to the vet", subject="t", namespace="user:1"))
    clock.advance(6 * 86_400)
    early = await maintain_tenant(service, admin, pace=pace)
    clock.advance(86_400)
    due = await maintain_tenant(service, admin, pace=pace)

    assert (first.consolidated, first.consolidation_skipped) == ([], 0)  # two mentions: nothing to generalise yet
    assert (early.consolidated, early.consolidation_skipped) == ([], 1)  # the third came, but the week is not over
    assert len(due.consolidated) == 1 and due.consolidation_skipped == 0
    assert len((await maintain_tenant(service, admin)).consolidated) == 0  # on demand: runs, nothing changed

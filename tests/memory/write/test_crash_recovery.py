"""A multi-step write killed at any step is completed by its retry: SIGKILL a child process just before each
mutating store call of a supersession (store the new memory and its copy, mark the old one, mark its copy), of an
update in place with copies (one batch), of a forget and a restore with copies, and of an import batch, on the
embedded engine and on qdrant-client's local mode (the server code path), then retry the same request in a fresh
process and check nothing is left half-applied. And a write that skips no repeat is applied once whatever its
flags (issue #32): a forced write with a shared copy, a forced batch and a recorded event, each killed just before
and just after its store call returned (stored, nothing answered), are stored exactly once by their retry."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

import pytest

from memory.agent.sessions import EventOutcome
from memory.clock import SystemClock
from memory.embedders import WordLlamaEmbedder
from memory.events import Event, SqliteEventStore
from memory.models import Memory, WriteOutcome, WriteStatus
from memory.ports import VectorStore
from memory.requests import ListRequest, WriteRequest
from memory.service import MemoryService
from tests.memory.conftest import scope
from tests.memory.crash_child import (
    BOTH,
    EVENT,
    FORCED_BATCH,
    IMPORTED,
    OPERATIONS,
    agent_sessions,
    events_file,
    forced_batch,
    open_store,
)

pytestmark = pytest.mark.anyio

BACKENDS = ["edge", "qdrant"]
TENANT = "acme"
ROOT = Path(__file__).resolve().parents[3]
T = TypeVar("T")


def run_child(backend: str, path: Path, operation: str, kill_at: int) -> int:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "tests.memory.crash_child", backend, str(path), TENANT, operation, str(kill_at)]
    return subprocess.run(command, env=env, cwd=ROOT, timeout=120, check=False).returncode


async def kill_during(
    backend: str, path: Path, embedder: WordLlamaEmbedder, operation: str, kill_at: int, *, setup: bool = True
) -> None:
    """Set the store up (unless `setup` is false), then run `operation` in a child process SIGKILLed at step
    `kill_at` (0: left to finish)."""
    if setup:
        await run_here(backend, path, embedder, "setup")
    assert run_child(backend, path, operation, kill_at) == (0 if kill_at == 0 else -9)


async def retry_here(
    backend: str, path: Path, embedder: WordLlamaEmbedder, retry: Callable[[MemoryService], Awaitable[T]]
) -> tuple[T, list[Memory]]:
    """Run `retry` against a fresh service in this process; return its answer and every memory afterwards."""
    store: VectorStore = await open_store(backend, path, embedder)
    try:
        service = MemoryService(store, embedder, SystemClock())
        answer = await retry(service)
        return answer, await everything(service)
    finally:
        await store.close()


async def run_here(backend: str, path: Path, embedder: WordLlamaEmbedder, operation: str) -> list[Memory]:
    """Run `operation` to the end in this process; return every memory of both namespaces afterwards."""
    _, memories = await retry_here(
        backend, path, embedder, lambda service: OPERATIONS[operation](service, scope(TENANT, write=BOTH))
    )
    return memories


async def everything(service: MemoryService) -> list[Memory]:
    page = await service.list(scope(TENANT, write=BOTH), ListRequest(include_deleted=True, limit=200))
    return page.memories


@pytest.fixture
def path(store_dir: Path) -> Path:
    """Where the store of the test lives, opened in turn by the child process and by this one."""
    return store_dir


async def write_retried(
    backend: str, path: Path, embedder: WordLlamaEmbedder, **request: Any
) -> tuple[WriteOutcome, list[Memory]]:
    """The retry of a write of `agent-1` shared to `team:1` (the same request, sent again with the scope of the
    first attempt) run here: its answer and every memory afterwards."""
    retry = WriteRequest(subject="agent-1", share_to=["team:1"], **request)
    return await retry_here(backend, path, embedder, lambda service: service.write(scope(TENANT, write=BOTH), retry))


def live(memories: list[Memory], namespace: str) -> list[str]:
    return sorted(
        m.content for m in memories if m.namespace == namespace and m.deleted_at is None and m.superseded_by is None
    )


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kill_at", [1, 2, 3, 0])  # before storing, before each of the two marks, not at all
async def test_a_supersession_killed_at_any_step_is_completed_by_the_retry_of_the_same_request(
    path: Path, embedder: WordLlamaEmbedder, backend: str, kill_at: int
) -> None:
    await kill_during(backend, path, embedder, "move", kill_at)
    outcome, memories = await write_retried(backend, path, embedder, content="I moved to Paris", request_id="move-1")

    assert outcome.status is WriteStatus.CREATED  # the first attempt's answer, never "duplicate"
    assert live(memories, "user:1") == ["I moved to Paris"]
    assert live(memories, "team:1") == ["I moved to Paris"]
    by_content = {(m.namespace, m.content): m for m in memories}
    for namespace in BOTH:
        old, new = by_content[namespace, "I live in Berlin"], by_content[namespace, "I moved to Paris"]
        assert old.superseded_by == new.id
        assert new.supersedes == [old.id]
    assert len(memories) == 4  # one new memory and one new copy, whatever the step the first attempt died at


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kill_at", [1, 2, 0])  # before forgetting the copy, before the origin, not at all
async def test_a_forget_killed_at_any_step_is_completed_by_its_retry(
    path: Path, embedder: WordLlamaEmbedder, backend: str, kill_at: int
) -> None:
    await kill_during(backend, path, embedder, "forget", kill_at)
    memories = await run_here(backend, path, embedder, "forget")

    assert [m.deleted_at is not None for m in memories] == [True, True]
    assert {m.delete_reason for m in memories} == {"moved out"}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kill_at", [1, 0])  # before the one batch that updates the origin and its copy, not at all
async def test_an_update_in_place_killed_at_any_step_is_completed_by_the_retry_of_the_same_request(
    path: Path, embedder: WordLlamaEmbedder, backend: str, kill_at: int
) -> None:
    await kill_during(backend, path, embedder, "rephrase", kill_at)
    outcome, memories = await write_retried(
        backend, path, embedder, content="I live in Berlin!", request_id="rephrase-1"
    )

    assert outcome.status is WriteStatus.UPDATED  # the first attempt's answer
    assert live(memories, "user:1") == live(memories, "team:1") == ["I live in Berlin!"]
    assert len(memories) == 2  # the origin and its copy, both in the new wording


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kill_at", [1, 2, 0])  # before restoring the copy, before the origin, not at all
async def test_a_restore_killed_at_any_step_is_completed_by_its_retry(
    path: Path, embedder: WordLlamaEmbedder, backend: str, kill_at: int
) -> None:
    await run_here(backend, path, embedder, "setup")
    await run_here(backend, path, embedder, "forget")
    await kill_during(backend, path, embedder, "restore", kill_at, setup=False)
    memories = await run_here(backend, path, embedder, "restore")

    assert [m.deleted_at is None for m in memories] == [True, True]
    assert {m.delete_reason for m in memories} == {None}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kill_at", [1, 2, 3, 0])  # before each record of the batch, not at all
async def test_an_import_killed_at_any_record_is_completed_by_its_retry_without_a_duplicate(
    path: Path, embedder: WordLlamaEmbedder, backend: str, kill_at: int
) -> None:
    await kill_during(backend, path, embedder, "import", kill_at, setup=False)
    memories = await run_here(backend, path, embedder, "import")

    assert sorted(m.content for m in memories) == sorted(IMPORTED)


KILLS = [1, -1, 0]  # just before the store call, just after it returned (nothing answered), not at all


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kill_at", KILLS)
async def test_a_forced_write_with_a_copy_is_stored_once_by_its_retry_wherever_its_first_attempt_died(
    path: Path, embedder: WordLlamaEmbedder, backend: str, kill_at: int
) -> None:
    await kill_during(backend, path, embedder, "forced", kill_at)
    outcome, memories = await write_retried(
        backend, path, embedder, content="I live in Berlin", force=True, request_id="forced-1"
    )

    forced = {m.namespace: m for m in memories if m.source.request_id == "forced-1"}
    assert len(memories) == 4  # the setup's memory and copy; the forced one and its copy, once each
    assert outcome.status is WriteStatus.CREATED  # the first attempt's answer
    assert outcome.id == forced["user:1"].id
    assert forced["team:1"].origin_id == outcome.id
    assert live(memories, "user:1") == live(memories, "team:1") == ["I live in Berlin"] * 2


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kill_at", KILLS)
async def test_a_forced_batch_is_stored_once_by_its_retry_wherever_its_first_attempt_died(
    path: Path, embedder: WordLlamaEmbedder, backend: str, kill_at: int
) -> None:
    await kill_during(backend, path, embedder, "forced_batch", kill_at)

    outcomes, memories = await retry_here(
        backend, path, embedder, lambda service: service.write_many(scope(TENANT, write=BOTH), forced_batch())
    )

    by_request = {m.source.request_id: m for m in memories}
    assert Counter(m.source.request_id for m in memories) == Counter(
        ["setup-1"] * 2 + [r.request_id for r in forced_batch()]
    )
    assert [o.status for o in outcomes if isinstance(o, WriteOutcome)] == [WriteStatus.CREATED] * len(FORCED_BATCH)
    assert [o.id for o in outcomes if isinstance(o, WriteOutcome)] == [by_request[f"fb-{i}"].id for i in range(4)]
    assert Counter(live(memories, "user:1")) == Counter([*FORCED_BATCH, "I live in Berlin"])


@pytest.mark.parametrize("kill_at", KILLS)
async def test_a_recorded_event_is_stored_once_by_its_retry_wherever_its_first_attempt_died(
    path: Path, embedder: WordLlamaEmbedder, kill_at: int
) -> None:
    await kill_during("edge", path, embedder, "event", kill_at)

    async def record_again(service: MemoryService) -> tuple[EventOutcome, list[Event]]:
        events = SqliteEventStore.open(events_file(path))
        try:
            outcome = await agent_sessions(service, events).record(
                scope(TENANT, write=BOTH), replace(EVENT, request_id="event-1")
            )
            return outcome, await events.events(scope(TENANT, read=["user:1"]), "user:1", "s1")
        finally:
            await events.close()

    (outcome, stored), _ = await retry_here("edge", path, embedder, record_again)

    assert stored == [outcome.event]
    assert (outcome.event.request_id, outcome.event.content) == ("event-1", EVENT.content)

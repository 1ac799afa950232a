"""`AgentSessions` on the engine's own parts (sqlite events, in-process working memory, the edge store): what an
API test cannot reach cheaply, such as a session holding more unextracted events than one extraction batch."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest

from memory.agent.sessions import EXTRACTION_BATCH, AgentSessions
from memory.clock import ManualClock
from memory.events import Event, SessionRecord, SqliteEventStore
from memory.extraction import RuleExtractor
from memory.ids import new_memory_id
from memory.requests import ListRequest
from memory.service import MemoryService
from memory.working.in_process import InProcessWorkingMemory
from memory.working.service import SessionService
from tests.memory.conftest import scope

pytestmark = pytest.mark.anyio


@pytest.fixture
async def sessions(tmp_path: Path, service: MemoryService, clock: ManualClock) -> AsyncIterator[AgentSessions]:
    events = SqliteEventStore.open(tmp_path / "events.sqlite3")
    yield AgentSessions(
        events, SessionService(InProcessWorkingMemory(clock), service), RuleExtractor(), idle_seconds=3600
    )
    await events.close()


async def test_ending_a_session_extracts_every_pending_event_however_many_batches_it_takes(
    sessions: AgentSessions, clock: ManualClock, acme: str
) -> None:
    writer = scope(acme, write=["user:1"])
    admin = scope(acme, admin=True)
    start = clock.now() - timedelta(hours=1)
    count = EXTRACTION_BATCH + 50
    events = [
        Event(
            id=new_memory_id(int((start + timedelta(seconds=n)).timestamp() * 1000)),
            namespace="user:1",
            session_id="imported",
            task_id=None,
            type="user_message",
            content=f"My locker number is {1000 + n}.",
            metadata={},
            occurred_at=start + timedelta(seconds=n),
            recorded_at=start + timedelta(seconds=n),
            subject="agent-1",
            request_id=None,
            call_id=None,
            tool=None,
        )
        for n in range(count)
    ]
    record = SessionRecord(
        namespace="user:1",
        session_id="imported",
        status="active",
        goal=None,
        started_at=start,
        last_event_at=events[-1].occurred_at,
        ended_at=None,
        events=count,
        extracted_through=None,
        archive=None,
        end_reason=None,
    )
    await sessions.events.import_(admin, events, [record])

    ended = await sessions.end(writer, "imported", "agent-1")

    assert ended.extraction.events == count
    page = await sessions.memories.list(writer, ListRequest(namespace="user:1", limit=200))
    later = await sessions.memories.list(writer, ListRequest(namespace="user:1", limit=200, cursor=page.next_cursor))
    contents = {m.content for m in page.memories + later.memories}
    assert f"The user's locker number is {1000 + count - 1}." in contents
    assert len(contents) == count
    stored = await sessions.events.session(writer, "user:1", "imported")
    assert stored is not None and stored.extracted_through == events[-1].id

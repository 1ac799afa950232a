"""Turns leaving the working-memory window go through the write pipeline: chit-chat is not extracted, and a
time-bound turn expires relative to the time it was said."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memory.clock import ManualClock
from memory.embedders import WordLlamaEmbedder
from memory.lifecycle.hidden import plan_until
from memory.requests import TurnRequest
from memory.scope import NamespaceScope
from memory.service import MemoryService
from memory.stores.edge import EdgeVectorStore
from memory.validation import EngineLimits
from memory.working.in_process import InProcessWorkingMemory
from memory.working.service import SessionService
from tests.memory.conftest import START, scope

pytestmark = pytest.mark.anyio


async def test_chit_chat_turns_leaving_the_window_are_dropped_and_facts_are_extracted_with_their_expiry(
    store: EdgeVectorStore, embedder: WordLlamaEmbedder, clock: ManualClock, acme: str
) -> None:
    memories = MemoryService(store, embedder, clock, limits=EngineLimits(working_window=1))
    sessions = SessionService(InProcessWorkingMemory(clock), memories)
    me: NamespaceScope = scope(acme, write=["user:1"])
    said = ["ok", "I have a flight to Oslo tomorrow", "thanks!", "好的"]
    extracted: list[str] = []
    for content in said:
        turn = TurnRequest(session_id="s-1", role="user", content=content, subject="agent-1", occurred_at=clock.now())
        extracted.extend((await sessions.record_turn(me, turn)).extracted)
        clock.advance(3600)

    [flight_id] = extracted
    flight = await memories.get(me, flight_id)
    assert flight.content == "user: I have a flight to Oslo tomorrow"
    assert flight.created_at == START + timedelta(hours=1)
    assert plan_until(flight) == datetime(2026, 1, 3, tzinfo=UTC)

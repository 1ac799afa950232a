"""The stores beside the memories an erasure reaches, real and of one test: sqlite events, in-process working memory
and recall log; and the three espresso statements that consolidate into one semantic memory."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memory.clock import ManualClock
from memory.erasure import Tiers
from memory.events import SqliteEventStore
from memory.recall_log.in_process import InProcessRecallLog
from memory.recall_log.store import RecallLog
from memory.working.in_process import InProcessWorkingMemory

COFFEE = (
    "Wren drinks a double espresso every morning",
    "Wren likes espresso with no sugar in the morning",
    "Every morning Wren orders an espresso",
)


@pytest.fixture
async def tiers(clock: ManualClock, tmp_path: Path) -> AsyncIterator[Tiers]:
    events = SqliteEventStore.open(tmp_path / "events.sqlite")
    yield Tiers(InProcessWorkingMemory(clock), events, InProcessRecallLog(clock))
    await events.close()


def log(tiers: Tiers) -> RecallLog:
    assert tiers.recall_log is not None
    return tiers.recall_log

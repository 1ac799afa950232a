"""Hostile text end to end: `MemoryService.write` and `.recall` on the real embedded engine and embedder stay
within a CPU bound per call for each hostile input at the content limit and for fuzzed adversarial text, and
never fail for it (a clear `InvalidArgument` for text the validation refuses is the only error allowed).

CPU is the whole process's (`time.process_time`: the event loop, the worker threads the text rules run in, the
engine's threads). The bound includes embedding the text (WordLlama costs up to ~60 ms of it for 8,000 emoji)
and the conflict rules over the namespace's nearest memories, which are hostile too."""

from __future__ import annotations

import contextlib
import time
import uuid

import pytest
from hypothesis import HealthCheck, given, settings

from bench.hostile_inputs import FAMILIES
from memory.errors import InvalidArgument
from memory.requests import RecallRequest, WriteRequest
from memory.service import MemoryService
from tests.cpu_bounds import ATTEMPTS
from tests.memory.conftest import scope
from tests.memory.pipeline.test_hostile_text import hostile

pytestmark = pytest.mark.anyio

BOUND_MS = 250.0  # per write or recall, embedding and conflict rules included (was seconds: 7 s for "Dec 5")


async def write_and_recall(service: MemoryService, text: str, writes: int = 3) -> tuple[float, float]:
    """The costliest process CPU ms of `writes` writes of `text` (distinct endings, so each later one weighs the
    earlier ones as conflict candidates) into a fresh namespace, and of as many recalls with it as the query (cut
    at the query limit, 2,000 characters: a longer query is refused): one run, or the cheapest of three when the
    first is over the bound (`tests.cpu_bounds`). Process CPU also counts every other thread of the test process."""
    best = (float("inf"), float("inf"))
    for _ in range(ATTEMPTS):
        costs = await _costliest_calls(service, text, writes)
        best = (min(best[0], costs[0]), min(best[1], costs[1]))
        if max(best) < BOUND_MS:
            break
    return best


async def _costliest_calls(service: MemoryService, text: str, writes: int) -> tuple[float, float]:
    namespace = f"user:{uuid.uuid4().hex[:8]}"
    who = scope(f"hostile-{uuid.uuid4().hex[:8]}", read=[namespace], write=[namespace])
    write_ms = recall_ms = 0.0
    for i in range(writes):
        started = time.process_time()
        with contextlib.suppress(InvalidArgument):
            await service.write(who, WriteRequest(content=f"{text[:-2]}{i:02d}", subject="agent", namespace=namespace))
        write_ms = max(write_ms, (time.process_time() - started) * 1000)
        started = time.process_time()
        with contextlib.suppress(InvalidArgument):
            query = text[: service.limits.max_query_chars]  # the hostile text at the query limit
            await service.recall(who, RecallRequest(query=query, namespaces=[namespace]))
        recall_ms = max(recall_ms, (time.process_time() - started) * 1000)
    return write_ms, recall_ms


@pytest.mark.parametrize("family", list(FAMILIES))
async def test_a_hostile_write_and_recall_stay_within_the_cpu_bound(service: MemoryService, family: str) -> None:
    write_ms, recall_ms = await write_and_recall(service, FAMILIES[family])

    assert write_ms < BOUND_MS, f"write of {family!r}: {write_ms:.0f} ms"
    assert recall_ms < BOUND_MS, f"recall of {family!r}: {recall_ms:.0f} ms"


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
@given(text=hostile.filter(lambda t: len(t) > 2))
async def test_fuzzed_hostile_text_is_written_and_recalled_within_the_cpu_bound(
    service: MemoryService, text: str
) -> None:
    write_ms, recall_ms = await write_and_recall(service, text, writes=2)

    assert write_ms < BOUND_MS
    assert recall_ms < BOUND_MS

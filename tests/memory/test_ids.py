"""Memory ids are time-ordered UUIDv7 strings: ids made for one millisecond sort in the order they were made,
also for a past millisecond while the process also makes ids for now (imported history, a test clock)."""

from __future__ import annotations

import time
import uuid

from memory.ids import new_memory_id, parse_memory_id


def test_ids_of_one_millisecond_sort_in_creation_order() -> None:
    ids = [new_memory_id(1_700_000_000_000) for _ in range(5000)]  # more than one lower-quarter start leaves

    assert ids == sorted(ids)
    assert len(set(ids)) == 5000


def test_ids_of_a_past_millisecond_keep_their_order_while_ids_for_now_are_made() -> None:
    past = 1_600_000_000_000
    ids = []
    for _ in range(20):
        ids.append(new_memory_id(past))
        new_memory_id(int(time.time() * 1000))  # another request, at the real time

    assert ids == sorted(ids)


def test_an_id_is_a_version_7_uuid_carrying_its_millisecond() -> None:
    made = new_memory_id(1_700_000_000_123)

    parsed = uuid.UUID(made)
    assert (parsed.version, parsed.int >> 80) == (7, 1_700_000_000_123)
    assert parse_memory_id(made.upper()) == made

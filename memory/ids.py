"""Memory ids: UUIDv7 (time-ordered), so a store's id order is creation order and list cursors are stable."""

from __future__ import annotations

import hashlib
import os
import threading
import time
import unicodedata
import uuid
from collections import OrderedDict

_lock = threading.Lock()
_sequences: OrderedDict[int, int] = OrderedDict()  # the last sequence used per millisecond, most recent last
_REMEMBERED_MS = 4096  # milliseconds whose sequence is remembered (older ones start afresh at random)


def _next_sequence(ms: int) -> tuple[int, int]:
    """A 12-bit counter that increases within one millisecond, so ids made in one process for the same
    millisecond sort in creation order (RFC 9562 §6.2, method 1), also for a millisecond in the past (imported
    history, a test clock) while another time is in use. A new millisecond starts at a random point in the
    lower quarter, leaving room to count up; past 4,096 ids in one millisecond the next one is borrowed."""
    with _lock:
        while True:
            last = _sequences.get(ms)
            if last is None:
                sequence = int.from_bytes(os.urandom(2), "big") & 0x3FF
                break
            if last < 0xFFF:
                sequence = last + 1
                break
            ms += 1
        _remember(ms, sequence)
        return ms, sequence


def _remember(ms: int, sequence: int) -> None:
    _sequences[ms] = sequence
    _sequences.move_to_end(ms)
    while len(_sequences) > _REMEMBERED_MS:
        _sequences.popitem(last=False)


def new_memory_id(now_ms: int | None = None) -> str:
    """A UUIDv7 string: 48-bit Unix milliseconds, a 12-bit in-process sequence, then 62 random bits."""
    ms, sequence = _next_sequence(int(time.time() * 1000) if now_ms is None else now_ms)
    rand_b = int.from_bytes(os.urandom(8), "big") & ((1 << 62) - 1)
    value = (ms & ((1 << 48) - 1)) << 80 | 0x7 << 76 | sequence << 64 | 0x2 << 62 | rand_b
    return str(uuid.UUID(int=value))


def parse_memory_id(value: object) -> str | None:
    """The canonical form of a memory id, or None if `value` is not a UUID string."""
    if not isinstance(value, str) or len(value) > 64:
        return None
    try:
        return str(uuid.UUID(value))
    except ValueError:
        return None


def content_hash(content: str) -> str:
    """Hash of the content after Unicode and whitespace normalisation and case folding (exact-repeat check)."""
    normalized = " ".join(unicodedata.normalize("NFKC", content).casefold().split())
    return hashlib.sha256(normalized.encode()).hexdigest()[:32]

"""Memory ids: UUIDv7 (time-ordered), so a store's id order is creation order and list cursors are stable."""

from __future__ import annotations

import hashlib
import os
import threading
import time
import unicodedata
import uuid

_lock = threading.Lock()
_last_ms = -1
_sequence = 0


def _next_sequence(ms: int) -> tuple[int, int]:
    """A 12-bit counter that increases within one millisecond, so ids made in one process sort in creation
    order (RFC 9562 §6.2, method 1). A millisecond older than the last one (imported history) starts afresh."""
    global _last_ms, _sequence
    with _lock:
        if ms == _last_ms:
            _sequence += 1
            if _sequence > 0xFFF:
                ms = _last_ms = ms + 1
                _sequence = 0
        elif ms > _last_ms:
            _last_ms, _sequence = ms, int.from_bytes(os.urandom(2), "big") & 0x3FF
        else:
            return ms, int.from_bytes(os.urandom(2), "big") & 0xFFF
        return ms, _sequence


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

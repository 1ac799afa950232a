"""List cursors: opaque to clients, the id of the next memory inside."""

from __future__ import annotations

import base64
import binascii

from memory.errors import InvalidArgument
from memory.ids import parse_memory_id


def encode_cursor(memory_id: str | None) -> str | None:
    if memory_id is None:
        return None
    return base64.urlsafe_b64encode(f"v1:{memory_id}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str | None) -> str | None:
    if cursor is None:
        return None
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise InvalidArgument("cursor is not one this server returned") from None
    memory_id = parse_memory_id(raw[3:]) if raw.startswith("v1:") else None
    if memory_id is None:
        raise InvalidArgument("cursor is not one this server returned")
    return memory_id

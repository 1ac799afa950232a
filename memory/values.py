"""What a value must be for the engine to store it and always read it back.

Timestamps lie within years 1970-2200 once converted to UTC (so adding the days of an expiry can never leave
what `datetime` holds); numbers are finite and integers fit in 64 bits (what the stores keep exactly); strings
carry no NUL and no lone surrogate (neither survives every store and wire encoding); JSON nests at most
`MAX_JSON_DEPTH` levels. `check_json_value` walks a value with an explicit stack, so even a value nested
10,000 levels deep costs one bounded pass and never a `RecursionError`.

Each check raises `InvalidArgument` naming the field (and the path inside it) that is wrong.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime

from memory.errors import InvalidArgument

EARLIEST_INSTANT = datetime(1970, 1, 1, tzinfo=UTC)
LATEST_INSTANT = datetime(2200, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC)
MAX_JSON_DEPTH = 32
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def string_problem(text: str) -> str | None:
    """Why `text` cannot be stored (a NUL or a lone surrogate), or None when it can."""
    if "\x00" in text:
        return "contains a NUL character"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "contains a lone surrogate (not valid Unicode text)"
    return None


def check_text(text: str, field: str) -> str:
    """`text` itself, when it is storable text."""
    problem = string_problem(text)
    if problem is not None:
        raise InvalidArgument(f"{field} {problem}")
    return text


def check_instant(value: datetime, field: str) -> datetime:
    """`value` (a naive one taken as UTC), when it lies within years 1970-2200 once converted to UTC; its own
    zone is kept (the expiry rules read the day in the writer's zone)."""
    aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    try:
        utc = aware.astimezone(UTC)
    except OverflowError:  # 0001-01-01T00:00+14:00 or 9999-12-31T23:59-14:00: not a datetime in UTC
        utc = None
    if utc is None or not EARLIEST_INSTANT <= utc <= LATEST_INSTANT:
        raise InvalidArgument(
            f"{field} must lie within years {EARLIEST_INSTANT.year}-{LATEST_INSTANT.year} in UTC; "
            f"got {value.isoformat()}"
        )
    return aware


def _scalar_problem(value: object) -> str | None:
    if isinstance(value, str):
        return string_problem(value)
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return None if INT64_MIN <= value <= INT64_MAX else "is an integer outside the 64-bit range"
    if isinstance(value, float):
        return None if math.isfinite(value) else "is not a finite number (NaN and Infinity are not JSON)"
    return f"is a {type(value).__name__}, not a JSON value"


def _shortened(path: str, limit: int = 160) -> str:
    return path if len(path) <= limit else f"{path[: limit - 1]}…"


def check_json_value(value: object, field: str, *, max_depth: int = MAX_JSON_DEPTH) -> None:
    """Raise `InvalidArgument` unless `value` is plain JSON the stores can hold: dicts with string keys, lists,
    clean strings, finite numbers, 64-bit integers, booleans and null, nested at most `max_depth` levels."""
    stack: list[tuple[object, str, int]] = [(value, field, 0)]
    while stack:
        item, where, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth >= max_depth:
                raise InvalidArgument(f"{field} nests deeper than {max_depth} levels")
            if isinstance(item, list):
                stack.extend((child, f"{where}[{index}]", depth + 1) for index, child in enumerate(item))
                continue
            for key, child in item.items():
                if not isinstance(key, str):
                    raise InvalidArgument(f"{where} has a key that is not a string")
                if (problem := string_problem(key)) is not None:
                    raise InvalidArgument(f"a key of {_shortened(where)} {problem}")
                stack.append((child, f"{where}.{key}", depth + 1))
        elif (problem := _scalar_problem(item)) is not None:
            raise InvalidArgument(f"{_shortened(where)} {problem}")

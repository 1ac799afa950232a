"""Input checks shared by every engine entry point: limits, parsers that turn raw values into typed ones, and the
scope checks every store call starts with (the grant of a namespace, an admin scope).

Each check raises `InvalidArgument` (or `NamespaceForbidden`) with a message that says what is wrong and what is
allowed, before anything is written. What any stored value must be (bounded instants, finite numbers, clean
strings, bounded nesting) is `memory.values`; the checks here apply it to each argument.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memory.errors import InvalidArgument, NamespaceForbidden
from memory.models import MemoryKind
from memory.scope import NamespaceScope, validate_namespace
from memory.values import check_instant, check_json_value, check_text

SESSION_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9:_.@-]{0,127}")
REQUEST_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9:_.@-]{0,127}")
ROLES = ("user", "assistant", "system", "tool")


@dataclass(frozen=True, slots=True)
class EngineLimits:
    max_content_chars: int = 8_000
    default_top_k: int = 8
    # a model reads a few dozen memories at most; a deeper list only costs CPU and answer size (issue #32)
    max_top_k: int = 50
    # a recall query is a question; thousands of characters of pasted context only cost CPU (issue #32)
    max_query_chars: int = 2_000
    max_token_budget: int = 32_000  # a context window's worth of recalled text is the most a budget buys
    recall_candidates: int = 75  # the depth of each candidate list a recall scores (at least 2 x top_k, and 50)
    max_tags: int = 32
    max_tag_chars: int = 64
    max_metadata_bytes: int = 16_384
    max_state_bytes: int = 65_536
    default_list_limit: int = 50
    max_list_limit: int = 200
    max_namespaces_per_call: int = 256
    max_batch_items: int = 256  # memories per `MemoryService.write_many` (the `write_memories` tool)
    max_ttl_seconds: int = 10 * 365 * 24 * 3600
    working_window: int = 10
    working_ttl_seconds: int = 24 * 3600


def check_content(content: object, limits: EngineLimits, *, field: str = "content") -> str:
    if not isinstance(content, str):
        raise InvalidArgument(f"{field} must be a string")
    check_text(content, field)
    stripped = content.strip()
    if not stripped:
        raise InvalidArgument(f"{field} must not be empty")
    if len(content) > limits.max_content_chars:
        raise InvalidArgument(f"{field} is {len(content)} characters; the limit is {limits.max_content_chars}")
    return stripped


def check_query(query: object, limits: EngineLimits) -> str:
    """A recall query: clean, non-empty text of at most `max_query_chars` characters. A longer one is refused, not
    cut: the search would answer a text other than the one asked, and the caller should ask with its question
    rather than the context around it (a query of thousands of characters costs several times the CPU of a
    question, for hits no better)."""
    text = check_content(query, limits, field="query")
    if isinstance(query, str) and len(query) > limits.max_query_chars:
        raise InvalidArgument(
            f"query is {len(query)} characters; the limit is {limits.max_query_chars}: ask with the question, "
            "not the context around it"
        )
    return text


def check_kind(kind: object) -> MemoryKind:
    try:
        return MemoryKind(str(kind))
    except ValueError:
        allowed = ", ".join(k.value for k in MemoryKind)
        raise InvalidArgument(f"kind must be one of: {allowed}") from None


def check_importance(value: float | None) -> float | None:
    if value is None:
        return None
    if (
        not isinstance(value, int | float)
        or isinstance(value, bool)
        or not math.isfinite(value)
        or not 0.0 <= float(value) <= 1.0
    ):
        raise InvalidArgument("importance must be a number from 0 to 1")
    return float(value)


def check_tags(tags: Sequence[str] | None, limits: EngineLimits) -> list[str]:
    if tags is None:
        return []
    if len(tags) > limits.max_tags:
        raise InvalidArgument(f"at most {limits.max_tags} tags are allowed")
    if isinstance(tags, str):  # a str is a Sequence[str] too: "ab" must not become the tags "a" and "b"
        raise InvalidArgument("tags must be a list of strings")
    clean: list[str] = []
    for tag in tags:
        if not isinstance(tag, str) or not tag.strip() or len(tag) > limits.max_tag_chars:
            raise InvalidArgument(f"each tag must be a non-empty string of at most {limits.max_tag_chars} chars")
        clean.append(check_text(tag, "a tag").strip())
    return list(dict.fromkeys(clean))


def check_json_object(value: dict[str, Any] | None, max_bytes: int, field: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidArgument(f"{field} must be a JSON object")
    check_json_value(value, field)  # bounded depth first: json.dumps recurses
    try:
        size = len(json.dumps(value, ensure_ascii=False, allow_nan=False).encode())
    except (TypeError, ValueError):
        raise InvalidArgument(f"{field} must be JSON-serialisable") from None
    if size > max_bytes:
        raise InvalidArgument(f"{field} is {size} bytes as JSON; the limit is {max_bytes}")
    return value


def whole_number(value: object, most: int, message: str) -> int:
    """`value` if it is a whole number (not a bool) from 1 to `most`; else `InvalidArgument(message)`."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
        raise InvalidArgument(message)
    return value


def check_positive_seconds(value: int | None, limits: EngineLimits, field: str) -> int | None:
    if value is None:
        return None
    most = limits.max_ttl_seconds
    return whole_number(value, most, f"{field} must be a whole number of seconds from 1 to {most}")


# A recall with a token budget and no top_k returns as many hits as the budget holds: this many tokens a hit at the
# least (a short memory and its line), up to `max_top_k`, at least `default_top_k`.
TOKENS_PER_HIT_AT_LEAST = 12


def recall_depth(top_k: int | None, token_budget: int | None, limits: EngineLimits) -> int:
    """How many hits a recall may return: `top_k`, else as many as `token_budget` may hold, else the default."""
    budget = check_token_budget(token_budget, limits)
    if top_k is not None or budget is None:
        return check_top_k(top_k, limits)
    return max(limits.default_top_k, min(limits.max_top_k, -(-budget // TOKENS_PER_HIT_AT_LEAST)))


def check_top_k(value: int | None, limits: EngineLimits) -> int:
    if value is None:
        return limits.default_top_k
    return whole_number(value, limits.max_top_k, f"top_k must be from 1 to {limits.max_top_k}")


def check_limit(value: int | None, limits: EngineLimits) -> int:
    if value is None:
        return limits.default_list_limit
    return whole_number(value, limits.max_list_limit, f"limit must be from 1 to {limits.max_list_limit}")


def check_token_budget(value: object, limits: EngineLimits) -> int | None:
    if value is None:
        return None
    most = limits.max_token_budget
    return whole_number(value, most, f"token_budget must be a whole number of tokens from 1 to {most}")


def check_session_id(value: object, *, required: bool = False) -> str | None:
    if value is None:
        if required:
            raise InvalidArgument("session_id is required")
        return None
    if not isinstance(value, str) or not SESSION_ID_PATTERN.fullmatch(value):
        raise InvalidArgument("session_id must be 1-128 characters of letters, digits and ':_.@-'")
    return value


def check_request_id(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not REQUEST_ID_PATTERN.fullmatch(value):
        raise InvalidArgument("request_id must be 1-128 characters of letters, digits and ':_.@-'")
    return value


def check_role(value: object) -> str:
    if value not in ROLES:
        raise InvalidArgument(f"role must be one of: {', '.join(ROLES)}")
    return str(value)


def parse_instant(value: object, field: str) -> datetime | None:
    """Parse an ISO 8601 timestamp; a value without a zone is taken as UTC. It must lie within years 1970-2200
    once converted to UTC (`memory.values.check_instant`)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidArgument(f"{field} must be an ISO 8601 timestamp string")
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidArgument(f"{field} is not an ISO 8601 timestamp: use e.g. 2026-05-01T09:30:00Z") from None
    return check_instant(parsed, field)


def check_granted(scope: NamespaceScope, namespace: str, *, write: bool) -> str:
    """The namespace, checked, if the scope grants it for this access (`NamespaceForbidden` otherwise): the check
    every session and event store call starts with."""
    allowed = scope.can_write(namespace) if write else scope.can_read(namespace)
    if not allowed:
        raise NamespaceForbidden(f"namespace not {'writable' if write else 'readable'} with this token")
    return validate_namespace(namespace)


def check_admin(scope: NamespaceScope, action: str) -> str:
    """The tenant of an admin scope (`NamespaceForbidden`, saying that `action` needs one, for any other scope)."""
    if not scope.admin:
        raise NamespaceForbidden(f"{action} needs an admin scope")
    return scope.tenant

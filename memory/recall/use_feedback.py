"""Feedback on use (issue #18.3): after answering, an agent says which recalled memories it used and which it
did not. A used memory's access count is bumped once more (through the same `AccessRecorder` recall uses, so off
the request path), which feeds recall's access-frequency signal: memories that help are found more readily. The
gateway counts both in `hindsight_recall_feedback_total{used}`: used over all is the recall hit ratio (under 30%
the recall strategy is wrong for these agents).

Every id must name a memory the caller can read: a malformed one is `invalid_argument` and one it cannot see
(none such, or another tenant's or namespace's) `not_found`, as `get`/`forget` answer, naming the list and the
id; nothing is recorded then. An id named twice counts once, and an id cannot be both used and unused.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memory.errors import InvalidArgument, NotFound
from memory.ids import parse_memory_id
from memory.scope import NamespaceScope
from memory.service import MemoryService

MAX_FEEDBACK_IDS = 200  # ids per list and call: a couple of full recalls (top_k is at most 100 by default)


@dataclass(frozen=True, slots=True)
class FeedbackOutcome:
    """The ids recorded, canonical and each once, in the order given."""

    used: list[str]
    unused: list[str]


def _canonical(ids: object, field: str) -> list[str]:
    if ids is None:
        return []
    if not isinstance(ids, Sequence) or isinstance(ids, str):
        raise InvalidArgument(f"{field} must be a list of memory ids")
    if len(ids) > MAX_FEEDBACK_IDS:
        raise InvalidArgument(f"{field}: at most {MAX_FEEDBACK_IDS} ids per call")
    canonical: list[str] = []
    for position, value in enumerate(ids):
        parsed = parse_memory_id(value)
        if parsed is None:
            raise InvalidArgument(f"{field}[{position}] must be a memory id (a UUID string)")
        canonical.append(parsed)
    return list(dict.fromkeys(canonical))


def check_feedback_ids(used: object, unused: object) -> FeedbackOutcome:
    """The canonical ids of both lists, each once; `InvalidArgument` for a malformed list or id, an id in both
    lists, or nothing to record."""
    used_ids, unused_ids = _canonical(used, "used"), _canonical(unused, "unused")
    if not used_ids and not unused_ids:
        raise InvalidArgument("name at least one recalled memory id in used or unused")
    both = set(used_ids) & set(unused_ids)
    if both:
        raise InvalidArgument(f"an id cannot be both used and unused: {sorted(both)[0]}")
    return FeedbackOutcome(used_ids, unused_ids)


async def record_use(service: MemoryService, scope: NamespaceScope, used: object, unused: object) -> FeedbackOutcome:
    """Check every id is a memory the scope can read, then bump the access counts of the used ones."""
    outcome = check_feedback_ids(used, unused)
    for field, ids in (("used", outcome.used), ("unused", outcome.unused)):
        for memory_id in ids:
            try:
                await service.get(scope, memory_id)
            except NotFound as exc:
                raise NotFound(f"{field}: {memory_id}: {exc.message}") from exc
    await service.access.record(scope, outcome.used)
    return outcome

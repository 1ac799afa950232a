"""The durable event and session-record store (issue 17): an agent's events (messages, tool calls bound to their
results) and the lifecycle record of each session, tenant-scoped like every store. `EventStore` is the contract and
the checks every backend shares; its subclasses `SqliteEventStore` (embedded) and `RedisEventStore` (server mode)
are the backends."""

from memory.events.model import (
    EVENT_TYPES,
    Event,
    EventCounts,
    EventType,
    SessionExport,
    SessionRecord,
    SessionStatus,
)
from memory.events.redis_store import RedisEventStore
from memory.events.sqlite_store import SqliteEventStore
from memory.events.store import EventStore

__all__ = [
    "EVENT_TYPES",
    "Event",
    "EventCounts",
    "EventStore",
    "EventType",
    "RedisEventStore",
    "SessionExport",
    "SessionRecord",
    "SessionStatus",
    "SqliteEventStore",
]

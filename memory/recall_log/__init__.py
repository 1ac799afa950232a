"""The recall log (issue 18, item 2): what each recall of an opted-in tenant asked and got back (query, filters,
returned ids with their score parts), kept bounded by count and by age, readable only by the tenant's admins.
`RecallLog` is the contract and the checks every backend shares; its subclasses `InProcessRecallLog` (one process)
and `RedisRecallLog` (shared by every replica) are the backends."""

from memory.recall_log.in_process import InProcessRecallLog
from memory.recall_log.redis_store import RedisRecallLog
from memory.recall_log.store import (
    DEFAULT_MAX_AGE_SECONDS,
    DEFAULT_MAX_ENTRIES,
    LoggedHit,
    RecallLog,
    RecallLogEntry,
    decode_entry,
    encode_entry,
)

__all__ = [
    "DEFAULT_MAX_AGE_SECONDS",
    "DEFAULT_MAX_ENTRIES",
    "InProcessRecallLog",
    "LoggedHit",
    "RecallLog",
    "RecallLogEntry",
    "RedisRecallLog",
    "decode_entry",
    "encode_entry",
]

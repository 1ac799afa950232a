"""What an idempotency record is, apart from the store that keeps it: `Erasure`, the one rule both stores apply to
choose the completed records an erasure removes, and the Redis side of a record
(`tenancy.idempotency.RedisIdempotency`): its Lua scripts, one key each so they run on Redis Cluster, how a
tenant's record keys are told apart from another tenant's, and how a stored record is read back."""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from memory.errors import BackendUnavailable


@dataclass(frozen=True, slots=True)
class Erasure:
    """Which completed records `IdempotencyStore.erase` removes: those whose key's subject is one of `subjects`,
    or whose response holds one of `mentions` as a string value at any depth (dict values and list items; dict
    keys do not count). Both stores apply this one rule."""

    subjects: frozenset[str]
    mentions: frozenset[str]

    @classmethod
    def of(cls, subjects: Collection[str], mentions: Collection[str]) -> Erasure:
        return cls(frozenset(subjects), frozenset(mentions))

    @property
    def empty(self) -> bool:
        """Nothing to look for: no record matches."""
        return not self.subjects and not self.mentions

    def matches(self, subject: str | None, response: Any) -> bool:
        """Whether the completed record of a key with `subject` (None: not known) and stored `response` goes."""
        if subject is not None and subject in self.subjects:
            return True
        if not self.mentions:
            return False
        stack: list[Any] = [response]
        while stack:  # no recursion: a deeply nested response cannot exhaust the stack
            value = stack.pop()
            if isinstance(value, str):
                if value in self.mentions:
                    return True
            elif isinstance(value, dict):
                stack.extend(value.values())
            elif isinstance(value, list | tuple):
                stack.extend(value)
        return False


# KEYS[1] record; ARGV: pending record, lease ms. Returns false if claimed (the key was absent or its lease had
# run out, so Redis had expired it), else the current record.
CLAIM = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return false end
return redis.call('GET', KEYS[1])
"""

# KEYS[1] record; ARGV: fingerprint, done record, retention ms. Stores the response unless a done record or
# another fingerprint's claim is there.
COMPLETE = """
local current = redis.call('GET', KEYS[1])
if current then
  local ok, record = pcall(cjson.decode, current)
  if ok and (record['state'] ~= 'pending' or record['fp'] ~= ARGV[1]) then return 0 end
end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
"""

# KEYS[1] record; ARGV: owner token, lease ms. Extends the lease of this owner's pending claim; 0 if it has none.
RENEW = """
local current = redis.call('GET', KEYS[1])
if not current then return 0 end
local ok, record = pcall(cjson.decode, current)
if not ok or record['state'] ~= 'pending' or record['owner'] ~= ARGV[1] then return 0 end
return redis.call('PEXPIRE', KEYS[1], ARGV[2])
"""

# KEYS[1] record; ARGV: owner token ('' = any). Deletes a pending claim only.
ABANDON = """
local current = redis.call('GET', KEYS[1])
if not current then return 0 end
local ok, record = pcall(cjson.decode, current)
if not ok or record['state'] ~= 'pending' then return 0 end
if ARGV[1] ~= '' and record['owner'] ~= ARGV[1] then return 0 end
return redis.call('DEL', KEYS[1])
"""

# KEYS[1] record; ARGV: the record as `erase` read it. Deletes it only if the key still holds exactly that record
# (not a claim or another record written since). Returns 1 if deleted, else 0.
ERASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""

SCAN_COUNT = 1000  # keys a SCAN step looks at (of all tenants and stores): fewer round trips over a large keyspace
READ_BATCH = 200  # records read per pipeline by `erase`
_DIGEST_LENGTH = 32  # hex digits of the digest ending a record key (`IdempotencyKey.redis_key`)
_HEX_DIGITS = frozenset("0123456789abcdef")
_GLOB_SPECIAL = frozenset("*?[]\\")


def glob_escape(text: str) -> str:
    """`text` as a Redis glob pattern matching exactly itself."""
    return "".join(f"\\{char}" if char in _GLOB_SPECIAL else char for char in text)


def is_record_key(key: str, record_prefix: str) -> bool:
    """Whether `key` is an idempotency record of the tenant whose record keys start with `record_prefix`: the
    prefix, then a digest and nothing else (so not a key of a tenant whose name merely starts the same way)."""
    digest = key[len(record_prefix) :]
    return key.startswith(record_prefix) and len(digest) == _DIGEST_LENGTH and set(digest) <= _HEX_DIGITS


def decode_record(raw: Any) -> dict[str, Any]:
    try:
        record = json.loads(raw.decode() if isinstance(raw, bytes) else raw)
    except (TypeError, ValueError) as exc:
        raise BackendUnavailable("idempotency store (redis) holds a malformed record") from exc
    if not isinstance(record, dict):
        raise BackendUnavailable("idempotency store (redis) holds a malformed record")
    return record

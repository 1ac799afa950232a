"""`RedisEventStore`: the server-mode `EventStore`, on a single Redis or a Redis Cluster.

It owns the key layout and the Lua scripts of the event store. Every key of a tenant starts `hs:{tenant}:ev:`:
`{tenant}` is the Redis Cluster hash tag (as in `memory/working/redis_store.py`), so every script runs on one
slot with all its keys declared. Namespaces, session ids and task ids are percent-encoded, so no value can spell
another's key. With `S = hs:{T}:ev:s:<ns>:<session>`, `N = hs:{T}:ev:n:<ns>`:

- `S:rec` hash, the session record: status, goal, started, last, ended (microseconds), events, through
  (extracted_through), archive (JSON), reason.
- `S:ev` hash: `<id>` the event's JSON; `r:<id>` the result bound to a call; `t:<id>` its task token; `c:<id>` a
  call's call token; `b:<result id>` the call a result was bound to and `rb:<call id>` the reverse (retries);
  `q:<request key>` the event a request recorded (`model.request_key`: the call, for a bound result), with
  `k:<id>` and `rk:<call id>` the request keys of an event and of the result bound to it (retention).
- `S:ids` zset (score 0, lexical = id order), `S:age` zset (score = recorded_at), `S:task:<token>` zset per task,
  `S:tasks` set of task tokens, `S:calls` hash call token -> the highest tool_call id with that call id.
- `N:all`, `N:active`, `N:ended` zsets of session ids (score 0: session id order) for listings.
- `hs:{T}:ev:idle` zset of active sessions by last_event_at (the sweep); `hs:{T}:ev:retain` zset of ended
  sessions by the earliest time retention may touch them. `hs:ev:tenants` (no tag) is the set of tenants.

Appends, binding, start, end, import and retention are Lua scripts, each atomic. Erasing a subject finds the
tenant's sessions that hold events by SCAN (their `S:ids` keys) and runs one script per session. Every Redis
failure is raised as `BackendUnavailable`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

import redis.asyncio
from redis.asyncio.cluster import RedisCluster

from memory.clients.redis_errors import RedisBacked, redis_errors
from memory.errors import BackendUnavailable
from memory.events import model, redis_scripts
from memory.events.model import Event, EventCounts, SessionRecord, SessionStatus, decode_event, from_micros, micros
from memory.events.store import EventStore, Pair

_TENANTS = "hs:ev:tenants"
_BATCH = 100
_ATTEMPTS = 20
_TENANT_REFRESH_SECONDS = 60.0  # how often a process re-adds a tenant it writes for to the tenants set
_SCAN_COUNT = 1000  # SCAN's COUNT hint while looking for a tenant's sessions
_GLOB_SPECIAL = frozenset("*?[]\\")


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _glob_escaped(text: str) -> str:
    """`text` as a literal in a Redis MATCH pattern."""
    return "".join("\\" + char if char in _GLOB_SPECIAL else char for char in text)


def _after(after: str | None) -> str:
    """The lexical range start of a listing after `after` (exclusive), or from the start."""
    return f"({after}" if after else "-"


def _token(value: str | None) -> str:
    """A task or call id as stored in keys and fields: '' for none, else '=' + the percent-encoded value."""
    return "" if value is None else "=" + quote(value, safe="")


@dataclass(frozen=True, slots=True)
class _Keys:
    """The keys of one session (and of its namespace and tenant)."""

    tenant: str
    namespace: str
    session_id: str

    @property
    def tag(self) -> str:
        return f"hs:{{{self.tenant}}}:ev"

    def s(self, suffix: str) -> str:
        return f"{self.tag}:s:{quote(self.namespace, safe='')}:{quote(self.session_id, safe='')}:{suffix}"

    def n(self, suffix: str) -> str:
        return f"{self.tag}:n:{quote(self.namespace, safe='')}:{suffix}"

    @property
    def member(self) -> str:
        return json.dumps([self.namespace, self.session_id])

    def lifecycle(self) -> list[str]:
        """rec, n:all, n:active, n:ended, idle, retain, age: the keys of the lifecycle scripts."""
        names = [self.n("all"), self.n("active"), self.n("ended"), f"{self.tag}:idle", f"{self.tag}:retain"]
        return [self.s("rec"), *names, self.s("age")]

    def whole(self, tasks: Sequence[str]) -> list[str]:
        own = [self.s(k) for k in ("rec", "ev", "ids", "age", "calls", "tasks")]
        tag = self.tag
        names = [self.n("all"), self.n("active"), self.n("ended"), f"{tag}:idle", f"{tag}:retain"]
        return own + names + [self.s(f"task:{t}") for t in tasks]


def _record(namespace: str, session_id: str, raw: Any) -> SessionRecord | None:
    if isinstance(raw, dict):
        fields = {_text(k): _text(v) for k, v in raw.items()}
    else:
        items = list(raw)
        fields = {_text(items[i]): _text(items[i + 1]) for i in range(0, len(items), 2)}
    if "status" not in fields:
        return None
    return SessionRecord(
        namespace=namespace,
        session_id=session_id,
        status="ended" if fields["status"] == "ended" else "active",
        goal=fields.get("goal"),
        started_at=from_micros(fields["started"]),
        last_event_at=from_micros(fields["last"]),
        ended_at=from_micros(fields["ended"]) if "ended" in fields else None,
        events=int(fields["events"]),
        extracted_through=fields.get("through"),
        archive=json.loads(fields["archive"]) if "archive" in fields else None,
        end_reason=fields.get("reason"),
    )


class RedisEventStore(RedisBacked, EventStore):
    """`EventStore` on Redis; see the module docstring."""

    backend = "event store"

    def __init__(self, client: redis.asyncio.Redis | RedisCluster) -> None:
        self._client = client
        self._tenant_noted: dict[str, float] = {}
        self._lua_append = client.register_script(redis_scripts.APPEND)
        self._lua_start = client.register_script(redis_scripts.START)
        self._lua_end = client.register_script(redis_scripts.END)
        self._lua_put = client.register_script(redis_scripts.PUT)
        self._lua_mark = client.register_script(redis_scripts.MARK)
        self._lua_records = client.register_script(redis_scripts.RECORDS)
        self._lua_drop = client.register_script(redis_scripts.DROP)
        self._lua_trim = client.register_script(redis_scripts.TRIM)
        self._lua_erase = client.register_script(redis_scripts.ERASE)

    async def _note_tenant(self, tenant: str) -> None:
        """Add the tenant to the tenants set before writing a session of it; again every minute, so a set lost
        with a Redis node (it lives on another slot than the tenant's keys) is rebuilt by the next writes."""
        now = time.monotonic()
        if now - self._tenant_noted.get(tenant, -_TENANT_REFRESH_SECONDS) >= _TENANT_REFRESH_SECONDS:
            with redis_errors("event store"):
                await self._client.sadd(_TENANTS, tenant)
            self._tenant_noted[tenant] = now

    async def _store(self, keys: _Keys, event: Event, *, bind: bool, touch: bool) -> list[Any]:
        bound = (model.binding_of(event) or "") if bind else ""
        task = _token(event.task_id)
        names = [keys.s(k) for k in ("rec", "ev", "ids", "age", "calls")]
        names += [keys.s(f"task:{task}" if task else "ids"), keys.s("tasks"), *keys.lifecycle()[1:6]]
        args: list[str | int] = [event.id, model.encode_event(event), micros(event.recorded_at), event.type]
        args += [_token(event.call_id), task]
        args += [keys.session_id, keys.member, model.result_of(event) or "", bound, "1" if touch else "0"]
        args += [model.request_key(event) or "", "1" if bind else "0"]  # an append looks its request up, an import not
        with redis_errors("event store"):
            return list(await self._lua_append(keys=names, args=args))

    async def _append(self, tenant: str, event: Event) -> Event:
        keys = _Keys(tenant, event.namespace, event.session_id)
        await self._note_tenant(tenant)
        reply = await self._store(keys, event, bind=True, touch=True)
        if len(reply) == 1:
            return event
        return decode_event(keys.namespace, keys.session_id, reply[1], reply[2] if len(reply) > 2 else None)

    async def _events(
        self, tenant: str, namespace: str, session_id: str, task_id: str | None, after: str | None, limit: int
    ) -> list[Event]:
        keys = _Keys(tenant, namespace, session_id)
        index = keys.s("ids") if task_id is None else keys.s(f"task:{_token(task_id)}")
        with redis_errors("event store"):
            ids = [_text(i) for i in await self._client.zrangebylex(index, _after(after), "+", 0, limit)]
            if not ids:
                return []
            raw = await self._client.hmget(keys.s("ev"), [f for i in ids for f in (i, f"r:{i}")])
        pairs = zip(raw[0::2], raw[1::2], strict=True)
        return [decode_event(namespace, session_id, body, result) for body, result in pairs if body is not None]

    async def _session(self, tenant: str, namespace: str, session_id: str) -> SessionRecord | None:
        with redis_errors("event store"):
            raw = await self._client.hgetall(_Keys(tenant, namespace, session_id).s("rec"))
        return _record(namespace, session_id, raw)

    async def _read(self, pairs: Sequence[tuple[str, str]], tenant: str) -> list[SessionRecord]:
        if not pairs:
            return []
        with redis_errors("event store"):
            raws = await self._lua_records(keys=[_Keys(tenant, ns, sid).s("rec") for ns, sid in pairs])
        records = [_record(ns, sid, raw) for (ns, sid), raw in zip(pairs, raws, strict=True)]
        return [r for r in records if r is not None]

    async def _sessions(
        self, tenant: str, namespace: str, status: SessionStatus | None, after: str | None, limit: int
    ) -> list[SessionRecord]:
        index = _Keys(tenant, namespace, "-").n(status or "all")
        with redis_errors("event store"):
            found = await self._client.zrangebylex(index, _after(after), "+", 0, limit)
        return await self._read([(namespace, _text(sid)) for sid in found], tenant)

    async def _start_session(
        self, tenant: str, namespace: str, session_id: str, goal: str | None, at_us: int
    ) -> SessionRecord:
        keys = _Keys(tenant, namespace, session_id)
        await self._note_tenant(tenant)
        args: list[str | int] = [session_id, keys.member, at_us, "0" if goal is None else "1", goal or ""]
        with redis_errors("event store"):
            raw = await self._lua_start(keys=keys.lifecycle(), args=args)
        record = _record(namespace, session_id, raw)
        assert record is not None
        return record

    async def _mark_extracted(self, tenant: str, namespace: str, session_id: str, through: str) -> None:
        with redis_errors("event store"):
            await self._lua_mark(keys=[_Keys(tenant, namespace, session_id).s("rec")], args=[through])

    async def _end_session(
        self, tenant: str, namespace: str, session_id: str, at_us: int, reason: str, archive: str | None
    ) -> SessionRecord | None:
        keys = _Keys(tenant, namespace, session_id)
        args: list[str | int] = [session_id, keys.member, at_us, reason, archive or ""]
        with redis_errors("event store"):
            raw = await self._lua_end(keys=keys.lifecycle(), args=args)
        return None if raw is None else _record(namespace, session_id, raw)

    async def _idle_sessions(self, tenant: str, before_us: int, limit: int) -> list[SessionRecord]:
        idle = _Keys(tenant, "-", "-").tag + ":idle"
        with redis_errors("event store"):
            found = await self._client.zrangebyscore(idle, "-inf", f"({before_us}", 0, limit)
        pairs = [tuple(json.loads(_text(member))) for member in found]
        records = await self._read([(ns, sid) for ns, sid in pairs], tenant)
        return [r for r in records if r.status == "active" and micros(r.last_event_at) < before_us]

    async def tenants(self) -> list[str]:
        with redis_errors("event store"):
            found = await self._client.smembers(_TENANTS)
        return sorted(_text(t) for t in found)

    async def _whole(self, script: Any, keys: _Keys, *own: str | int) -> list[int]:
        """Run a whole-session script (with its own arguments) with every task key of the session declared
        (re-read if one appears)."""
        for _ in range(_ATTEMPTS):
            with redis_errors("event store"):
                tasks = sorted(_text(t) for t in await self._client.smembers(keys.s("tasks")))
                reply = await script(keys=keys.whole(tasks), args=[keys.session_id, keys.member, *own, *tasks])
            if reply != -1:
                return [int(x) for x in reply]
        raise BackendUnavailable("event store (redis): too many concurrent changes of one session")

    async def _purge(self, tenant: str, namespace: str) -> EventCounts:
        index = _Keys(tenant, namespace, "-").n("all")
        removed = EventCounts()
        while True:
            with redis_errors("event store"):
                found = await self._client.zrange(index, 0, _BATCH - 1)
            if not found:
                return removed
            for sid in found:
                events, had = await self._whole(self._lua_drop, _Keys(tenant, namespace, _text(sid)))
                removed += EventCounts(events, had)

    async def _erase_subject(self, tenant: str, subject: str) -> tuple[EventCounts, list[Pair]]:
        probe = ',"subject":' + model.dump_json(subject, "subject") + ',"request":'  # as `model.encode_event` writes it
        removed, touched = EventCounts(), []
        for namespace, session_id in await self._sessions_with_events(tenant):
            keys = _Keys(tenant, namespace, session_id)
            events, sessions = await self._whole(self._lua_erase, keys, probe, subject)
            if events:
                removed += EventCounts(events, sessions)
                touched.append((namespace, session_id))
        return removed, touched

    async def _sessions_with_events(self, tenant: str) -> list[Pair]:
        """(namespace, session id) of every session of the tenant that holds events, sorted: its `S:ids` keys,
        found by SCAN (on every primary of a cluster). A key counts only if it is exactly the prefix, two
        percent-encoded parts (neither holds a ':') and `ids`, so no task key and no other tenant's key does."""
        prefix = f"{_Keys(tenant, '-', '-').tag}:s:"
        found: set[Pair] = set()
        with redis_errors("event store"):
            async for raw in self._client.scan_iter(match=_glob_escaped(prefix) + "*:ids", count=_SCAN_COUNT):
                key = _text(raw)
                parts = key[len(prefix) :].split(":") if key.startswith(prefix) else []
                if len(parts) == 3 and parts[2] == "ids":
                    found.add((unquote(parts[0]), unquote(parts[1])))
        return sorted(found)

    async def _import(
        self, tenant: str, events: Sequence[Event], sessions: Sequence[SessionRecord], unlisted: set[Pair]
    ) -> EventCounts:
        await self._note_tenant(tenant)
        touched: set[Pair] = set()
        for pair in unlisted:
            with redis_errors("event store"):
                if not await self._client.exists(_Keys(tenant, *pair).s("rec")):
                    touched.add(pair)
        new_sessions = 0
        for record in sessions:
            keys = _Keys(tenant, record.namespace, record.session_id)
            with redis_errors("event store"):
                new_sessions += int(await self._lua_put(keys=keys.lifecycle(), args=_put_args(keys, record)))
        new_events = 0
        for event in events:
            keys = _Keys(tenant, event.namespace, event.session_id)
            touch = (event.namespace, event.session_id) in touched
            new_events += len(await self._store(keys, event, bind=False, touch=touch)) == 1
        return EventCounts(new_events, new_sessions)

    async def _expire(self, before_us: int) -> EventCounts:
        dropped = EventCounts()
        for tenant in await self.tenants():
            retain = _Keys(tenant, "-", "-").tag + ":retain"
            while True:
                with redis_errors("event store"):
                    found = await self._client.zrangebyscore(retain, "-inf", f"({before_us}", 0, _BATCH)
                if not found:
                    break
                for member in found:
                    keys = _Keys(tenant, *json.loads(_text(member)))
                    events, sessions = await self._whole(self._lua_trim, keys, before_us)
                    dropped += EventCounts(events, sessions)
        return dropped


def _put_args(keys: _Keys, record: SessionRecord) -> list[str | int]:
    ended = "" if record.ended_at is None else str(micros(record.ended_at))
    last = micros(record.last_event_at)
    fields: list[str | int] = ["status", record.status, "started", micros(record.started_at), "last", last]
    fields += ["events", record.events]
    optional = {
        "goal": record.goal,
        "ended": ended or None,
        "through": record.extracted_through,
        "archive": None if record.archive is None else model.dump_json(record.archive, "archive"),
        "reason": record.end_reason,
    }
    fields += [item for name, value in optional.items() if value is not None for item in (name, value)]
    return [keys.session_id, keys.member, record.status, last, ended, *fields]

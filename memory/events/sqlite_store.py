"""`SqliteEventStore`: the embedded `EventStore`, one sqlite file (e.g. `<data_dir>/events.sqlite3`).

It owns every SQL statement of the event store; the file's schema, its opening and the connection the statements
run on are `memory.events.sqlite_file`. Each write is one transaction, so an append and its session touch, or an
end and its check that the session was active, are atomic. Erasing a subject is one transaction, then a WAL
checkpoint (as a purge), so no erased text stays in the log.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from memory.events import model
from memory.events.model import Event, EventCounts, SessionRecord, SessionStatus, decode_event, from_micros, micros
from memory.events.sqlite_file import SqliteConnection, open_file, transaction
from memory.events.store import EventStore, Pair

_EXPIRE_BATCH = 1000

_SESSION_COLUMNS = (
    "namespace, session_id, status, goal, started_us, last_event_us, ended_us, events, extracted_through, archive,"
    " end_reason"
)
_KEY = "tenant = ? AND namespace = ? AND session_id = ?"
# Create the record (active) or touch it: active again, last_event_at moves forward, `events` counts up.
_TOUCH = """
INSERT INTO sessions (tenant, namespace, session_id, status, started_us, last_event_us, events)
VALUES (?, ?, ?, 'active', ?, ?, ?)
ON CONFLICT DO UPDATE SET status = 'active', ended_us = NULL, end_reason = NULL,
    last_event_us = MAX(last_event_us, excluded.last_event_us), events = events + excluded.events
"""
_INSERT_EVENT = """
INSERT OR IGNORE INTO events
    (tenant, namespace, session_id, id, task_id, type, call_id, recorded_us, body, result, request_key)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""

Key = tuple[str, str, str]


def _session_of(row: Sequence[Any]) -> SessionRecord:
    return SessionRecord(
        namespace=row[0],
        session_id=row[1],
        status=row[2],
        goal=row[3],
        started_at=from_micros(row[4]),
        last_event_at=from_micros(row[5]),
        ended_at=None if row[6] is None else from_micros(row[6]),
        events=row[7],
        extracted_through=row[8],
        archive=None if row[9] is None else json.loads(row[9]),
        end_reason=row[10],
    )


def _insert_event(conn: sqlite3.Connection, tenant: str, event: Event) -> bool:
    row = (tenant, event.namespace, event.session_id, event.id, event.task_id, event.type, event.call_id)
    values = (micros(event.recorded_at), model.encode_event(event), model.result_of(event), model.request_key(event))
    return conn.execute(_INSERT_EVENT, (*row, *values)).rowcount == 1


def _find(conn: sqlite3.Connection, key: Key, where: str, value: str) -> Event | None:
    """The first event (in id order) of the session whose column `where` holds `value`."""
    query = f"SELECT body, result FROM events WHERE {_KEY} AND {where} = ? ORDER BY id LIMIT 1"
    found = conn.execute(query, (*key, value)).fetchone()
    return None if found is None else decode_event(key[1], key[2], found[0], found[1])


def _retried(conn: sqlite3.Connection, key: Key, event: Event) -> Event | None:
    """What an earlier append of this event stored (by its id, or by its request), if any: the event itself or
    the call its result was bound to."""
    found = _find(conn, key, "id", event.id) or _find(conn, key, "result_id", event.id)
    if found is None and (request := model.request_key(event)) is not None:
        found = _find(conn, key, "request_key", request) or _find(conn, key, "result_request_key", request)
    return found


class SqliteEventStore(EventStore):
    """`EventStore` on a sqlite file; see the module docstring."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self._db = SqliteConnection(connection)

    @classmethod
    def open(
        cls,
        path: Path,
        *,
        busy_timeout_seconds: float = 5.0,
        synchronous: Literal["FULL", "NORMAL"] = "FULL",
    ) -> SqliteEventStore:
        """Open (creating it and its directory if needed) the store at `path`."""
        return cls(open_file(path, busy_timeout_seconds, synchronous))

    async def _append(self, tenant: str, event: Event) -> Event:
        key = (tenant, event.namespace, event.session_id)
        bound = model.binding_of(event)

        def work(conn: sqlite3.Connection) -> Event:
            with transaction(conn):
                prior = _retried(conn, key, event)
                if prior is not None:
                    return prior  # a retry: what the first append stored, unchanged
                call = None
                if bound is not None:
                    call = conn.execute(
                        f"SELECT id, result FROM events WHERE {_KEY} AND type = 'tool_call' AND call_id = ?"
                        " ORDER BY id DESC LIMIT 1",
                        (*key, event.call_id),
                    ).fetchone()
                recorded = micros(event.recorded_at)
                if call is not None and call[1] is None:
                    conn.execute(
                        f"UPDATE events SET result = ?, result_id = ?, result_request_key = ? WHERE {_KEY} AND id = ?",
                        (bound, event.id, model.request_key(event), *key, call[0]),
                    )
                    conn.execute(_TOUCH, (*key, recorded, recorded, 0))
                    stored = _find(conn, key, "id", call[0])
                    assert stored is not None
                    return stored
                _insert_event(conn, key[0], event)
                conn.execute(_TOUCH, (*key, recorded, recorded, 1))
                return event

        return await self._db.call(work)

    async def _events(
        self, tenant: str, namespace: str, session_id: str, task_id: str | None, after: str | None, limit: int
    ) -> list[Event]:
        task = "" if task_id is None else " AND task_id = ?"
        args = (tenant, namespace, session_id, *(() if task_id is None else (task_id,)), after or "", limit)
        query = f"SELECT body, result FROM events WHERE {_KEY}{task} AND id > ? ORDER BY id LIMIT ?"
        rows = await self._db.call(lambda conn: conn.execute(query, args).fetchall())
        return [decode_event(namespace, session_id, body, result) for body, result in rows]

    async def _session(self, tenant: str, namespace: str, session_id: str) -> SessionRecord | None:
        return await self._db.call(lambda conn: self._record(conn, (tenant, namespace, session_id)))

    @staticmethod
    def _record(conn: sqlite3.Connection, key: Key) -> SessionRecord | None:
        row = conn.execute(f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE {_KEY}", key).fetchone()
        return None if row is None else _session_of(row)

    async def _sessions(
        self, tenant: str, namespace: str, status: SessionStatus | None, after: str | None, limit: int
    ) -> list[SessionRecord]:
        where = "" if status is None else " AND status = ?"
        args = (tenant, namespace, *(() if status is None else (status,)), after or "", limit)
        query = (
            f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE tenant = ? AND namespace = ?{where}"
            " AND session_id > ? ORDER BY session_id LIMIT ?"
        )
        rows = await self._db.call(lambda conn: conn.execute(query, args).fetchall())
        return [_session_of(row) for row in rows]

    async def _start_session(
        self, tenant: str, namespace: str, session_id: str, goal: str | None, at_us: int
    ) -> SessionRecord:
        key = (tenant, namespace, session_id)

        def work(conn: sqlite3.Connection) -> SessionRecord:
            with transaction(conn):
                conn.execute(
                    "INSERT INTO sessions (tenant, namespace, session_id, status, goal, started_us, last_event_us,"
                    " events) VALUES (?, ?, ?, 'active', ?, ?, ?, 0) ON CONFLICT DO UPDATE SET status = 'active',"
                    " ended_us = NULL, end_reason = NULL, goal = COALESCE(excluded.goal, goal),"
                    " last_event_us = MAX(last_event_us, excluded.last_event_us)",
                    (*key, goal, at_us, at_us),
                )
                record = self._record(conn, key)
            assert record is not None
            return record

        return await self._db.call(work)

    async def _mark_extracted(self, tenant: str, namespace: str, session_id: str, through: str) -> None:
        query = (
            f"UPDATE sessions SET extracted_through = ? WHERE {_KEY}"
            " AND (extracted_through IS NULL OR extracted_through < ?)"
        )
        await self._db.call(lambda conn: conn.execute(query, (through, tenant, namespace, session_id, through)))

    async def _end_session(
        self, tenant: str, namespace: str, session_id: str, at_us: int, reason: str, archive: str | None
    ) -> SessionRecord | None:
        key, values = (tenant, namespace, session_id), (at_us, reason, archive)

        def work(conn: sqlite3.Connection) -> SessionRecord | None:
            with transaction(conn):
                ended = conn.execute(
                    "UPDATE sessions SET status = 'ended', ended_us = ?, end_reason = ?,"
                    f" archive = COALESCE(?, archive) WHERE {_KEY} AND status = 'active'",
                    (*values, *key),
                ).rowcount
                return self._record(conn, key) if ended == 1 else None

        return await self._db.call(work)

    async def _idle_sessions(self, tenant: str, before_us: int, limit: int) -> list[SessionRecord]:
        query = (
            f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE tenant = ? AND status = 'active' AND last_event_us < ?"
            " ORDER BY last_event_us, namespace, session_id LIMIT ?"
        )
        args = (tenant, before_us, limit)
        rows = await self._db.call(lambda conn: conn.execute(query, args).fetchall())
        return [_session_of(row) for row in rows]

    async def tenants(self) -> list[str]:
        rows = await self._db.call(lambda conn: conn.execute("SELECT DISTINCT tenant FROM sessions").fetchall())
        return sorted(row[0] for row in rows)

    async def _purge(self, tenant: str, namespace: str) -> EventCounts:
        where = (tenant, namespace)

        def work(conn: sqlite3.Connection) -> EventCounts:
            with transaction(conn):
                events = conn.execute("DELETE FROM events WHERE tenant = ? AND namespace = ?", where).rowcount
                sessions = conn.execute("DELETE FROM sessions WHERE tenant = ? AND namespace = ?", where).rowcount
            # the write-ahead log still holds the pages as they were before: copy it back and empty it (an erasure)
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            return EventCounts(events, sessions)

        return await self._db.call(work)

    async def _erase_subject(self, tenant: str, subject: str) -> tuple[EventCounts, list[Pair]]:
        probe = '"subject":' + model.dump_json(subject, "subject")

        def work(conn: sqlite3.Connection) -> tuple[EventCounts, list[Pair]]:
            with transaction(conn):
                # a body the subject recorded holds `probe` (`model.encode_event`), which narrows the scan; the
                # decoded body decides (the text may also be in another event's metadata)
                candidates = conn.execute(
                    "SELECT rowid, namespace, session_id, body FROM events WHERE tenant = ? AND instr(body, ?) > 0",
                    (tenant, probe),
                ).fetchall()
                doomed = [row[:3] for row in candidates if json.loads(row[3])["subject"] == subject]
                conn.executemany("DELETE FROM events WHERE rowid = ?", [(row[0],) for row in doomed])
                per_session = Counter((namespace, session_id) for _, namespace, session_id in doomed)
                sessions = 0
                for (namespace, session_id), count in per_session.items():
                    key = (tenant, namespace, session_id)
                    conn.execute(f"UPDATE sessions SET events = MAX(events - ?, 0) WHERE {_KEY}", (count, *key))
                    sessions += conn.execute(
                        f"DELETE FROM sessions WHERE {_KEY} AND NOT EXISTS (SELECT 1 FROM events WHERE {_KEY})",
                        (*key, *key),
                    ).rowcount
                # a result the subject recorded, bound into another subject's call, stays with that call; its
                # request is forgotten, so the subject's next append with that request id is stored anew
                bound = conn.execute(
                    "SELECT rowid, result_request_key FROM events WHERE tenant = ? AND result_request_key IS NOT NULL",
                    (tenant,),
                ).fetchall()
                conn.executemany(
                    "UPDATE events SET result_request_key = NULL WHERE rowid = ?",
                    [(rowid,) for rowid, key in bound if key.partition(" ")[2] == subject],
                )
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # no erased text left in the write-ahead log
            return EventCounts(len(doomed), sessions), sorted(per_session)

        return await self._db.call(work)

    async def _import(
        self, tenant: str, events: Sequence[Event], sessions: Sequence[SessionRecord], unlisted: set[Pair]
    ) -> EventCounts:
        def work(conn: sqlite3.Connection) -> EventCounts:
            with transaction(conn):
                touched = {pair for pair in unlisted if self._record(conn, (tenant, *pair)) is None}
                new_sessions = sum(conn.execute(*_put_session(tenant, record)).rowcount for record in sessions)
                new_events = 0
                for event in events:
                    if _insert_event(conn, tenant, event):
                        new_events += 1
                        if (event.namespace, event.session_id) in touched:
                            recorded = micros(event.recorded_at)
                            conn.execute(_TOUCH, (tenant, event.namespace, event.session_id, recorded, recorded, 1))
            return EventCounts(new_events, new_sessions)

        return await self._db.call(work)

    async def _expire(self, before_us: int) -> EventCounts:
        def trim(conn: sqlite3.Connection) -> int:
            with transaction(conn):
                return conn.execute(
                    "DELETE FROM events WHERE rowid IN (SELECT e.rowid FROM events e JOIN sessions s ON"
                    " s.tenant = e.tenant AND s.namespace = e.namespace AND s.session_id = e.session_id"
                    " WHERE e.recorded_us < ? AND s.status = 'ended' LIMIT ?)",
                    (before_us, _EXPIRE_BATCH),
                ).rowcount

        def drop_sessions(conn: sqlite3.Connection) -> int:
            with transaction(conn):
                conn.execute(
                    "UPDATE sessions SET archive = NULL WHERE status = 'ended' AND ended_us < ?"
                    " AND archive IS NOT NULL",
                    (before_us,),
                )
                return conn.execute(
                    "DELETE FROM sessions WHERE status = 'ended' AND ended_us < ? AND NOT EXISTS (SELECT 1 FROM"
                    " events e WHERE e.tenant = sessions.tenant AND e.namespace = sessions.namespace"
                    " AND e.session_id = sessions.session_id)",
                    (before_us,),
                ).rowcount

        dropped = 0
        while True:  # in batches, each its own transaction, so requests are served in between
            batch = await self._db.call(trim)
            dropped += batch
            if batch < _EXPIRE_BATCH:
                break
        return EventCounts(dropped, await self._db.call(drop_sessions))

    async def ping(self) -> None:
        await self._db.call(lambda conn: conn.execute("SELECT 1").fetchone())

    async def close(self) -> None:
        await self._db.close()


def _put_session(tenant: str, record: SessionRecord) -> tuple[str, tuple[Any, ...]]:
    """The statement that stores an imported session record unless one exists."""
    ended = None if record.ended_at is None else micros(record.ended_at)
    archive = None if record.archive is None else model.dump_json(record.archive, "archive")
    values: tuple[Any, ...] = (tenant, record.namespace, record.session_id, record.status, record.goal)
    values += (micros(record.started_at), micros(record.last_event_at), ended, record.events)
    values += (record.extracted_through, archive, record.end_reason)
    marks = ", ".join("?" * len(values))
    return f"INSERT OR IGNORE INTO sessions (tenant, {_SESSION_COLUMNS}) VALUES ({marks})", values

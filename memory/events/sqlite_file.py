"""The sqlite file of `SqliteEventStore` (memory/events/sqlite_store.py): its schema, how it is opened, the
transaction every write is, and `SqliteConnection`, the one connection the store runs its statements on.

The file is opened in WAL mode with `synchronous=FULL` (a committed append survives a process kill and a power
cut) and `secure_delete` (a deleted row's bytes are overwritten). Its one connection is used by one thread at a
time under a lock, and every call runs off the event loop through `anyio.to_thread`. Each write is one
`BEGIN IMMEDIATE` transaction (`transaction`). Every sqlite error (locked past the busy timeout, disk full, I/O) is
raised as `BackendUnavailable`.

Schema (rows carry the tenant of the caller's scope, never a tenant the caller spells):

- `events`: one row per stored event: the key columns (tenant, namespace, session_id, id), the columns queries
  filter on (task_id, type, call_id, recorded_us), `body` (the event's JSON, `model.encode_event`), `result` (the
  bound tool result's JSON) and `result_id` (the id of the tool_result that was bound, so its retry finds it),
  `request_key` and `result_request_key` (`model.request_key` of the event and of the bound result: the request
  index a retry under a new id finds them by, written in the same transaction).
- `sessions`: one row per session record; times as integer microseconds, `archive` as JSON.

`user_version` 2; a file of version 1 (no request index) gets the two columns when opened, `request_key` filled
from each event's JSON.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal, TypeVar

import anyio.to_thread

from memory.errors import BackendUnavailable

T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    tenant TEXT NOT NULL, namespace TEXT NOT NULL, session_id TEXT NOT NULL, id TEXT NOT NULL,
    task_id TEXT, type TEXT NOT NULL, call_id TEXT, recorded_us INTEGER NOT NULL,
    body TEXT NOT NULL, result TEXT, result_id TEXT, request_key TEXT, result_request_key TEXT,
    UNIQUE (tenant, namespace, session_id, id)
);
CREATE INDEX IF NOT EXISTS events_by_task ON events (tenant, namespace, session_id, task_id, id);
CREATE INDEX IF NOT EXISTS events_by_call ON events (tenant, namespace, session_id, call_id, id)
    WHERE type = 'tool_call';
CREATE INDEX IF NOT EXISTS events_by_result ON events (tenant, namespace, session_id, result_id)
    WHERE result_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS events_by_age ON events (recorded_us);
CREATE TABLE IF NOT EXISTS sessions (
    tenant TEXT NOT NULL, namespace TEXT NOT NULL, session_id TEXT NOT NULL,
    status TEXT NOT NULL, goal TEXT, started_us INTEGER NOT NULL, last_event_us INTEGER NOT NULL,
    ended_us INTEGER, events INTEGER NOT NULL, extracted_through TEXT, archive TEXT, end_reason TEXT,
    PRIMARY KEY (tenant, namespace, session_id)
);
CREATE INDEX IF NOT EXISTS sessions_by_status ON sessions (tenant, namespace, status, session_id);
CREATE INDEX IF NOT EXISTS sessions_by_idle ON sessions (tenant, status, last_event_us);
CREATE INDEX IF NOT EXISTS sessions_by_end ON sessions (status, ended_us);
"""
# Version 2: the request index (a file of version 1 gets its columns first, `_add_request_index`).
_REQUEST_INDEX = """
CREATE INDEX IF NOT EXISTS events_by_request ON events (tenant, namespace, session_id, request_key, id)
    WHERE request_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS events_by_result_request ON events (tenant, namespace, session_id, result_request_key)
    WHERE result_request_key IS NOT NULL;
PRAGMA user_version = 2;
"""


def _unavailable(exc: Exception) -> BackendUnavailable:
    return BackendUnavailable(f"event store (sqlite) unavailable: {type(exc).__name__}: {exc}")


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """One write: `BEGIN IMMEDIATE`, committed when the block ends, rolled back when it raises."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _add_request_index(conn: sqlite3.Connection) -> None:
    """Bring a file of version 1 to version 2: the request index columns, `request_key` filled from the events'
    JSON (a request id has no space: `model.request_key`); then the indexes, on any file."""
    with transaction(conn):
        columns = {row[1] for row in conn.execute("PRAGMA table_info(events)")}
        if "request_key" not in columns:
            conn.execute("ALTER TABLE events ADD COLUMN request_key TEXT")
            conn.execute("ALTER TABLE events ADD COLUMN result_request_key TEXT")
            conn.execute(
                "UPDATE events SET request_key = json_extract(body, '$.request') || ' ' ||"
                " json_extract(body, '$.subject') WHERE json_extract(body, '$.request') IS NOT NULL"
            )
    conn.executescript(_REQUEST_INDEX)


def open_file(path: Path, busy_timeout_seconds: float, synchronous: Literal["FULL", "NORMAL"]) -> sqlite3.Connection:
    """A connection to the file at `path` (created, with its directory, if needed), its schema up to date."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=busy_timeout_seconds)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute(f"PRAGMA synchronous = {synchronous}")
        conn.execute("PRAGMA secure_delete = ON")  # a deleted row's bytes are overwritten, not left in free pages
        conn.executescript(_SCHEMA)
        _add_request_index(conn)
    except (sqlite3.Error, OSError) as exc:
        raise _unavailable(exc) from exc
    return conn


class SqliteConnection:
    """The store's one connection: `call` runs a piece of work on it off the event loop, one thread at a time."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self._conn: sqlite3.Connection | None = connection
        self._lock = threading.Lock()

    def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock:
            if self._conn is None:
                raise BackendUnavailable("event store (sqlite) is closed")
            try:
                return work(self._conn)
            except sqlite3.Error as exc:
                raise _unavailable(exc) from exc

    async def call(self, work: Callable[[sqlite3.Connection], T]) -> T:
        return await anyio.to_thread.run_sync(self._run, work)

    async def close(self) -> None:
        def work() -> None:
            with self._lock:
                if self._conn is not None:
                    self._conn.close()
                    self._conn = None

        await anyio.to_thread.run_sync(work)

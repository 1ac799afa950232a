"""`InProcessWorkingMemory`: working memory for the embedded mode, in a dict keyed like the Redis keys.

Sessions are keyed by tenant, namespace and session id, so two tenants (or two namespaces) never share one. A
session expires `ttl_seconds` after its last update, measured on the injected clock. A session keeps the subjects
that wrote into it (`sessions_written_by`) for as long as it lives.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import anyio

from memory.clock import Clock
from memory.models import Turn, WorkingMemory
from memory.ports import SessionKey, WorkingMemoryStore


@dataclass
class _Session:
    state: dict[str, Any] = field(default_factory=dict)
    turns: list[Turn] = field(default_factory=list)
    expires_at: datetime | None = None
    writers: set[str] = field(default_factory=set)  # the subjects that appended a turn or updated the state


def merge_state(current: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    """Deep-merge `update` into a copy of `current`; a `None` value deletes the key."""
    merged = copy.deepcopy(current)
    for key, value in update.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge_state(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


class InProcessWorkingMemory(WorkingMemoryStore):
    """`WorkingMemoryStore` in a dict of one process; see the module docstring."""

    def __init__(self, clock: Clock, max_sessions: int = 100_000) -> None:
        super().__init__(clock)
        self._sessions: dict[SessionKey, _Session] = {}
        self._lock = anyio.Lock()
        self._max_sessions = max_sessions

    def _live(self, key: SessionKey) -> _Session | None:
        session = self._sessions.get(key)
        if session is None:
            return None
        if session.expires_at is not None and session.expires_at <= self._clock.now():
            del self._sessions[key]
            return None
        return session

    def _view(self, key: SessionKey, session: _Session) -> WorkingMemory:
        assert session.expires_at is not None
        return WorkingMemory(
            session_id=key.session_id,
            namespace=key.namespace,
            state=copy.deepcopy(session.state),
            turns=list(session.turns),
            expires_at=session.expires_at,
        )

    def _session_for_write(self, key: SessionKey) -> _Session:
        session = self._live(key)
        if session is None:
            if len(self._sessions) >= self._max_sessions:
                self._drop_expired()
            session = self._sessions[key] = _Session()
        return session

    def _drop_expired(self) -> None:
        now = self._clock.now()
        for key in [k for k, s in self._sessions.items() if s.expires_at is not None and s.expires_at <= now]:
            del self._sessions[key]

    async def _get(self, key: SessionKey) -> WorkingMemory | None:
        async with self._lock:
            session = self._live(key)
            return None if session is None else self._view(key, session)

    async def _append_turn(
        self, key: SessionKey, turn: Turn, window: int, ttl_seconds: int, subject: str | None
    ) -> tuple[WorkingMemory, list[Turn]]:
        async with self._lock:
            session = self._session_for_write(key)
            session.turns.append(turn)
            if subject is not None:
                session.writers.add(subject)
            overflow = max(0, len(session.turns) - window)
            evicted, session.turns = session.turns[:overflow], session.turns[overflow:]
            session.expires_at = self._clock.now() + timedelta(seconds=ttl_seconds)
            return self._view(key, session), evicted

    async def _update_state(
        self, key: SessionKey, state: dict[str, Any], merge: bool, ttl_seconds: int, subject: str | None
    ) -> WorkingMemory:
        async with self._lock:
            session = self._session_for_write(key)
            session.state = merge_state(session.state, state) if merge else copy.deepcopy(state)
            if subject is not None:
                session.writers.add(subject)
            session.expires_at = self._clock.now() + timedelta(seconds=ttl_seconds)
            return self._view(key, session)

    async def _take(self, key: SessionKey) -> WorkingMemory | None:
        async with self._lock:
            session = self._live(key)
            if session is None:
                return None
            del self._sessions[key]
            return self._view(key, session)

    async def _purge(self, tenant: str, namespace: str) -> int:
        async with self._lock:
            now = self._clock.now()
            doomed = [key for key in self._sessions if key.tenant == tenant and key.namespace == namespace]
            removed = 0
            for key in doomed:
                session = self._sessions.pop(key)
                if session.expires_at is None or session.expires_at > now:
                    removed += 1
            return removed

    async def _sessions_written_by(self, tenant: str, subject: str) -> list[tuple[str, str]]:
        async with self._lock:
            now = self._clock.now()
            return sorted(
                (key.namespace, key.session_id)
                for key, session in self._sessions.items()
                if key.tenant == tenant
                and subject in session.writers
                and (session.expires_at is None or session.expires_at > now)
            )

    async def ping(self) -> None:
        return None

    async def close(self) -> None:
        self._sessions.clear()

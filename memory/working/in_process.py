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
from memory.errors import NamespaceForbidden
from memory.models import Turn, WorkingMemory
from memory.scope import NamespaceScope, validate_namespace


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


class InProcessWorkingMemory:
    def __init__(self, clock: Clock, max_sessions: int = 100_000) -> None:
        self._clock = clock
        self._sessions: dict[tuple[str, str, str], _Session] = {}
        self._lock = anyio.Lock()
        self._max_sessions = max_sessions

    def _key(self, scope: NamespaceScope, namespace: str, session_id: str, write: bool) -> tuple[str, str, str]:
        allowed = scope.can_write(namespace) if write else scope.can_read(namespace)
        if not allowed:
            raise NamespaceForbidden(f"namespace not {'writable' if write else 'readable'} with this token")
        return (scope.tenant, namespace, session_id)

    def _live(self, key: tuple[str, str, str]) -> _Session | None:
        session = self._sessions.get(key)
        if session is None:
            return None
        if session.expires_at is not None and session.expires_at <= self._clock.now():
            del self._sessions[key]
            return None
        return session

    def _view(self, key: tuple[str, str, str], session: _Session) -> WorkingMemory:
        assert session.expires_at is not None
        return WorkingMemory(
            session_id=key[2],
            namespace=key[1],
            state=copy.deepcopy(session.state),
            turns=list(session.turns),
            expires_at=session.expires_at,
        )

    def _session_for_write(self, key: tuple[str, str, str]) -> _Session:
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

    async def get(self, scope: NamespaceScope, namespace: str, session_id: str) -> WorkingMemory | None:
        key = self._key(scope, namespace, session_id, write=False)
        async with self._lock:
            session = self._live(key)
            return None if session is None else self._view(key, session)

    async def append_turn(
        self,
        scope: NamespaceScope,
        namespace: str,
        session_id: str,
        turn: Turn,
        window: int,
        ttl_seconds: int,
        *,
        subject: str | None = None,
    ) -> tuple[WorkingMemory, list[Turn]]:
        key = self._key(scope, namespace, session_id, write=True)
        async with self._lock:
            session = self._session_for_write(key)
            session.turns.append(turn)
            if subject is not None:
                session.writers.add(subject)
            overflow = max(0, len(session.turns) - window)
            evicted, session.turns = session.turns[:overflow], session.turns[overflow:]
            session.expires_at = self._clock.now() + timedelta(seconds=ttl_seconds)
            return self._view(key, session), evicted

    async def update_state(
        self,
        scope: NamespaceScope,
        namespace: str,
        session_id: str,
        state: dict[str, Any],
        merge: bool,
        ttl_seconds: int,
        *,
        subject: str | None = None,
    ) -> WorkingMemory:
        key = self._key(scope, namespace, session_id, write=True)
        async with self._lock:
            session = self._session_for_write(key)
            session.state = merge_state(session.state, state) if merge else copy.deepcopy(state)
            if subject is not None:
                session.writers.add(subject)
            session.expires_at = self._clock.now() + timedelta(seconds=ttl_seconds)
            return self._view(key, session)

    async def take(self, scope: NamespaceScope, namespace: str, session_id: str) -> WorkingMemory | None:
        key = self._key(scope, namespace, session_id, write=True)
        async with self._lock:
            session = self._live(key)
            if session is None:
                return None
            del self._sessions[key]
            return self._view(key, session)

    async def purge(self, scope: NamespaceScope, namespace: str) -> int:
        """Remove every session of one namespace of the admin scope's tenant; returns how many live ones there
        were (an expired session, already gone for every read, is dropped without being counted)."""
        if not scope.admin:
            raise NamespaceForbidden("purging a namespace needs an admin scope")
        validate_namespace(namespace)
        async with self._lock:
            now = self._clock.now()
            doomed = [key for key in self._sessions if key[0] == scope.tenant and key[1] == namespace]
            removed = 0
            for key in doomed:
                session = self._sessions.pop(key)
                if session.expires_at is None or session.expires_at > now:
                    removed += 1
            return removed

    async def sessions_written_by(self, scope: NamespaceScope, subject: str) -> list[tuple[str, str]]:
        """The (namespace, session id) of every live session of the admin scope's tenant that `subject` wrote
        into, sorted."""
        if not scope.admin:
            raise NamespaceForbidden("listing the sessions a subject wrote needs an admin scope")
        async with self._lock:
            now = self._clock.now()
            return sorted(
                (key[1], key[2])
                for key, session in self._sessions.items()
                if key[0] == scope.tenant
                and subject in session.writers
                and (session.expires_at is None or session.expires_at > now)
            )

    async def ping(self) -> None:
        return None

    async def close(self) -> None:
        self._sessions.clear()

"""`WorkingMemoryBase`: the half of every `WorkingMemoryStore` (memory/ports.py) that does not depend on the backend.

Each call is checked here once: the scope's grant of the namespace for the access (or an admin scope, for purge
and `sessions_written_by`) and the namespace's form. The backend then gets a narrow primitive (the abstract `_`
methods) naming the session by its `SessionKey`: the tenant from the scope, the checked namespace and the session
id. A backend (`InProcessWorkingMemory`, `RedisWorkingMemory`) implements the primitives, `ping` and `close`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, NamedTuple

from memory.clock import Clock
from memory.models import Turn, WorkingMemory
from memory.ports import WorkingMemoryStore
from memory.scope import NamespaceScope, validate_namespace
from memory.validation import check_admin, check_granted


class SessionKey(NamedTuple):
    """One session of one tenant: what every backend keys a session by."""

    tenant: str
    namespace: str
    session_id: str


def check_access(scope: NamespaceScope, namespace: str, session_id: str, *, write: bool) -> SessionKey:
    """The session's key if the scope grants its namespace for this access; the check of every session call."""
    return SessionKey(scope.tenant, check_granted(scope, namespace, write=write), session_id)


class WorkingMemoryBase(WorkingMemoryStore, ABC):
    """The checks of `WorkingMemoryStore`, over the backend's primitives; see the module docstring."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock

    async def get(self, scope: NamespaceScope, namespace: str, session_id: str) -> WorkingMemory | None:
        return await self._get(check_access(scope, namespace, session_id, write=False))

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
        key = check_access(scope, namespace, session_id, write=True)
        return await self._append_turn(key, turn, window, ttl_seconds, subject)

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
        key = check_access(scope, namespace, session_id, write=True)
        return await self._update_state(key, state, merge, ttl_seconds, subject)

    async def sessions_written_by(self, scope: NamespaceScope, subject: str) -> list[tuple[str, str]]:
        return await self._sessions_written_by(check_admin(scope, "listing the sessions a subject wrote"), subject)

    async def purge(self, scope: NamespaceScope, namespace: str) -> int:
        return await self._purge(check_admin(scope, "purging a namespace"), validate_namespace(namespace))

    async def take(self, scope: NamespaceScope, namespace: str, session_id: str) -> WorkingMemory | None:
        return await self._take(check_access(scope, namespace, session_id, write=True))

    # The backend's primitives: the access checked, the session named by its key.

    @abstractmethod
    async def _get(self, key: SessionKey) -> WorkingMemory | None:
        """`get`."""

    @abstractmethod
    async def _append_turn(
        self, key: SessionKey, turn: Turn, window: int, ttl_seconds: int, subject: str | None
    ) -> tuple[WorkingMemory, list[Turn]]:
        """`append_turn`."""

    @abstractmethod
    async def _update_state(
        self, key: SessionKey, state: dict[str, Any], merge: bool, ttl_seconds: int, subject: str | None
    ) -> WorkingMemory:
        """`update_state`."""

    @abstractmethod
    async def _sessions_written_by(self, tenant: str, subject: str) -> list[tuple[str, str]]:
        """`sessions_written_by` for an admin scope's tenant."""

    @abstractmethod
    async def _purge(self, tenant: str, namespace: str) -> int:
        """`purge` of a checked namespace for an admin scope's tenant."""

    @abstractmethod
    async def _take(self, key: SessionKey) -> WorkingMemory | None:
        """`take`."""

"""The engine's seams: `VectorStore`, `Embedder` and `NamespaceLocks` protocols, one implementation each per
backend, the optional `ImportanceRater` (an LLM), and `WorkingMemoryStore`, an abstract base whose subclasses are
its backends (it holds the checks every backend shares). Every store call takes a `NamespaceScope`; implementations
turn it into the tenant and namespace filter (vector store) or key prefix (working memory) themselves."""

from __future__ import annotations

import builtins
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple, Protocol

from memory.clock import Clock
from memory.models import Memory, MemoryKind, Turn, WorkingMemory
from memory.scope import NamespaceScope, validate_namespace
from memory.validation import check_admin, check_granted


@dataclass(frozen=True, slots=True)
class SparseVector:
    """A keyword (BM25) vector: term indices in increasing order and their weights, computed by the engine."""

    indices: tuple[int, ...]
    values: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class RecallFilter:
    """Which memories a search may return, beyond the scope."""

    now: datetime
    kinds: tuple[MemoryKind, ...] | None = None
    tags: tuple[str, ...] | None = None
    session_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    include_superseded: bool = False  # superseded memories too (never deleted or expired ones)
    include_archived: bool = False  # archived memories too: they have no dense vector, only keywords find them
    # recall as of this instant (`memory.recall.steps`): `until` is no later, and a superseded memory is answered
    # when its successor came after it; the stores read only `until` and `include_superseded`
    as_of: datetime | None = None
    attributes: tuple[str, ...] | None = None  # only memories stating one of these attributes (conflict checks)


@dataclass(frozen=True, slots=True)
class ScoredMemory:
    memory: Memory
    similarity: float  # cosine similarity of the memory's dense vector to the query's
    keyword: float = 0.0  # BM25 score of the memory for the query's terms (0: not among the keyword matches)
    terms: tuple[int, ...] = ()  # the term ids of its keyword vector (`search` returns them)
    vector: Sequence[float] = ()  # its stored dense vector (`search_many` returns it)


@dataclass(frozen=True, slots=True)
class NearestQuery:
    """One search of `VectorStore.search_many`: the `limit` live memories of `namespaces` nearest to `vector` by
    meaning alone that pass `flt`."""

    namespaces: tuple[str, ...]
    vector: Sequence[float]
    limit: int
    flt: RecallFilter


# A memory with its dense vector and, optionally, its keyword vector (absent: not found by keyword search).
UpsertItem = tuple[Memory, Sequence[float]] | tuple[Memory, Sequence[float], SparseVector | None]


@dataclass(frozen=True, slots=True)
class ListQuery:
    namespaces: tuple[str, ...]
    kind: MemoryKind | None
    include_deleted: bool
    limit: int
    after: str | None


class VectorStore(Protocol):
    """Memories with their dense vectors, always read and written through a scope.

    An archived memory (`archived_at` set, `memory.lifecycle.archive`) is kept whole but without its dense vector, so it
    is out of the dense index: `upsert` stores it without one and `update` drops the one it had; its keyword
    vector is kept. Upserting it again with `archived_at` unset (with a dense vector) puts it back."""

    async def upsert(self, scope: NamespaceScope, items: Sequence[UpsertItem]) -> None:
        """Insert or replace memories with their vectors (dense, and sparse when given), all at once. Every
        memory must be in a writable namespace of the scope's tenant. Replacing an existing id replaces its
        vectors too (how an update in place changes a memory's content)."""
        ...

    async def update(self, scope: NamespaceScope, memory: Memory) -> None:
        """Replace the stored fields of an existing memory (its vector is kept)."""
        ...

    async def get(self, scope: NamespaceScope, memory_id: str) -> Memory | None:
        """The memory with that id if it lies in a namespace the scope can read, deleted or not."""
        ...

    async def get_many(self, scope: NamespaceScope, memory_ids: Sequence[str]) -> list[Memory]:
        """The memories with those ids that lie in a namespace the scope can read, deleted or not, in one read
        (in no particular order; an id that names none is left out)."""
        ...

    async def find_by_hash(
        self,
        scope: NamespaceScope,
        namespace: str,
        content_hash: str,
        *,
        live_only: bool = True,
        now: datetime | None = None,
    ) -> Memory | None:
        """A memory of that namespace with the same content hash: live ones only (not deleted, not superseded)
        unless `live_only` is False; with `now`, not expired at that time."""
        ...

    async def find_by_hashes(
        self, scope: NamespaceScope, namespace: str, content_hashes: Sequence[str], *, now: datetime | None = None
    ) -> builtins.list[Memory]:
        """Every memory of that namespace whose content hash is one of `content_hashes`, whatever its status
        (live, deleted, superseded, archived; each memory's status is in its fields), in id order, in one read;
        with `now`, not those expired at that time. The first live one of a hash is what `find_by_hash` finds,
        the first of any status what it finds with `live_only=False`."""
        ...

    async def search(
        self,
        scope: NamespaceScope,
        namespaces: tuple[str, ...],
        vector: Sequence[float],
        limit: int,
        flt: RecallFilter,
        sparse: SparseVector | None = None,
        *,
        known: Mapping[str, ScoredMemory] | None = None,
    ) -> list[ScoredMemory]:
        """Memories of the given readable namespaces (() = whole tenant, admin only) that pass `flt` (live ones,
        and superseded or archived ones when it asks for them), found one of two ways.

        Without a `sparse` query (None, or one without indices), by meaning: the `limit` memories nearest to
        `vector`, best first, each hit's `similarity` its dense cosine, its `keyword` 0 and its `terms` the term ids
        of its keyword vector (recall's feedback words come from them; none for a memory stored without one).

        With a non-empty `sparse` query, by keywords alone: the best memories by BM25 (IDF over the searched
        namespaces, consolidated memories left out, or over the tenant when more than 16 are searched), best first,
        `limit` deep and at least 50, each hit's `keyword` its BM25 score; a memory without a keyword vector is not
        found. `known` names hits the caller already holds, by memory id: each comes back as held with only its
        BM25 score new, and the store reads payloads and vectors only for the others (for every hit when `known`
        is None or empty), each new hit's `similarity` the cosine of its dense vector to `vector` (0 without one,
        as for an archived memory) and its `terms` its keyword term ids."""
        ...

    async def search_many(
        self, scope: NamespaceScope, queries: Sequence[NearestQuery]
    ) -> builtins.list[builtins.list[ScoredMemory]]:
        """For each query, in order and all in one round trip, what `search` without keywords finds for it (the
        same filter and readable-namespace checks, best first), each hit also carrying its stored dense `vector`
        (its `similarity` is the engine's score)."""
        ...

    async def latest_in_session(self, scope: NamespaceScope, namespace: str, session_id: str) -> Memory | None:
        """The most recently created memory of that session in that readable namespace, deleted or not, that is
        not a fact extracted from events (`models.EXTRACTED`): the turn a new turn of the session follows."""
        ...

    async def list(self, scope: NamespaceScope, query: ListQuery) -> tuple[list[Memory], str | None]:
        """A page of memories in id order (ids are time-ordered) and the cursor of the next page."""
        ...

    async def copies_of(self, scope: NamespaceScope, origin_id: str) -> builtins.list[Memory]:
        """The linked copies (`origin_id` = the given id) in namespaces the scope can write, deleted or not."""
        ...

    async def purge(self, scope: NamespaceScope, namespace: str) -> int:
        """Hard-delete every memory of one namespace (admin scopes only); returns how many were removed."""
        ...

    async def delete(self, scope: NamespaceScope, memory_ids: Sequence[str]) -> int:
        """Hard-delete the memories with those ids in the admin scope's tenant, whatever their namespace or status
        (admin scopes only; an id of another tenant or of none is left alone); returns how many were removed.
        What a search, a list, a count or the keyword statistics answer afterwards is as if they were never
        written."""
        ...

    async def record_access(self, scope: NamespaceScope, memory_ids: Sequence[str], at: datetime) -> None:
        """Increment access counts and set `last_accessed_at` of the given memories."""
        ...

    async def namespace_counts(self, scope: NamespaceScope, kind: MemoryKind | None = None) -> dict[str, int]:
        """Live memories (of one kind, or all) per namespace of the scope's tenant (admin scopes only)."""
        ...

    async def tenants(self) -> builtins.list[str]:
        """Every tenant with memories: names only, for operations (scheduling maintenance per tenant)."""
        ...

    async def ping(self) -> None:
        """Raise `BackendUnavailable` if the store cannot serve."""
        ...

    async def maintain(self) -> None:
        """Background housekeeping (index building); never called on the request path."""
        ...

    async def close(self) -> None: ...


class Embedder(Protocol):
    """Text to dense vectors. The model id and dimension are recorded with the store."""

    @property
    def model_id(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    async def embed_documents(self, texts: Sequence[str]) -> list[list[float]]: ...

    async def embed_query(self, text: str) -> list[float]: ...


class SessionKey(NamedTuple):
    """One working-memory session of one tenant: what every `WorkingMemoryStore` backend keys a session by."""

    tenant: str
    namespace: str
    session_id: str


def check_access(scope: NamespaceScope, namespace: str, session_id: str, *, write: bool) -> SessionKey:
    """The session's key if the scope grants its namespace for this access; the check of every session call."""
    return SessionKey(scope.tenant, check_granted(scope, namespace, write=write), session_id)


class WorkingMemoryStore(ABC):
    """Per-session state and the window of recent turns, with a TTL.

    An abstract base rather than a protocol: each call is checked here once (the scope's grant of the namespace
    for the access, or an admin scope for `purge` and `sessions_written_by`, and the namespace's form), then a
    backend (`InProcessWorkingMemory`, `RedisWorkingMemory`, its subclasses) gets a narrow primitive (the abstract
    `_` methods) naming the session by its `SessionKey`. A backend implements the primitives, `ping` and `close`."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock

    async def get(self, scope: NamespaceScope, namespace: str, session_id: str) -> WorkingMemory | None:
        """The session's state and turns; None when it holds nothing live."""
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
        """Append a turn, keep the last `window` turns, refresh the TTL; return the session and the turns that
        fell out of the window (oldest first). `subject` (the token subject making the write) joins the session's
        writers: every subject that appended a turn to it or updated its state while it lived (a session taken,
        purged or expired loses them with the rest)."""
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
        """Replace or deep-merge the state, refresh the TTL; `subject` joins the session's writers (as for
        `append_turn`)."""
        key = check_access(scope, namespace, session_id, write=True)
        return await self._update_state(key, state, merge, ttl_seconds, subject)

    async def sessions_written_by(self, scope: NamespaceScope, subject: str) -> list[tuple[str, str]]:
        """The (namespace, session id) of every live session of the admin scope's tenant (admin scopes only)
        that `subject` appended a turn to or updated the state of, sorted."""
        return await self._sessions_written_by(check_admin(scope, "listing the sessions a subject wrote"), subject)

    async def purge(self, scope: NamespaceScope, namespace: str) -> int:
        """Remove every session of one namespace of the admin scope's tenant (admin scopes only), its state and
        turns; returns how many live sessions were removed (an expired one, already gone for every read, is
        dropped without being counted)."""
        return await self._purge(check_admin(scope, "purging a namespace"), validate_namespace(namespace))

    async def take(self, scope: NamespaceScope, namespace: str, session_id: str) -> WorkingMemory | None:
        """Remove the session and return what it held (None when it held nothing live), in one atomic step: a
        turn appended concurrently lands either in the returned snapshot or in a new session, never in neither."""
        return await self._take(check_access(scope, namespace, session_id, write=True))

    @abstractmethod
    async def ping(self) -> None:
        """Raise `BackendUnavailable` if the store cannot serve."""

    @abstractmethod
    async def close(self) -> None:
        """Release what the backend holds."""

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


class ImportanceRater(Protocol):
    """Rates how important a statement is to remember (write pipeline step 3, when the caller gives none)."""

    async def rate(self, content: str) -> float:
        """The importance of `content`, 0..1. Raises `BackendUnavailable` when it cannot rate; the write path also
        bounds the call with a deadline and falls back to the rules either way."""
        ...


class NamespaceLocks(Protocol):
    """Serialises the multi-step writes of one namespace (dedup check, conflict search, store, supersede)."""

    def hold(self, tenant: str, namespace: str) -> AbstractAsyncContextManager[None]:
        """Hold the lock of one namespace for the body of an `async with`; raises the retryable
        `BackendUnavailable` when it cannot be had within a bounded wait."""
        ...

"""`MemoryService`: the engine's episodic and semantic memory operations, each under a `NamespaceScope`.

Write: validate, skip exact repeats, embed, store (with linked copies for `share_to`), with provenance.
Recall: one scoped vector query over every target namespace, then the multi-signal rescoring, one hit per
origin, a token budget, and access counts bumped off the request path.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta

import anyio

from memory.clock import Clock
from memory.errors import InvalidArgument, NamespaceForbidden, NotFound
from memory.ids import content_hash, new_memory_id, parse_memory_id
from memory.models import Memory, MemoryKind, MemoryPage, RecallHit, Source, WriteOutcome, WriteStatus
from memory.ports import Embedder, ListQuery, RecallFilter, VectorStore
from memory.requests import ListRequest, RecallRequest, WriteRequest
from memory.scope import NamespaceScope, validate_namespace
from memory.scoring import ScoringWeights, estimate_tokens, score
from memory.validation import (
    EngineLimits,
    check_content,
    check_importance,
    check_json_object,
    check_kind,
    check_limit,
    check_positive_seconds,
    check_request_id,
    check_session_id,
    check_tags,
    check_top_k,
)

DEFAULT_IMPORTANCE = 0.5
CANDIDATE_FACTOR = 2


class MemoryService:
    def __init__(
        self,
        store: VectorStore,
        embedder: Embedder,
        clock: Clock,
        limits: EngineLimits | None = None,
        weights: ScoringWeights | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.clock = clock
        self.limits = limits or EngineLimits()
        self.weights = weights or ScoringWeights()
        self._pending: set[anyio.Event] = set()
        self._task_group: anyio.abc.TaskGroup | None = None

    # -- background work -------------------------------------------------------------------------------------
    def attach_task_group(self, task_group: anyio.abc.TaskGroup | None) -> None:
        """Run access-count updates in this task group (the app's lifespan); without one they run inline."""
        self._task_group = task_group

    async def _bump_access(self, scope: NamespaceScope, ids: list[str], done: anyio.Event) -> None:
        try:
            await self.store.record_access(scope, ids, self.clock.now())
        except Exception:  # best effort: a failed bump must never fail a recall that already answered
            pass
        finally:
            done.set()
            self._pending.discard(done)

    async def drain(self) -> None:
        """Wait until every scheduled access-count update has been applied."""
        for event in list(self._pending):
            await event.wait()

    # -- write -----------------------------------------------------------------------------------------------
    async def write(self, scope: NamespaceScope, request: WriteRequest) -> WriteOutcome:
        limits = self.limits
        content = check_content(request.content, limits)
        kind = check_kind(request.kind)
        importance = check_importance(request.importance)
        tags = check_tags(request.tags, limits)
        ttl = check_positive_seconds(request.ttl_seconds, limits, "ttl_seconds")
        session_id = check_session_id(request.session_id)
        metadata = check_json_object(request.metadata, limits.max_metadata_bytes, "metadata")
        request_id = check_request_id(request.request_id)
        namespace = scope.write_target(request.namespace)
        share_to = [scope.write_target(ns) for ns in (request.share_to or [])]
        share_to = [ns for ns in dict.fromkeys(share_to) if ns != namespace]

        digest = content_hash(content)
        if not request.force:
            existing = await self.store.find_by_hash(
                scope, namespace, digest, live_only=not request.skip_deleted_repeats, now=self.clock.now()
            )
            if existing is not None:
                return WriteOutcome(WriteStatus.SKIPPED, existing, reason="duplicate of an existing memory")

        now = self.clock.now()
        created = request.occurred_at or now
        if created.tzinfo is None:
            raise InvalidArgument("occurred_at must carry a timezone")
        expires = now + timedelta(seconds=ttl) if ttl is not None else None
        [vector] = await self.embedder.embed_documents([content])
        memory = Memory(
            id=new_memory_id(int(created.timestamp() * 1000)),
            tenant=scope.tenant,
            namespace=namespace,
            kind=kind,
            content=content,
            importance=DEFAULT_IMPORTANCE if importance is None else importance,
            created_at=created,
            updated_at=created,
            last_accessed_at=None,
            access_count=0,
            expires_at=expires,
            deleted_at=None,
            supersedes=[],
            superseded_by=None,
            origin_id=None,
            session_id=session_id,
            source=Source(subject=request.subject, request_id=request_id, tool=request.tool),
            tags=tags,
            metadata=metadata,
            embedding_model=self.embedder.model_id,
            content_hash=digest,
        )
        copies = [
            replace(memory, id=new_memory_id(int(created.timestamp() * 1000)), namespace=ns, origin_id=memory.id)
            for ns in share_to
        ]
        await self.store.upsert(scope, [(m, vector) for m in (memory, *copies)])
        return WriteOutcome(WriteStatus.CREATED, memory)

    # -- recall ----------------------------------------------------------------------------------------------
    async def recall(self, scope: NamespaceScope, request: RecallRequest) -> list[RecallHit]:
        query = check_content(request.query, self.limits, field="query")
        top_k = check_top_k(request.top_k, self.limits)
        namespaces = self._namespaces(scope, request.namespaces)
        kinds = tuple(check_kind(k) for k in request.kinds) if request.kinds else None
        tags = tuple(check_tags(request.tags, self.limits)) or None
        session_id = check_session_id(request.session_id)
        if request.token_budget is not None and (
            isinstance(request.token_budget, bool)
            or not isinstance(request.token_budget, int)
            or request.token_budget < 1
        ):
            raise InvalidArgument("token_budget must be a positive whole number of tokens")
        if request.since and request.until and request.since > request.until:
            raise InvalidArgument("since must not be later than until")

        now = self.clock.now()
        vector = await self.embedder.embed_query(query)
        flt = RecallFilter(
            now=now, kinds=kinds, tags=tags, session_id=session_id, since=request.since, until=request.until
        )
        candidates = await self.store.search(scope, namespaces, vector, top_k * CANDIDATE_FACTOR, flt)
        hits = sorted(
            (RecallHit(c.memory, score(c.memory, c.similarity, now, self.weights)) for c in candidates),
            key=lambda h: h.scores.score,
            reverse=True,
        )
        chosen = self._select(hits, top_k, request.token_budget)
        await self._schedule_access(scope, [h.memory.id for h in chosen])
        return chosen

    def _namespaces(self, scope: NamespaceScope, requested: Sequence[str] | None) -> tuple[str, ...]:
        if requested is not None and len(requested) > self.limits.max_namespaces_per_call:
            raise InvalidArgument(f"at most {self.limits.max_namespaces_per_call} namespaces per call")
        return scope.read_targets(requested)

    @staticmethod
    def _select(hits: list[RecallHit], top_k: int, token_budget: int | None) -> list[RecallHit]:
        chosen: list[RecallHit] = []
        seen_origins: set[str] = set()
        seen_content: set[tuple[str, str]] = set()
        spent = 0
        for hit in hits:
            origin = hit.memory.origin_id or hit.memory.id
            same_text = (hit.memory.namespace, hit.memory.content_hash)
            if origin in seen_origins or same_text in seen_content:
                continue
            cost = estimate_tokens(hit.memory.content)
            if token_budget is not None and spent + cost > token_budget:
                continue
            seen_origins.add(origin)
            seen_content.add(same_text)
            spent += cost
            chosen.append(hit)
            if len(chosen) == top_k:
                break
        return chosen

    async def _schedule_access(self, scope: NamespaceScope, ids: list[str]) -> None:
        if not ids:
            return
        done = anyio.Event()
        self._pending.add(done)
        if self._task_group is None:
            await self._bump_access(scope, ids, done)
        else:
            self._task_group.start_soon(self._bump_access, scope, ids, done)

    # -- forget / restore / get / list -----------------------------------------------------------------------
    async def get(self, scope: NamespaceScope, memory_id: str) -> Memory:
        canonical = parse_memory_id(memory_id)
        if canonical is None:
            raise InvalidArgument("id must be a memory id (a UUID string)")
        memory = await self.store.get(scope, canonical)
        if memory is None:
            raise NotFound("no memory with that id is visible to this token")
        return memory

    async def _get_writable(self, scope: NamespaceScope, memory_id: str) -> Memory:
        memory = await self.get(scope, memory_id)
        if not scope.can_write(memory.namespace):
            raise NamespaceForbidden("this token may read but not change memories in that namespace")
        return memory

    async def _with_copies(self, scope: NamespaceScope, memory: Memory) -> list[Memory]:
        """An origin and its linked copies in writable namespaces (a copy alone when a copy is named)."""
        if memory.origin_id is not None:
            return [memory]
        return [memory, *await self.store.copies_of(scope, memory.id)]

    async def forget(self, scope: NamespaceScope, memory_id: str, reason: str | None = None) -> Memory:
        """Soft-delete a memory; forgetting an origin also forgets its shared copies."""
        if reason is not None and (not isinstance(reason, str) or len(reason) > 500):
            raise InvalidArgument("reason must be a string of at most 500 characters")
        memory = await self._get_writable(scope, memory_id)
        now = self.clock.now()
        for item in await self._with_copies(scope, memory):
            if item.deleted_at is None:
                item.deleted_at = now
                item.delete_reason = reason
                await self.store.update(scope, item)
        return memory

    async def restore(self, scope: NamespaceScope, memory_id: str) -> Memory:
        """Undo `forget`, for the memory and (for an origin) its shared copies."""
        memory = await self._get_writable(scope, memory_id)
        for item in await self._with_copies(scope, memory):
            if item.deleted_at is not None:
                item.deleted_at = None
                item.delete_reason = None
                await self.store.update(scope, item)
        return memory

    async def purge(self, scope: NamespaceScope, namespace: str) -> int:
        """Hard-delete a whole namespace: the only hard delete there is, for admin scopes only."""
        if not scope.admin:
            raise NamespaceForbidden("purging a namespace needs the memory:admin scope")
        return await self.store.purge(scope, validate_namespace(namespace))

    async def list(self, scope: NamespaceScope, request: ListRequest) -> MemoryPage:
        namespaces = scope.read_targets(None if request.namespace is None else [request.namespace])
        kind: MemoryKind | None = None if request.kind is None else check_kind(request.kind)
        limit = check_limit(request.limit, self.limits)
        after = decode_cursor(request.cursor)
        memories, next_id = await self.store.list(
            scope, ListQuery(namespaces, kind, bool(request.include_deleted), limit, after)
        )
        return MemoryPage(memories, encode_cursor(next_id))


def encode_cursor(memory_id: str | None) -> str | None:
    if memory_id is None:
        return None
    return base64.urlsafe_b64encode(f"v1:{memory_id}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str | None) -> str | None:
    if cursor is None:
        return None
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise InvalidArgument("cursor is not one this server returned") from None
    memory_id = parse_memory_id(raw[3:]) if raw.startswith("v1:") else None
    if memory_id is None:
        raise InvalidArgument("cursor is not one this server returned")
    return memory_id

"""The commit of a batch's items of one namespace, under its write lock, with the outcomes of single writes.

A single write costs about five store round trips under the lock (the repeat lookups, the previous turn, the
conflict search, the upsert). A run of a batch's items instead reads ahead for a window of items at once: every
stored memory with one of their content hashes (`VectorStore.find_by_hashes`), every item's conflict searches
in one engine batch (`VectorStore.search_many`), and the latest turn of each of their sessions. Then, item by
item in one worker-thread hop, each is decided exactly as `MemoryWriter.commit_locked` would decide it against
the store as it would then be: what was read ahead plus the items of the window already decided (a repeat of an
earlier item is skipped as its repeat, an earlier item is a conflict candidate ranked by the same similarity,
`memory.write.storing.similarity`, and the turn a later one follows). An item that comes out a plain new memory (the
common case of an import) is answered, and stored with the others of the window in one atomic upsert.

Anything else stops the read-ahead at that item: a repeat whose answer writes (links of an interrupted write to
complete, an archived memory to revive), an update in place or a supersession, shared copies, a turn whose
previous turn is not the one its vectors were computed with (or not certain: two turns of one time), or read-ahead
that cannot be sure (a candidate that expired meanwhile in a full list). The window's plain items are stored
first, then that item is committed as a single write is (`commit_locked`, against the store), and the read-ahead
starts again after it, for a short window that doubles while no item stops it.

A stored plain memory carries no intent and names no memory but the turn it follows, so one upsert stores it
completely: a crash before the upsert leaves none of the window's memories, after it all, and a retry of the
batch answers those as the first attempt would have (`memory.write.repeats`). The lock is held for at most
`LOCK_CHUNK` items at a time, so other writers of the namespace wait a bounded time and interleave between chunks.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

import numpy as np

from memory import cpu_meter
from memory.errors import BackendUnavailable, MemoryEngineError
from memory.models import EXTRACTED, Memory, MemoryKind, WriteOutcome
from memory.pipeline.conflict import StatementCache
from memory.ports import NearestQuery, RecallFilter, ScoredMemory, UpsertItem
from memory.scope import NamespaceScope
from memory.stores.payload import STATUS_ACTIVE, status_of
from memory.write import repeats, storing
from memory.write.drafts import Draft
from memory.write.writer import MemoryWriter

BatchResult = WriteOutcome | MemoryEngineError
LOCK_CHUNK = 128  # most items committed under one hold of the namespace lock
RELOAD_WINDOW = 16  # items read ahead after one that stopped the read-ahead (doubling while none stops it)
ROUGH_MARGIN = 1e-9  # how far the rough similarity of `_Window.candidates` may be from the exact one, and more


@dataclass(slots=True)
class Item:
    """One item of the batch to commit: its position in the batch, its draft with vectors, and the skip the text
    rules answered (too little information) unless it repeats a stored memory."""

    index: int
    draft: Draft
    skipped: WriteOutcome | None = None


class Failed(Exception):
    """The backend failed at the item of batch position `index`: nothing from it on was written."""

    def __init__(self, index: int, error: BackendUnavailable) -> None:
        super().__init__(error.message)
        self.index = index
        self.error = error


async def commit_run(
    writer: MemoryWriter, scope: NamespaceScope, items: Sequence[Item], results: list[tuple[int, BatchResult]]
) -> None:
    """Commit consecutive items of one namespace, in order (see the module docstring), adding their results by
    batch position to `results` as they are written. Raises `Failed` when the backend fails: nothing from that
    item on was written."""
    namespace = items[0].draft.memory.namespace
    for start in range(0, len(items), LOCK_CHUNK):
        chunk = items[start : start + LOCK_CHUNK]
        try:
            async with writer.locks.hold(scope.tenant, namespace):
                await _commit_chunk(writer, scope, chunk, results)
        except BackendUnavailable as exc:  # the lock could not be had (or was lost): from the chunk's first item
            raise Failed(chunk[0].index, exc) from exc


async def _commit_chunk(
    writer: MemoryWriter, scope: NamespaceScope, chunk: Sequence[Item], results: list[tuple[int, BatchResult]]
) -> None:
    position, window = 0, len(chunk)
    while position < len(chunk):
        part = chunk[position : position + window]
        try:
            ahead = await _ReadAhead.load(writer, scope, part)
        except BackendUnavailable as exc:
            raise Failed(part[0].index, exc) from exc
        stop = await cpu_meter.run_sync(ahead.advance)
        await ahead.flush(results)
        position += stop
        if stop == len(part):
            window = min(window * 2, len(chunk))
            continue
        item = part[stop]
        try:
            results.append((item.index, await _one_by_one(writer, scope, item)))
        except BackendUnavailable as exc:
            raise Failed(item.index, exc) from exc
        except MemoryEngineError as exc:
            results.append((item.index, exc))
        position, window = position + 1, RELOAD_WINDOW


async def _one_by_one(writer: MemoryWriter, scope: NamespaceScope, item: Item) -> WriteOutcome:
    """The item committed as a single write does, against the store (every earlier item is stored)."""
    if item.skipped is None:
        return await writer.commit_locked(scope, item.draft)
    # too little information (never so for `force`): a single write would first have found a stored repeat
    repeat = await writer.repeat(scope, item.draft.memory, item.draft.request)
    return repeat if repeat is not None else item.skipped


class _Window:
    """The plain new memories of a window, not stored yet, as later items of the window search them: their
    vectors as the store will give them back, by row, with what a conflict search filters on."""

    def __init__(self, size: int, dimension: int) -> None:
        self.memories: list[Memory] = []
        self.vectors = np.zeros((size, dimension))
        self.norms = np.zeros(size)
        self.expires = np.full(size, np.inf)
        self.live: dict[MemoryKind, list[int]] = {}  # rows of live memories, by kind

    def add(self, memory: Memory, vector: Sequence[float]) -> None:
        row = len(self.memories)
        stored = storing.stored_form(vector)
        self.memories.append(memory)
        if len(stored) == self.vectors.shape[1]:
            self.vectors[row] = stored
        self.norms[row] = storing.norm(stored)
        if memory.expires_at is not None:
            self.expires[row] = memory.expires_at.timestamp()
        if status_of(memory) == STATUS_ACTIVE:
            self.live.setdefault(memory.kind, []).append(row)

    def candidates(
        self, query: np.ndarray, query_norm: float, flt: RecallFilter, limit: int, stored: Sequence[float]
    ) -> list[storing.Candidate]:
        """The memories that pass a conflict search's filter (`storing.candidate_queries`: live, of its kinds,
        stating one of its attributes if it names any, not expired at `flt.now`) and may rank among the `limit`
        best beside the `stored` hits' similarities, with their exact `storing.similarity`. The others are left
        out by a cheaper figure of all at once, within a margin far above its rounding."""
        rows = [row for kind in flt.kinds or () for row in self.live.get(kind, [])]
        if not rows:
            return []
        at = np.asarray(rows)
        at = at[self.expires[at] > flt.now.timestamp()]
        if flt.attributes:
            wanted = set(flt.attributes)
            at = np.asarray([row for row in at if wanted & set(self.memories[row].attributes)], dtype=np.int64)
        if len(at) == 0 or len(query) != self.vectors.shape[1]:
            return []
        norms = self.norms[at] * query_norm
        rough = np.divide(self.vectors[at] @ query, norms, out=np.zeros(len(at)), where=norms > 0)
        figures = np.concatenate([rough, np.asarray(stored, dtype=np.float64)])
        if len(figures) > limit:  # the limit-th best: a memory below it (less the margin) cannot make the cut
            at = at[rough >= np.partition(figures, -limit)[-limit] - ROUGH_MARGIN]
        return [
            (self.memories[row], storing.similarity(query, query_norm, self.vectors[row], float(self.norms[row])))
            for row in at
        ]


@dataclass(slots=True)
class _ReadAhead:
    """What the store held for a window's items when read, and what the window decided since."""

    writer: MemoryWriter
    scope: NamespaceScope
    items: Sequence[Item]
    matches: list[Memory]  # stored memories with one of the items' content hashes, in id order
    searches: dict[int, list[tuple[NearestQuery, list[ScoredMemory]]]]  # per item position: its conflict searches
    latest: dict[str, Memory | None]  # per session of the window: the turn a new one follows
    unsure: set[str] = field(default_factory=set)  # sessions whose latest turn is not certain (two of one time)
    window: _Window | None = None
    vectors: dict[str, tuple[np.ndarray, float]] = field(default_factory=dict)  # stored hits' vectors, by id
    statements: StatementCache = field(default_factory=StatementCache)  # what the rules read from candidates
    answered: list[tuple[int, WriteOutcome]] = field(default_factory=list)
    pending: list[tuple[int, UpsertItem]] = field(default_factory=list)

    @classmethod
    async def load(cls, writer: MemoryWriter, scope: NamespaceScope, items: Sequence[Item]) -> _ReadAhead:
        store, namespace, now = writer.store, items[0].draft.memory.namespace, writer.clock.now()
        hashes = {
            i.draft.memory.content_hash for i in items if i.skipped is not None or repeats.looks_up(i.draft.request)
        }
        matches = await store.find_by_hashes(scope, namespace, sorted(hashes)) if hashes else []  # expired too
        queries: list[tuple[int, NearestQuery]] = []
        limit = writer.pipeline.conflict_candidates
        for position, item in enumerate(items):
            if item.skipped is None and _detects_conflicts(writer, item.draft):
                memory = item.draft.memory
                queries += [(position, q) for q in storing.candidate_queries(memory, item.draft.own, now, limit)]
        answers = await store.search_many(scope, [q for _, q in queries]) if queries else []
        searches: dict[int, list[tuple[NearestQuery, list[ScoredMemory]]]] = {}
        for (position, query), hits in zip(queries, answers, strict=True):
            searches.setdefault(position, []).append((query, hits))
        sessions = sorted({s for i in items if i.skipped is None and (s := i.draft.memory.session_id) is not None})
        latest = {s: await writer.latest(scope, namespace, s) for s in sessions}
        return cls(writer, scope, items, sorted(matches, key=lambda m: m.id), searches, latest)

    def advance(self) -> int:
        """Decide the window's items in order (in a worker thread) until one needs the store; its position, or
        the window's length when none does."""
        for position, item in enumerate(self.items):
            outcome = self._decided(position, item)
            if outcome is None:
                return position
            self.answered.append((item.index, outcome))
        return len(self.items)

    def _decided(self, position: int, item: Item) -> WriteOutcome | None:
        """The item's outcome as `commit_locked` (or, for a skipped item, `MemoryWriter.repeat`) would answer it
        now, when that needs no store write; else None."""
        writer, draft = self.writer, item.draft
        memory, request = draft.memory, draft.request
        if item.skipped is not None or repeats.looks_up(request):
            found = repeats.repeat_of(self.matches, memory, request, writer.clock.now())
            if found is not None:
                if repeats.needs_store(found) or found.existing is None:  # (no existing: an archived one to revive)
                    return None
                return repeats.answer(found.existing, memory, [])
            if item.skipped is not None:
                return item.skipped
        session = memory.session_id
        if session is not None and (session in self.unsure or _id(self.latest[session]) != _id(draft.previous)):
            return None  # its vectors are to be computed again in the context of another turn
        now = writer.clock.now()
        if _detects_conflicts(writer, draft):
            candidates = self._candidates(position, draft, now)
            if candidates is None:
                return None
            decision = storing.decide(draft, candidates, writer.pipeline, self.statements)
            if not storing.is_plain(draft, decision):
                return None
            storing.settle(draft, decision, now)
        elif draft.share_to:
            return None
        outcome, upsert = storing.created(draft)
        self._add(item.index, outcome.memory, upsert)
        return outcome

    def _candidates(self, position: int, draft: Draft, now: datetime) -> list[storing.Candidate] | None:
        """The item's conflict candidates as its searches would find them now: the hits read ahead that did not
        expire since, with the window's new memories that pass the same filter, ranked and cut to the limit
        (None when an expired hit of a full list leaves the next one unknown)."""
        query = storing.as_query(draft.own)
        query_norm = storing.norm(query)
        found: list[storing.Candidate] = []
        for search, hits in self.searches.get(position, []):
            kept = [h for h in hits if not repeats.expired(h.memory, now)]
            if len(kept) < len(hits) and len(hits) >= search.limit:
                return None
            scored = [(h.memory, self._similarity(query, query_norm, h)) for h in kept]
            if self.window is not None:
                flt = replace(search.flt, now=now)
                scored += self.window.candidates(query, query_norm, flt, search.limit, [c for _, c in scored])
            found += storing.ranked(scored)[: search.limit]
        return found

    def _similarity(self, query: np.ndarray, query_norm: float, hit: ScoredMemory) -> float:
        if (held := self.vectors.get(hit.memory.id)) is None:  # a memory near many items: converted once
            stored = storing.stored_form(hit.vector)
            held = self.vectors[hit.memory.id] = (stored, storing.norm(stored))
        return storing.similarity(query, query_norm, *held)

    def _add(self, index: int, memory: Memory, upsert: UpsertItem) -> None:
        """A plain new memory decided: what later items of the window see of it, and its upsert to come."""
        self.pending.append((index, upsert))
        if self.window is None:
            self.window = _Window(len(self.items), len(upsert[1]))
        self.window.add(memory, upsert[1])
        bisect.insort(self.matches, memory, key=lambda m: m.id)
        session = memory.session_id
        if session is not None and memory.source.tool != EXTRACTED:
            current = self.latest.get(session)
            if current is None or memory.created_at.timestamp() > current.created_at.timestamp():
                self.latest[session] = memory
            elif memory.created_at.timestamp() == current.created_at.timestamp():
                self.unsure.add(session)  # which of two turns of one time the store calls latest is its own

    async def flush(self, results: list[tuple[int, BatchResult]]) -> None:
        """Store the window's new memories in one atomic upsert, then hand over the window's answers. When the
        backend fails, the answers before the first new memory stand and it fails (`Failed`)."""
        if self.pending:
            try:
                await self.writer.store.upsert(self.scope, [upsert for _, upsert in self.pending])
            except BackendUnavailable as exc:
                first = self.pending[0][0]
                results += [(index, outcome) for index, outcome in self.answered if index < first]
                raise Failed(first, exc) from exc
        results += self.answered


def _detects_conflicts(writer: MemoryWriter, draft: Draft) -> bool:
    return writer.pipeline.conflict_detection and not draft.request.force


def _id(memory: Memory | None) -> str | None:
    return memory.id if memory is not None else None

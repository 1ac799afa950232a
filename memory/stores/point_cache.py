"""The decoded points of the embedded store, by id (`PointCache`): what a recall's searches would otherwise read from
the engine for every candidate on every recall (the payload parsed by the engine, converted to Python objects and
decoded into a `Memory`, with its keyword terms, and for keyword-only hits its dense vector).

Why it is safe: the embedded store is held by one process (an exclusive lock on its folder), so every change to a point
goes through `EdgeVectorStore`'s five writes (upsert, update, purge, delete, access bumps), and each one drops what it
changed once the engine has it (all of them when a write fails, whatever the engine applied). Each write marks its
beginning and its end (`begin_write`, `end_write`: what it wrote dropped). A search takes a `snapshot` before its engine
reads; when a write began or ended since, it trusts nothing the cache holds (the engine may already answer with the new
state of a point the cache still holds the old one of) and keeps nothing it read (it may have read the old state). So a
search sees each point as the engine held it during the search.

Once most of a dense search's hits are held (`warm`), it asks the engine for ids and scores only and reads by id, in
the same worker job, the points it lacks; until then its query reads payloads and fills the cache from them. A
keyword search reads by id only the new hits the cache lacks (with their dense vectors). Entries are shared and
never changed: a recall reads its candidates' memories and builds new objects from them (`memory.recall.steps`); no
caller of `search` writes to one. Bounded: beyond `capacity` points the oldest entries go first (`capacity` 0: no cache,
every search reads payloads as before).
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from memory.models import Memory
from memory.ports import RecallFilter
from memory.stores.payload import recallable_statuses, status_of

WARM_SHARE = 0.7  # a dense search asks for ids alone once this share of its hits is held
FILL_EVERY = 8  # below that share, one search in this many keeps what it read
SHARE_STEP = 0.05  # weight of one search in the moving average of that share


@dataclass(frozen=True, slots=True)
class Point:
    """A stored point as a search uses it: its memory, its keyword terms and, once a keyword search read it, its
    dense vector (float32, as the engine keeps it; None: not read yet, or an archived memory without one)."""

    memory: Memory
    terms: tuple[int, ...]
    dense: npt.NDArray[np.float32] | None = None
    has_dense: bool = False  # whether `dense` was read (an archived memory's is None once read)


class PointCache:
    """Decoded points by id, dropped on every write that touches them (module docstring)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = max(0, capacity)
        self._points: OrderedDict[str, Point] = OrderedDict()
        self._lock = threading.Lock()
        self._generation = 0  # bumped as each write begins and ends
        self._writing = 0  # writes begun and not ended
        self.hits = 0
        self.misses = 0
        self.share = 0.0  # the share of a dense search's hits found here, a moving average over its searches
        self._searches = 0

    @property
    def warm(self) -> bool:
        """Whether a dense search should ask the engine for ids and scores alone: most of its hits are here, so
        reading the others by id costs less than the payloads of all (else the query reads payloads and fills the
        cache from them, at no extra engine read)."""
        return self.share >= WARM_SHARE

    def filling(self) -> bool:
        """Whether this search keeps what it reads: every one while the cache is warm, else one in `FILL_EVERY`
        (queries that keep meeting points the cache does not hold, over a store much larger than it, would pay
        for entries evicted before their next use: 100k memories in scope, 20k held, server CPU per recall x1.15
        when every search kept its reads; a small store still fills within a few hundred searches)."""
        self._searches += 1
        return self.capacity > 0 and (self.share >= WARM_SHARE or self._searches % FILL_EVERY == 0)

    @property
    def enabled(self) -> bool:
        return self.capacity > 0

    def __len__(self) -> int:
        return len(self._points)

    def get(self, point_id: str) -> Point | None:
        return self._points.get(point_id)

    # -- searches --------------------------------------------------------------------------------------------------
    def snapshot(self) -> int:
        """Taken by a search before its engine reads: what `lookup` and `put` check that no write overlapped
        (-1 while one is under way: nothing held is trusted, nothing read is kept)."""
        with self._lock:
            return self._generation if not self._writing else -1

    def _steady(self, snapshot: int) -> bool:
        return snapshot >= 0 and snapshot == self._generation and not self._writing

    def lookup(self, snapshot: int, ids: Sequence[str], *, dense: bool = False) -> tuple[dict[str, Point], list[str]]:
        """The held points among `ids` and the ids to read (with their dense vector when `dense`): all of them
        when a write began or ended since `snapshot`, which the engine's answer may already show while the
        cache does not."""
        held: dict[str, Point] = {}
        missing: list[str] = []
        points = self._points
        for point_id in ids:
            point = points.get(point_id)
            if point is None or (dense and not point.has_dense):
                missing.append(point_id)
            else:
                held[point_id] = point
        with self._lock:
            if not self._steady(snapshot):
                held, missing = {}, list(ids)
        self.hits += len(held)
        self.misses += len(missing)
        if ids and not dense:  # races between threads only blur the average
            self.share += (len(held) / len(ids) - self.share) * SHARE_STEP
        return held, missing

    def put(self, snapshot: int, points: Iterable[tuple[str, Point]]) -> None:
        """Keep `points`, read by a search after `snapshot`, unless a write began or ended since; the oldest
        entries go beyond the capacity."""
        if not self.capacity:
            return
        with self._lock:
            if not self._steady(snapshot):
                return
            store = self._points
            for point_id, point in points:
                held = store.get(point_id)
                if held is not None and held.has_dense and not point.has_dense:
                    continue  # a dense search's read never replaces one that holds the vector too
                store[point_id] = point
            for _ in range(len(store) - self.capacity):
                store.popitem(last=False)

    # -- writes ----------------------------------------------------------------------------------------------------
    def begin_write(self) -> None:
        """Before a write reaches the engine: from now on until it ends, searches neither trust nor keep."""
        with self._lock:
            self._writing += 1
            self._generation += 1

    def end_write(self, ids: Iterable[object] | None) -> None:
        """After the engine has the write (or failed it): the points it wrote (`ids`; None: any, as after a
        purge or a failure) are read again by the next search that meets them."""
        keys = None if ids is None else [point_key(point_id) for point_id in ids]
        with self._lock:
            if keys is None:
                self._points.clear()
            else:
                for key in keys:
                    self._points.pop(key, None)
            self._generation += 1
            self._writing -= 1


def point_key(point_id: object) -> str:
    """A point id as searches key it: `str` of the engine's id (a UUID's canonical form), whatever form it was
    written in."""
    try:
        return str(uuid.UUID(str(point_id)))
    except ValueError:
        return str(point_id)


def as_dense(vector: Sequence[float] | None) -> npt.NDArray[np.float32] | None:
    """A dense vector as the cache keeps it: float32, the engine's own precision (the same cosines)."""
    return None if not vector else np.asarray(vector, dtype=np.float32)


def recallable(points: Iterable[tuple[str, Point]], tenant: str, flt: RecallFilter) -> list[tuple[str, Point]]:
    """Points read by id after a search's query, without those a write between the two moved out of it (another
    tenant, a status the filter does not recall), as keyword-only hits are (`keyword_only_hits`)."""
    statuses = recallable_statuses(flt.include_superseded, flt.include_archived)
    return [(i, p) for i, p in points if p.memory.tenant == tenant and status_of(p.memory) in statuses]

"""`Migration`: one embedding-model migration at a time while the engine serves (or run to its end offline), and
the switch of store, embedder and calibration to the new model once it is complete.

Steps (`run`): open the new embedder (`Models.open`: whoever assembled the engine builds it, as it built the one in
use); open the new index beside the active one (`memory.reembed.indexes`: a new directory, or a new collection; one
a crashed or failed migration left behind is rebuilt from scratch); record every change
(`SwitchableStore.start_recording`); copy everything (`memory.reembed.copy.Reembedding.copy_all`); catch up with
what changed meanwhile, pass after pass while passes shrink; flush pending access counts; then, with changes held
back (`SwitchableStore.paused`, bounded by `PAUSE_TIMEOUT` for writes in flight; writes arriving wait, they are not
refused), the last catch-up, the verification (per tenant and namespace, counts and ids and states; any difference
refuses the switch with `ReembedFailed` and leaves the old index active), the durable record of the new active index
(pointer file or Qdrant alias), and the switch of store, embedder, recall weights and write pipeline
(`Models.calibration`), then `Models.adopt` records the new embedder as the one in use. The old index is closed,
kept on disk, and removed only by `drop_old`.

Tenants are walked with each tenant's admin scope (`scope_of`, built outside the engine).
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

import anyio
import anyio.abc

from memory.embedders import EMBEDDERS, RemoteEmbedder
from memory.errors import BackendUnavailable, InvalidArgument, MemoryEngineError
from memory.pipeline import PipelineSettings
from memory.ports import Embedder, VectorStore
from memory.recall.scoring import ScoringWeights
from memory.reembed.copy import BATCH, Reembedding, ScopeOf, Verification
from memory.reembed.indexes import Indexes
from memory.service import MemoryService
from memory.stores.edge import EdgeVectorStore
from memory.stores.switchable import SwitchableEmbedder, SwitchableStore

logger = logging.getLogger("hindsight.reembed")
PAUSE_TIMEOUT = 30.0  # seconds the switch waits for writes in flight
MAX_PASSES = 8  # catch-up passes before the final one (each shorter than the last while writes are steady)


class ReembedFailed(MemoryEngineError):
    """The migration stopped before the switch; the old index stays active."""

    code = "reembed_failed"


@dataclass
class ReembedStatus:
    state: str = "idle"  # idle | running | switched | failed
    phase: str | None = None  # loading | copying | catching_up | switching
    from_model: str | None = None
    to_model: str | None = None
    to_embedder: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    copied: int = 0
    caught_up: int = 0
    passes: int = 0
    verified: int | None = None  # memories found identical in both indexes at the switch
    error: str | None = None
    old_indexes: list[str] = field(default_factory=list)  # kept until drop_old

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Calibration:
    """What the engine uses with one embedder: its write pipeline and the recall weights (the defaults and each
    configured tenant's)."""

    pipeline: PipelineSettings
    weights: ScoringWeights
    tenant_weights: dict[str, ScoringWeights]


class Models(Protocol):
    """The embedders a migration moves to, as whoever assembled the engine builds them (the gateway: from its
    settings)."""

    @property
    def current(self) -> str:
        """The name of the embedder in use."""
        ...

    async def open(self, name: str) -> Embedder:
        """The embedder named `name` (one of `memory.embedders.EMBEDDERS`), ready to embed."""
        ...

    def calibration(self, model_id: str) -> Calibration: ...

    def adopt(self, name: str) -> None:
        """The switch is done: the embedder named `name` is the one in use from now on."""
        ...


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _ended() -> anyio.Event:
    done = anyio.Event()
    done.set()
    return done


@dataclass(eq=False)
class Migration:
    vectors: SwitchableStore  # the store the engine holds: what the migration copies from and switches
    embedders: SwitchableEmbedder
    memories: MemoryService  # its keyword encoder, access counts and calibration
    models: Models
    indexes: Indexes
    scope_of: ScopeOf  # a tenant's admin scope
    status: ReembedStatus = field(default_factory=ReembedStatus, init=False)
    _task_group: anyio.abc.TaskGroup | None = field(default=None, init=False)
    _done: anyio.Event = field(default_factory=_ended, init=False)
    _job: Reembedding | None = field(default=None, init=False)

    def attach_task_group(self, task_group: anyio.abc.TaskGroup | None) -> None:
        """Run started migrations in this task group (the runtime's); cancelled with it."""
        self._task_group = task_group

    @property
    def running(self) -> bool:
        return self.status.state == "running"

    async def report(self) -> dict[str, Any]:
        """The status, with the inactive indexes on disk or on the server listed."""
        self._sync_progress()
        if not self.running:
            self.status.old_indexes = await self.indexes.inactive(self.vectors.active)
        return self.status.as_dict()

    async def wait(self, seconds: float) -> None:
        """Until the running migration ends, or `seconds` pass."""
        with anyio.move_on_after(seconds):
            await self._done.wait()

    def start(self, to: str) -> None:
        """Start a migration to the embedder named `to` in the background."""
        if self._task_group is None:
            raise BackendUnavailable("the gateway is starting or stopping")
        self._begin(to)
        self._task_group.start_soon(self._run)

    async def run(self, to: str) -> dict[str, Any]:
        """Run a migration to the embedder named `to` to its end (offline use)."""
        self._begin(to)
        await self._run()
        return await self.report()

    def _begin(self, to: str) -> None:
        if self.running:
            raise InvalidArgument(
                f"a migration to {self.status.to_embedder} is already running (phase {self.status.phase}); "
                "wait for it to end (`status`)"
            )
        if to not in EMBEDDERS:
            raise InvalidArgument(f"unknown embedder {to!r}; choose one of {', '.join(EMBEDDERS)}")
        if to == self.models.current and to != "remote":
            raise InvalidArgument(f"the gateway already uses {to}")
        self.status = ReembedStatus(
            state="running", phase="loading", from_model=self.vectors.model_id, to_embedder=to, started_at=_now()
        )
        self._done = anyio.Event()
        self._job = None

    # -- the migration -----------------------------------------------------------------------------------------
    async def _run(self) -> None:
        status = self.status
        name = status.to_embedder
        assert name is not None  # set by _begin
        embedder: Embedder | None = None
        target: VectorStore | None = None
        switched = False
        try:
            embedder = await self.models.open(name)
            status.to_model = embedder.model_id
            if embedder.model_id == self.vectors.model_id:
                raise InvalidArgument(f"the active index is already built with {embedder.model_id}")
            target, where = await self.indexes.open_beside(self.vectors.active, embedder)
            calibrated = self.models.calibration(embedder.model_id)
            job = self._job = Reembedding(
                self.vectors.active, target, embedder, calibrated.pipeline, self.scope_of, self.memories.keywords
            )
            self.vectors.start_recording()
            status.phase = "copying"
            await job.copy_all()
            status.phase = "catching_up"
            for _ in range(MAX_PASSES):
                changes = self.vectors.take_changes()
                if len(changes) < BATCH:
                    await job.catch_up(changes)
                    break
                await job.catch_up(changes)
            await target.maintain()  # index what was copied now, not under the pause nor in the first recalls
            await self.memories.drain()  # access counts noted so far, before the pause they would wait at
            status.phase = "switching"
            async with self.vectors.paused(PAUSE_TIMEOUT):
                await job.catch_up(self.vectors.take_changes())
                verification = await job.verify()
                self._check(verification)
                status.verified = verification.total
                await self.indexes.record(self.vectors.active, where, embedder, name)
                retired = await self.vectors.switch(target, embedder.model_id, embedder.dimension, job.restamp)
                old_embedder = self.embedders.switch(embedder)
                self.memories.use_calibration(calibrated.weights, calibrated.tenant_weights, calibrated.pipeline)
                self.models.adopt(name)
                switched = True
            status.state = "switched"
            self.vectors.stop_recording()
            logger.info("re-embedded %d memories into %s; now serving %s", status.verified, where, embedder.model_id)
            try:
                await self._retire(retired, old_embedder)
            except Exception:  # the switch is done; the old index is only closed late (at exit)
                logger.exception("closing the retired index failed")
        except Exception as exc:
            status.state, status.error = "failed", getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
            if isinstance(exc, MemoryEngineError):
                logger.error("re-embedding to %s failed: %s", status.to_embedder, status.error)
            else:
                logger.exception("re-embedding to %s failed", status.to_embedder)
        finally:
            self._sync_progress()
            self.vectors.stop_recording()
            if not switched:
                with anyio.CancelScope(shield=True):
                    await self._discard(target, embedder)
            status.phase = None
            status.finished_at = _now()
            self._done.set()

    def _sync_progress(self) -> None:
        if self._job is not None:
            progress = self._job.progress
            self.status.copied, self.status.caught_up, self.status.passes = (
                progress.copied,
                progress.caught_up,
                progress.passes,
            )

    @staticmethod
    def _check(verification: Verification) -> None:
        wrong = verification.mismatches
        if wrong:
            shown = ", ".join(f"{c.tenant}/{c.namespace} (old {c.old}, new {c.new})" for c in wrong[:5])
            raise ReembedFailed(
                f"the new index differs from the old in {len(wrong)} namespaces: {shown}; nothing was switched "
                "(was another process writing to the same index? run reembed again)"
            )

    async def _retire(self, old: VectorStore, old_embedder: Embedder) -> None:
        if isinstance(old, EdgeVectorStore):  # a server store shares its client with the new one: kept open
            await self.vectors.close_retired(old)
        if isinstance(old_embedder, RemoteEmbedder):
            await old_embedder.close()

    async def _discard(self, target: VectorStore | None, embedder: Embedder | None) -> None:
        if isinstance(target, EdgeVectorStore):
            await target.close()
        if isinstance(embedder, RemoteEmbedder):
            await embedder.close()

    # -- the old indexes ---------------------------------------------------------------------------------------
    async def drop_old(self) -> list[str]:
        """Remove every inactive index (the retired one, or an abandoned attempt's); refused while one runs."""
        if self.running:
            raise InvalidArgument("a migration is running; drop the old index once it has switched")
        active = self.vectors.active
        dropped = await self.indexes.inactive(active)
        await self.indexes.drop(active, dropped)
        logger.info("dropped the inactive indexes %s", dropped)
        self.status.old_indexes = []
        return dropped

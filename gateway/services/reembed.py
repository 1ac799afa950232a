"""`Reembedder`: one embedding-model migration at a time inside a running gateway (or `hindsight reembed` run
offline), and the switch of the runtime to the new model once it is complete.

Steps (`run`): load the new embedder; open the new index beside the active one (`memory.stores.active_index`: a
new directory, or a new collection; one a crashed or failed migration left behind is rebuilt from scratch);
record every change (`SwitchableStore.start_recording`); copy everything (`memory.reembed.Reembedding.copy_all`);
catch up with what changed meanwhile, pass after pass while passes shrink; flush pending access counts; then,
with changes held back (`SwitchableStore.paused`, bounded by `PAUSE_TIMEOUT` for writes in flight; writes arriving
wait, they are not refused), the last catch-up, the verification (per tenant and namespace, counts and ids and
states; any difference refuses the switch and leaves the old index active), the durable record of the new
active index (pointer file or Qdrant alias), and the switch of store, embedder, recall weights, write pipeline
and settings. The old index is closed, kept on disk, and removed only by `drop_old`.

Tenants are walked with each tenant's admin scope, built by `tenancy/` (`gateway.services.maintenance.admin_scope`).
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

import anyio
import anyio.abc
import anyio.to_thread

from gateway.services.maintenance import admin_scope
from gateway.services.runtime import Runtime, open_embedder, scoring_weights, search_threads, tenant_scoring_weights
from memory.embedders import EMBEDDERS, RemoteEmbedder
from memory.errors import BackendUnavailable, InvalidArgument, MemoryEngineError
from memory.pipeline import for_embedder
from memory.ports import Embedder, VectorStore
from memory.reembed import BATCH, Reembedding, Verification
from memory.stores import active_index
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


def _now() -> str:
    return datetime.now(UTC).isoformat()


class Reembedder:
    def __init__(self, runtime: Runtime, vectors: SwitchableStore, embedders: SwitchableEmbedder) -> None:
        self.runtime = runtime
        self.vectors = vectors
        self.embedders = embedders
        self.status = ReembedStatus()
        self._task_group: anyio.abc.TaskGroup | None = None
        self._done = anyio.Event()
        self._done.set()
        self._job: Reembedding | None = None

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
            self.status.old_indexes = await self._inactive()
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
        if to == self.runtime.settings.models.embedder and to != "remote":
            raise InvalidArgument(f"the gateway already uses {to}")
        self.status = ReembedStatus(
            state="running", phase="loading", from_model=self.vectors.model_id, to_embedder=to, started_at=_now()
        )
        self._done = anyio.Event()
        self._job = None

    # -- the migration -----------------------------------------------------------------------------------------
    async def _run(self) -> None:
        status = self.status
        settings = self.runtime.settings.replaced(embedder=status.to_embedder)
        embedder: Embedder | None = None
        target: VectorStore | None = None
        switched = False
        try:
            embedder = await open_embedder(settings)
            status.to_model = embedder.model_id
            if embedder.model_id == self.vectors.model_id:
                raise InvalidArgument(f"the active index is already built with {embedder.model_id}")
            target, where = await self._open_target(embedder)
            pipeline = for_embedder(
                embedder.model_id, importance_llm_timeout_seconds=settings.models.llm_importance_timeout_seconds
            )
            job = self._job = Reembedding(
                self.vectors.active, target, embedder, pipeline, admin_scope, self.runtime.memories.keywords
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
            await self.runtime.memories.drain()  # access counts noted so far, before the pause they would wait at
            status.phase = "switching"
            async with self.vectors.paused(PAUSE_TIMEOUT):
                await job.catch_up(self.vectors.take_changes())
                verification = await job.verify()
                self._check(verification)
                status.verified = verification.total
                await self._record(embedder, target, where, settings.models.embedder)
                retired = await self.vectors.switch(target, embedder.model_id, embedder.dimension, job.restamp)
                old_embedder = self.embedders.switch(embedder)
                weights = scoring_weights(settings, embedder.model_id)
                self.runtime.memories.use_calibration(weights, tenant_scoring_weights(settings, weights), pipeline)
                self.runtime.settings = settings
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

    async def _open_target(self, embedder: Embedder) -> tuple[VectorStore, str]:
        """A new, empty index for `embedder` beside the active one; a leftover of an earlier attempt is removed."""
        settings = self.runtime.settings
        source = self.vectors.active
        if isinstance(source, EdgeVectorStore):
            data_dir = settings.backends.data_dir
            name = active_index.index_directory(embedder.model_id, embedder.dimension)
            if name == active_index.read_pointer(data_dir).directory:
                raise InvalidArgument(f"{name} is the active index already")
            if (data_dir / name).exists():
                await anyio.to_thread.run_sync(active_index.remove_directory, data_dir, name)
            threads = search_threads(settings)
            store = await anyio.to_thread.run_sync(
                lambda: EdgeVectorStore.open(
                    data_dir / name,
                    model_id=embedder.model_id,
                    dimension=embedder.dimension,
                    search_threads=threads,
                    cache_points=settings.backends.search_cache_points,
                )
            )
            return store, name
        from memory.stores import qdrant_alias
        from memory.stores.qdrant_collection import collection_name
        from memory.stores.qdrant_server import QdrantServerStore

        if not isinstance(source, QdrantServerStore):
            raise InvalidArgument("this vector store cannot be re-embedded")
        client, prefix = source.client, settings.backends.qdrant_collection_prefix
        name = collection_name(prefix, embedder.model_id, embedder.dimension)
        active = await qdrant_alias.aliased_collection(client, prefix) or source.collection
        if name == active:
            raise InvalidArgument(f"{name} is the active collection already")
        if await client.collection_exists(name):
            await client.delete_collection(name)
        collection = await QdrantServerStore.open(
            client,
            collection_prefix=prefix,
            model_id=embedder.model_id,
            dimension=embedder.dimension,
            call_timeout=settings.backends.backend_timeout_seconds,
        )
        return collection, name

    async def _record(self, embedder: Embedder, target: VectorStore, where: str, embedder_name: str) -> None:
        """Make the new index the active one durably, so a restart (or another replica) opens it."""
        if isinstance(target, EdgeVectorStore):
            await anyio.to_thread.run_sync(
                active_index.write_pointer,
                self.runtime.settings.backends.data_dir,
                where,
                embedder.model_id,
                embedder.dimension,
                embedder_name,
            )
        else:
            from memory.stores import qdrant_alias
            from memory.stores.qdrant_server import QdrantServerStore

            source = self.vectors.active
            assert isinstance(source, QdrantServerStore)  # _open_target opened a collection beside this one
            await qdrant_alias.point_alias(
                source.client, self.runtime.settings.backends.qdrant_collection_prefix, where
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
    async def _inactive(self) -> list[str]:
        active = self.vectors.active
        if isinstance(active, EdgeVectorStore):
            return await anyio.to_thread.run_sync(
                active_index.inactive_directories, self.runtime.settings.backends.data_dir
            )
        from memory.stores import qdrant_alias
        from memory.stores.qdrant_server import QdrantServerStore

        if not isinstance(active, QdrantServerStore):
            return []
        prefix = self.runtime.settings.backends.qdrant_collection_prefix
        current = await qdrant_alias.aliased_collection(active.client, prefix) or active.collection
        return await qdrant_alias.inactive_collections(active.client, prefix, current)

    async def drop_old(self) -> list[str]:
        """Remove every inactive index (the retired one, or an abandoned attempt's); refused while one runs."""
        if self.running:
            raise InvalidArgument("a migration is running; drop the old index once it has switched")
        dropped = await self._inactive()
        active = self.vectors.active
        for name in dropped:
            if isinstance(active, EdgeVectorStore):
                await anyio.to_thread.run_sync(
                    active_index.remove_directory, self.runtime.settings.backends.data_dir, name
                )
            else:  # a server store (qdrant-client installed): `_inactive` listed its collections
                from memory.stores.qdrant_server import QdrantServerStore

                assert isinstance(active, QdrantServerStore)
                await active.client.delete_collection(name)
        logger.info("dropped the inactive indexes %s", dropped)
        self.status.old_indexes = []
        return dropped

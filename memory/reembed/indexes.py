"""`Indexes`: where a deployment's vector indexes live, how one is opened, and the store-specific steps of a
re-embedding: open a new, empty index beside the active one (a leftover of a crashed or failed attempt is removed
first, so it is rebuilt from scratch), make it the active one durably, list the inactive ones and drop them.

Embedded engine: directories under the data directory, the active one named by the pointer file
(`memory.stores.active_index`). Qdrant server: collections under the prefix, the active one named by the alias
(`memory.stores.qdrant_alias`); the new collection shares the active store's client. The Qdrant modules are imported
only when the active store is a server store, so a core install without qdrant-client never imports them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import anyio.to_thread

from memory.errors import InvalidArgument
from memory.ports import Embedder, VectorStore
from memory.stores import active_index
from memory.stores.edge import EdgeVectorStore

if TYPE_CHECKING:
    from qdrant_client import AsyncQdrantClient

    from memory.stores.qdrant_server import QdrantServerStore


@dataclass(frozen=True, slots=True)
class Indexes:
    data_dir: Path  # the embedded engine's indexes
    collection_prefix: str  # a Qdrant server's collections
    call_timeout: float  # seconds a Qdrant server call may take
    search_threads: int | None = None  # the embedded engine's (None: sized to the machine)
    cache_points: int = 0

    async def open_directory(self, path: Path, model_id: str, dimension: int) -> EdgeVectorStore:
        """The embedded index in `path` (created if missing), opened in a worker thread."""
        return await anyio.to_thread.run_sync(
            lambda: EdgeVectorStore.open(
                path,
                model_id=model_id,
                dimension=dimension,
                search_threads=self.search_threads,
                cache_points=self.cache_points,
            )
        )

    async def open_collection(
        self, client: AsyncQdrantClient, model_id: str, dimension: int, collection: str | None = None
    ) -> QdrantServerStore:
        """The server collection for the model (or the one named), created if missing."""
        from memory.stores.qdrant_server import QdrantServerStore

        return await QdrantServerStore.open(
            client,
            collection_prefix=self.collection_prefix,
            model_id=model_id,
            dimension=dimension,
            collection=collection,
            call_timeout=self.call_timeout,
        )

    async def open_beside(self, active: VectorStore, embedder: Embedder) -> tuple[VectorStore, str]:
        """A new, empty index for `embedder` beside the active one, and its name."""
        if isinstance(active, EdgeVectorStore):
            name = active_index.index_directory(embedder.model_id, embedder.dimension)
            if name == active_index.read_pointer(self.data_dir).directory:
                raise InvalidArgument(f"{name} is the active index already")
            if (self.data_dir / name).exists():
                await anyio.to_thread.run_sync(active_index.remove_directory, self.data_dir, name)
            return await self.open_directory(self.data_dir / name, embedder.model_id, embedder.dimension), name
        from memory.stores import qdrant_alias
        from memory.stores.qdrant_collection import collection_name
        from memory.stores.qdrant_server import QdrantServerStore

        if not isinstance(active, QdrantServerStore):
            raise InvalidArgument("this vector store cannot be re-embedded")
        client, prefix = active.client, self.collection_prefix
        name = collection_name(prefix, embedder.model_id, embedder.dimension)
        current = await qdrant_alias.aliased_collection(client, prefix) or active.collection
        if name == current:
            raise InvalidArgument(f"{name} is the active collection already")
        if await client.collection_exists(name):
            await client.delete_collection(name)
        return await self.open_collection(client, embedder.model_id, embedder.dimension), name

    async def record(self, active: VectorStore, where: str, embedder: Embedder, embedder_name: str) -> None:
        """Make the index `where` (opened by `open_beside`) the active one durably, so a restart (or another
        replica) opens it."""
        if isinstance(active, EdgeVectorStore):
            await anyio.to_thread.run_sync(
                active_index.write_pointer, self.data_dir, where, embedder.model_id, embedder.dimension, embedder_name
            )
            return
        from memory.stores import qdrant_alias
        from memory.stores.qdrant_server import QdrantServerStore

        assert isinstance(active, QdrantServerStore)  # open_beside opened a collection beside this one
        await qdrant_alias.point_alias(active.client, self.collection_prefix, where)

    async def inactive(self, active: VectorStore) -> list[str]:
        """Every index of the deployment but the active one (the retired one, or an abandoned attempt's)."""
        if isinstance(active, EdgeVectorStore):
            return await anyio.to_thread.run_sync(active_index.inactive_directories, self.data_dir)
        from memory.stores import qdrant_alias
        from memory.stores.qdrant_server import QdrantServerStore

        if not isinstance(active, QdrantServerStore):
            return []
        prefix = self.collection_prefix
        current = await qdrant_alias.aliased_collection(active.client, prefix) or active.collection
        return await qdrant_alias.inactive_collections(active.client, prefix, current)

    async def drop(self, active: VectorStore, names: list[str]) -> None:
        """Remove the inactive indexes named (listed by `inactive`)."""
        for name in names:
            if isinstance(active, EdgeVectorStore):
                await anyio.to_thread.run_sync(active_index.remove_directory, self.data_dir, name)
            else:  # a server store (qdrant-client installed): `inactive` listed its collections
                from memory.stores.qdrant_server import QdrantServerStore

                assert isinstance(active, QdrantServerStore)
                await active.client.delete_collection(name)

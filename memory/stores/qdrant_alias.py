"""The Qdrant server's active collection: the alias `<prefix>_active` a re-embedding points at the new collection
(one atomic alias operation); every replica started afterwards opens the collection the alias names, refusing an
embedder other than the one that collection records (`memory.stores.active_index` keeps the embedded engine's
pointer file). Imported only on the server path: qdrant-client is an optional dependency."""

from __future__ import annotations

import re
from typing import Any

from qdrant_client import AsyncQdrantClient
from qdrant_client import models as qm

from memory.errors import StoreConfigMismatch

ALIAS_SUFFIX = "_active"


def alias_name(prefix: str) -> str:
    return f"{prefix}{ALIAS_SUFFIX}"


async def aliased_collection(client: AsyncQdrantClient, prefix: str) -> str | None:
    """The collection the deployment's alias points at, or None before any re-embedding."""
    response = await client.get_aliases()
    wanted = alias_name(prefix)
    return next((a.collection_name for a in response.aliases if a.alias_name == wanted), None)


async def collection_to_open(client: AsyncQdrantClient, prefix: str, model_id: str) -> str | None:
    """The collection the alias points at, after checking it records `model_id`; None when there is no alias yet
    (the store then opens the model's own collection). Resolved once, at open: a replica already running keeps
    its collection (its vectors are the old model's) until it is restarted with the new setting."""
    target = await aliased_collection(client, prefix)
    if target is None:
        return None
    info = await client.get_collection(target)
    recorded = (info.config.metadata or {}).get("embedding_model")
    if recorded != model_id:
        raise StoreConfigMismatch(
            f"the alias {alias_name(prefix)} points at {target}, built with {recorded}, but the configured "
            f"embedder is {model_id}; start with that embedder (the earlier collection misses every write since "
            "the switch and is kept only until `hindsight reembed --drop-old`)"
        )
    return target


async def point_alias(client: AsyncQdrantClient, prefix: str, collection: str) -> None:
    """Point the deployment's alias at `collection`, in one atomic alias operation."""
    alias = alias_name(prefix)
    operations: list[Any] = []
    if await aliased_collection(client, prefix) is not None:
        operations.append(qm.DeleteAliasOperation(delete_alias=qm.DeleteAlias(alias_name=alias)))
    operations.append(
        qm.CreateAliasOperation(create_alias=qm.CreateAlias(collection_name=collection, alias_name=alias))
    )
    await client.update_collection_aliases(change_aliases_operations=operations)


async def inactive_collections(client: AsyncQdrantClient, prefix: str, active: str) -> list[str]:
    """Every hindsight collection of this prefix (`<prefix>_<slug>_<dim>d`) other than `active`."""
    pattern = re.compile(re.escape(prefix) + r"_[a-z0-9_]+_\d+d")
    names = [c.name for c in (await client.get_collections()).collections]
    found = []
    for name in names:
        if name == active or not pattern.fullmatch(name):
            continue
        info = await client.get_collection(name)
        if (info.config.metadata or {}).get("app") == "hindsight":
            found.append(name)
    return sorted(found)

"""Which vector index is the active one, recorded durably so a restart (or another replica) opens it.

Embedded engine: the first index lives in `<data_dir>/vectors`; a re-embedding builds the next one beside it in
`<data_dir>/vectors-<model slug>-<dim>d` and, at the switch, writes the pointer file `<data_dir>/vectors.json`
(`{"directory", "embedding_model", "dimension", "embedder", "previous", "switched_at"}`, replaced atomically).
Without a pointer the active index is `vectors`. Opening with an embedder other than the pointer's is refused
with `StoreConfigMismatch` naming the setting to use: the index of the old model misses every write since the
switch, so it is never opened silently.

Qdrant server: one collection per model as before; a re-embedding points an alias at the new collection
(`memory.stores.qdrant_alias`, kept apart so a core install without qdrant-client never imports it).

Every other index of the deployment (the retired one, or one a crashed migration left behind) is kept until
a drop removes it (`memory.reembed.migration.Migration.drop_old`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memory.errors import StoreConfigMismatch

FIRST_DIRECTORY = "vectors"
POINTER_FILE = "vectors.json"
_INDEX_DIR = re.compile(r"vectors(-[a-z0-9_]+-\d+d)?")


def model_slug(model_id: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", model_id.lower()).strip("_")[:160] or "model"


# -- embedded engine ------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ActiveDirectory:
    directory: str
    embedding_model: str | None  # None: no re-embedding yet (the model is in the index's own store.json)
    embedder: str | None = None


def index_directory(model_id: str, dimension: int) -> str:
    """The directory name a re-embedding to this model builds, e.g. `vectors-use_multilingual_v3-512d`."""
    return f"vectors-{model_slug(model_id)}-{dimension}d"


def read_pointer(data_dir: Path) -> ActiveDirectory:
    path = data_dir / POINTER_FILE
    try:
        raw: dict[str, Any] = json.loads(path.read_text())
    except FileNotFoundError:
        return ActiveDirectory(FIRST_DIRECTORY, None)
    directory = str(raw.get("directory", ""))
    if not _INDEX_DIR.fullmatch(directory):
        raise StoreConfigMismatch(f"{path} names no index directory of this data directory: {directory!r}")
    return ActiveDirectory(directory, str(raw.get("embedding_model")), raw.get("embedder"))


def active_directory(data_dir: Path, model_id: str | None = None) -> Path:
    """The active index directory; with `model_id`, refuse one a re-embedding switched to another model."""
    active = read_pointer(data_dir)
    if model_id is not None and active.embedding_model is not None and active.embedding_model != model_id:
        setting = f" (HINDSIGHT_EMBEDDER={active.embedder})" if active.embedder else ""
        raise StoreConfigMismatch(
            f"the data directory {data_dir} was re-embedded to {active.embedding_model}{setting}, but the "
            f"configured embedder is {model_id}; start with that embedder (the index of the earlier model misses "
            "every write since the switch and is kept only until `hindsight reembed --drop-old`)"
        )
    return data_dir / active.directory


def write_pointer(data_dir: Path, directory: str, model_id: str, dimension: int, embedder: str) -> None:
    """Make `directory` the active index, durably (written, synced, then renamed over the old pointer)."""
    previous = read_pointer(data_dir).directory
    body = {
        "directory": directory,
        "embedding_model": model_id,
        "dimension": dimension,
        "embedder": embedder,
        "previous": previous,
        "switched_at": datetime.now(UTC).isoformat(),
    }
    tmp = data_dir / (POINTER_FILE + ".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(body, indent=2))
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, data_dir / POINTER_FILE)
    fd = os.open(data_dir, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def inactive_directories(data_dir: Path) -> list[str]:
    """Every index directory of the data dir that is not the active one (retired, or a migration's leftover)."""
    active = read_pointer(data_dir).directory
    if not data_dir.is_dir():
        return []
    return sorted(
        entry.name
        for entry in data_dir.iterdir()
        if entry.is_dir() and _INDEX_DIR.fullmatch(entry.name) and entry.name != active
    )


def remove_directory(data_dir: Path, name: str) -> None:
    """Delete an inactive index directory (never the active one)."""
    if name == read_pointer(data_dir).directory or not _INDEX_DIR.fullmatch(name):
        raise ValueError(f"{name} is not an inactive index directory")
    shutil.rmtree(data_dir / name, ignore_errors=False)

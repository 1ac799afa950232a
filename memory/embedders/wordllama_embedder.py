"""`WordLlamaEmbedder`: the default embedder, a static 256-d model that ships inside the `wordllama` package.

It is loaded from the package directory with downloads disabled, so nothing reaches a model hub. Static
embeddings cost microseconds per text, so they run inline; large batches move to a worker thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio.to_thread

from memory.errors import BackendUnavailable

_INLINE_BATCH = 64


class WordLlamaEmbedder:
    def __init__(self, dimension: int = 256) -> None:
        import wordllama  # imported here so that importing the engine stays cheap

        package_dir = Path(wordllama.__file__).parent
        try:
            self._model: Any = wordllama.WordLlama.load(cache_dir=package_dir, disable_download=True, dim=dimension)
        except Exception as exc:
            raise BackendUnavailable(f"could not load the wordllama model from {package_dir}: {exc}") from exc
        self._dimension = dimension

    @property
    def model_id(self) -> str:
        return f"wordllama-l2-supercat-{self._dimension}"

    @property
    def dimension(self) -> int:
        return self._dimension

    def _embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors = self._model.embed(list(texts), norm=True)
        rows: list[list[float]] = vectors.astype("float64").tolist()
        return rows

    async def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if len(texts) <= _INLINE_BATCH:
            return self._embed(texts)
        return await anyio.to_thread.run_sync(self._embed, texts)

    async def embed_query(self, text: str) -> list[float]:
        return self._embed([text])[0]

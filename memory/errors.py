"""The memory engine's error hierarchy; `gateway/errors.py` maps each class to an MCP/HTTP answer."""

from __future__ import annotations


class MemoryEngineError(Exception):
    """Base of every error the engine raises on purpose."""

    code = "internal"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidArgument(MemoryEngineError):
    """The caller's input is malformed or out of bounds; nothing was written."""

    code = "invalid_argument"


class NamespaceForbidden(MemoryEngineError):
    """The scope does not grant the namespace for the requested access."""

    code = "namespace_forbidden"


class NotFound(MemoryEngineError):
    """No memory with that id is visible to the scope (also used when it exists elsewhere)."""

    code = "not_found"


class BackendUnavailable(MemoryEngineError):
    """A store or the embedder failed; the call may be retried."""

    code = "backend_unavailable"


class StoreConfigMismatch(MemoryEngineError):
    """The on-disk store was built with another embedding model or dimension."""

    code = "store_config_mismatch"

"""`WriteArguments`: what a write takes, for `write_memory` and for each item of `write_memories`."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from gateway.operations.base import Kind, OperationArguments
from memory.requests import WriteRequest


class WriteArguments(OperationArguments):
    """One statement to remember. What each field means is in docs/TOOLS.md; only where the name and type do not
    say it is it described here (every description is in every agent's context)."""

    content: str
    namespace: str | None = None  # a batch item without one: the batch's
    kind: Annotated[Kind, Field(description="episodic: an event; semantic: a lasting fact.")] = "episodic"
    importance: float | None = None
    tags: list[str] | None = None
    ttl_seconds: int | None = None
    session_id: str | None = None
    occurred_at: str | None = None
    share_to: list[str] | None = None
    metadata: dict[str, Any] | None = None
    force: Annotated[bool, Field(description="Store even a repeat; supersede nothing.")] = False
    request_id: str | None = None

    def request(self, subject: str, *, namespace: str | None = None, tool: str = "write_memory") -> WriteRequest:
        """The engine's request, written by `subject` (`namespace`: where the arguments name none)."""
        where = self.namespace if self.namespace is not None else namespace
        return self.engine_request(WriteRequest, namespace=where, subject=subject, tool=tool)

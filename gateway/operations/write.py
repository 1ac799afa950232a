"""`WriteArguments`: what a write takes, for `write_memory` and for each item of `write_memories`."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memory.requests import WriteRequest
from memory.validation import parse_instant

Kind = Literal["episodic", "semantic"]


class WriteArguments(BaseModel):
    """One statement to remember. What each field means is in docs/TOOLS.md; only where the name and type do not
    say it is it described here (every description is in every agent's context)."""

    model_config = ConfigDict(strict=True, extra="forbid")

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
        fields = self.model_dump()
        fields["namespace"] = self.namespace if self.namespace is not None else namespace
        fields["occurred_at"] = parse_instant(self.occurred_at, "occurred_at")
        return WriteRequest(**fields, subject=subject, tool=tool)

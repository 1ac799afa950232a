"""The arguments of the tools that write a session (`record_turn`, `update_working_memory`, `record_event`) and of
`list_memories`: each tool's input schema and its engine request come from one model (`gateway.operations.taking`)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from gateway.operations.base import Kind, OperationArguments
from memory.events import EventType

PAIRED = "'call_id' pairs a tool_call with its tool_result."
Hidden = Literal["expired", "superseded", "merged", "forgotten", "passed", "archived"]


class TurnArguments(OperationArguments):
    session_id: str
    role: Literal["user", "assistant", "system", "tool"]
    content: str
    occurred_at: str | None = None
    namespace: str | None = None
    request_id: str | None = None


class StateArguments(OperationArguments):
    session_id: str
    state: dict[str, Any]
    merge: Annotated[bool, Field(description="Deep-merge (null deletes a key); false replaces.")] = True
    ttl_seconds: int | None = None
    namespace: str | None = None
    request_id: str | None = None


class EventArguments(OperationArguments):
    session_id: str
    type: EventType
    content: str
    namespace: str | None = None
    task_id: str | None = None
    metadata: Annotated[
        dict[str, Any] | None, Field(description="'call_id' pairs a tool_call with its tool_result.")
    ] = None
    occurred_at: str | None = None
    request_id: str | None = None


class ListArguments(OperationArguments):
    namespace: str | None = None
    kind: Kind | None = None
    include_deleted: bool = False
    hidden: Hidden | None = None
    limit: int | None = None
    cursor: str | None = None
    history_of: Annotated[str | None, Field(description="Versions of this id")] = None

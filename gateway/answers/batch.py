"""The answer of `write_memories` (`gateway.tools.batch`): one entry per item, in the items' order, each the
answer `write_memory` gives for that statement or the error it would have raised; a contract like
`gateway.answers.shapes`."""

from __future__ import annotations

from typing import Annotated, Literal, NotRequired

from pydantic import Field
from typing_extensions import TypedDict


class ItemError(TypedDict):
    code: Annotated[str, Field(description="A stable error code, as a tool error carries it (invalid_argument, ...).")]
    message: str
    retryable: bool


class ItemAnswer(TypedDict):
    index: Annotated[int, Field(description="The item's position in `items`, from 0.")]
    status: NotRequired[Literal["created", "updated", "skipped"]]
    id: NotRequired[Annotated[str | None, Field(description="The memory's id; null when nothing was stored.")]]
    namespace: NotRequired[str]
    superseded: NotRequired[list[str]]
    reason: NotRequired[str]
    replayed: NotRequired[
        Annotated[bool, Field(description="True: the item's request_id was done before; this is its first answer.")]
    ]
    error: NotRequired[Annotated[ItemError, Field(description="The item was not written (the others were).")]]


class BatchWriteAnswer(TypedDict):
    results: list[ItemAnswer]
    created: int
    updated: int
    skipped: int
    failed: int

"""`OperationArguments`: what every operation's argument model shares: strict checking, and its engine request made
from its fields (those the request has, the instants parsed), so no tool lists its arguments a second time."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict

from memory.validation import parse_instant

INSTANTS = ("occurred_at", "since", "until", "as_of")  # arguments given as text, datetimes in a request
Kind = Literal["episodic", "semantic"]  # a memory's kind, as the tools take it


class EngineRequest(Protocol):
    __dataclass_fields__: ClassVar[dict[str, Any]]


R = TypeVar("R", bound=EngineRequest)


class OperationArguments(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    def engine_request(self, request: type[R], **given: Any) -> R:
        """The engine's `request` of these arguments: the fields it has, each instant parsed, then `given`."""
        names = {field.name for field in dataclasses.fields(request)}
        fields = {name: value for name, value in self.model_dump().items() if name in names}
        for name in INSTANTS:
            if name in fields:
                fields[name] = parse_instant(fields[name], name)
        return request(**{**fields, **given})

"""What selects a memory across namespaces: the subject that wrote it, a tag it carries, a metadata value; each
criterion checked once, where the selection is made."""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory.errors import InvalidArgument
from memory.models import Memory
from memory.values import check_text

MAX_CRITERION_CHARS = 256  # a subject, a tag, a metadata key or value
# a metadata key is one top-level key: no dots or brackets a store could read as a path
METADATA_KEY = re.compile(r"^[A-Za-z0-9_\-]{1,64}$")
Scalar = str | int | float | bool


def _criterion(value: str | None, name: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_CRITERION_CHARS:
        raise InvalidArgument(f"{name} must be a non-empty string of at most {MAX_CRITERION_CHARS} characters")
    return check_text(value, name)


@dataclass(frozen=True, slots=True)
class Selection:
    """Memories that meet every criterion given: written by `written_by` (the subject of the token that wrote it,
    or the author an imported record names), tagged `tag`, and with `metadata[metadata_key] == metadata_value`.
    At least one criterion is required: an empty selection would be the whole tenant."""

    written_by: str | None = None
    tag: str | None = None
    metadata_key: str | None = None
    metadata_value: Scalar | None = None

    def __post_init__(self) -> None:
        _criterion(self.written_by, "written_by")
        _criterion(self.tag, "tag")
        if (self.metadata_key is None) != (self.metadata_value is None):
            raise InvalidArgument("metadata_key and metadata_value go together")
        if self.metadata_key is not None and (
            not isinstance(self.metadata_key, str) or not METADATA_KEY.match(self.metadata_key)
        ):
            raise InvalidArgument("metadata_key must be 1-64 letters, digits, '_' or '-'")
        value = self.metadata_value
        if isinstance(value, str):
            _criterion(value, "metadata_value")
        elif value is not None and not isinstance(value, int | float | bool):
            raise InvalidArgument("metadata_value must be a string, a number or a boolean")
        if self.written_by is None and self.tag is None and self.metadata_key is None:
            raise InvalidArgument("select by at least one of written_by, tag, metadata_key with metadata_value")

    def matches(self, memory: Memory) -> bool:
        if self.written_by is not None and memory.source.subject != self.written_by:
            return False
        if self.tag is not None and self.tag not in memory.tags:
            return False
        if self.metadata_key is not None:
            value = memory.metadata.get(self.metadata_key)
            # True is not 1 here: a boolean criterion selects booleans only
            if value != self.metadata_value or isinstance(value, bool) != isinstance(self.metadata_value, bool):
                return False
        return True

    def first_value(self) -> str:
        """The first criterion's value as text: what an erasure asks to be repeated as its confirmation."""
        value = next(v for v in (self.written_by, self.tag, self.metadata_value) if v is not None)
        return str(value).lower() if isinstance(value, bool) else str(value)

    def describe(self) -> str:
        """The criteria in words, for a forgotten memory's reason and a receipt (names only, no content)."""
        said = []
        if self.written_by is not None:
            said.append(f"written by {self.written_by}")
        if self.tag is not None:
            said.append(f"tagged {self.tag}")
        if self.metadata_key is not None:
            said.append(f"metadata {self.metadata_key}={self.metadata_value}")
        return ", ".join(said)

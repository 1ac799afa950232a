"""`NamespaceScope`: the only key the engine accepts for reading or writing memories.

The engine never takes a tenant or a namespace list on its own: every store call takes a scope and derives the
tenant filter and the namespace filter from it. Scopes are built by `tenancy/` from a verified principal (an
architecture test checks that no other package constructs one).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from memory.errors import InvalidArgument, NamespaceForbidden

NAMESPACE_PATTERN = re.compile(r"[a-z0-9][a-z0-9:_.-]{0,127}")
TENANT_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}")
MAX_SUBJECT_LENGTH = 256  # characters of a subject (a token's `sub`, a memory's writer)


def validate_namespace(namespace: object) -> str:
    """Return `namespace` if it is a well-formed namespace name, else raise `InvalidArgument`."""
    if not isinstance(namespace, str) or not NAMESPACE_PATTERN.fullmatch(namespace):
        raise InvalidArgument(
            "namespace must match [a-z0-9][a-z0-9:_.-]{0,127} (lowercase letters, digits, ':', '_', '.', '-')"
        )
    return namespace


@dataclass(frozen=True, slots=True)
class NamespaceScope:
    """What one caller may touch: one tenant, the namespaces it may read and those it may write.

    `admin` scopes may read and write every namespace of their tenant.
    """

    tenant: str
    readable: tuple[str, ...]
    writable: tuple[str, ...]
    admin: bool = False
    # the grants as sets, for membership tests (a recall over 100 granted namespaces checks each of them)
    _reads: frozenset[str] = field(init=False, repr=False, compare=False)
    _writes: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not TENANT_PATTERN.fullmatch(self.tenant):
            raise InvalidArgument("tenant id is malformed")
        for namespace in (*self.readable, *self.writable):
            validate_namespace(namespace)
        object.__setattr__(self, "_writes", frozenset(self.writable))
        object.__setattr__(self, "_reads", frozenset(self.readable) | self._writes)

    def can_read(self, namespace: str) -> bool:
        return self.admin or namespace in self._reads

    def can_write(self, namespace: str) -> bool:
        return self.admin or namespace in self._writes

    @property
    def default_write_namespace(self) -> str | None:
        return self.writable[0] if self.writable else None

    @property
    def all_readable(self) -> tuple[str, ...]:
        """Every namespace this scope reads when the caller names none (write grants imply read)."""
        seen = dict.fromkeys((*self.readable, *self.writable))
        return tuple(seen)

    def read_targets(self, requested: Sequence[str] | None) -> tuple[str, ...]:
        """The namespaces a read covers: all readable ones, or the requested ones if each is granted.

        An empty tuple means "every namespace of the tenant" and is only returned for admin scopes.
        """
        if requested is None:
            if self.admin:
                return ()  # every namespace of the tenant; stores accept () only from admin scopes
            targets = self.all_readable
            if not targets:
                raise NamespaceForbidden("this token grants no readable namespace")
            return targets
        if not requested:
            raise InvalidArgument("namespaces must not be empty; omit it to read every granted namespace")
        checked = [validate_namespace(ns) for ns in requested]
        forbidden = [ns for ns in checked if not self.can_read(ns)]
        if forbidden:
            raise NamespaceForbidden(f"namespace not readable with this token: {', '.join(sorted(forbidden))}")
        return tuple(dict.fromkeys(checked))

    def write_target(self, requested: str | None) -> str:
        """The namespace a write goes to: the requested one if writable, else the first write grant."""
        if requested is None:
            default = self.default_write_namespace
            if default is None:
                raise NamespaceForbidden("this token grants no writable namespace")
            return default
        validate_namespace(requested)
        if not self.can_write(requested):
            raise NamespaceForbidden(f"namespace not writable with this token: {requested}")
        return requested

    def readable_subset(self, namespaces: Iterable[str]) -> bool:
        return all(self.can_read(ns) for ns in namespaces)

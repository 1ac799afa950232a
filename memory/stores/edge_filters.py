"""The embedded engine's filter primitives (`EdgeFilters`, `FILTERS`): `memory.stores.filters` written in
`qdrant_edge`'s conditions, and `scope_conditions`, the tenant and namespace conditions every query carries."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import qdrant_edge as qe

from memory.scope import NamespaceScope
from memory.stores.filters import Filters


class EdgeFilters(Filters[Any, qe.Filter]):
    def match(self, key: str, value: str) -> qe.FieldCondition:
        return qe.FieldCondition(key, match=qe.MatchValue(value))

    def match_any(self, key: str, values: Sequence[str]) -> qe.FieldCondition:
        return qe.FieldCondition(key, match=qe.MatchAny(list(values)))

    def in_range(self, key: str, gte: float | None = None, lte: float | None = None) -> qe.FieldCondition:
        return qe.FieldCondition(key, range=qe.RangeFloat(gte=gte, lte=lte))

    def has_id(self, ids: Sequence[str]) -> qe.HasIdCondition:
        return qe.HasIdCondition(set(ids))

    def filter(self, must: Sequence[Any], must_not: Sequence[Any] = ()) -> qe.Filter:
        return qe.Filter(must=list(must), must_not=list(must_not) if must_not else None)


FILTERS = EdgeFilters()


def scope_conditions(scope: NamespaceScope, namespaces: Sequence[str]) -> list[Any]:
    """The tenant and namespace conditions every query carries, tenant first. `()` means the whole tenant (admin
    only)."""
    return FILTERS.scope(scope, namespaces)

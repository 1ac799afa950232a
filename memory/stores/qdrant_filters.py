"""The Qdrant server's filter primitives (`ServerFilters`, `FILTERS`): `memory.stores.filters` written in
`qdrant_client`'s models. Unlike the embedded store, the server store never leaves out a namespace condition as
redundant: every gateway replica writes to the server, so no process knows a tenant's namespaces
(`memory.stores.edge_namespaces`)."""

from __future__ import annotations

from collections.abc import Sequence

from qdrant_client import models as qm

from memory.stores.filters import Filters


class ServerFilters(Filters[qm.Condition, qm.Filter]):
    def match(self, key: str, value: str) -> qm.FieldCondition:
        return qm.FieldCondition(key=key, match=qm.MatchValue(value=value))

    def match_any(self, key: str, values: Sequence[str]) -> qm.FieldCondition:
        return qm.FieldCondition(key=key, match=qm.MatchAny(any=list(values)))

    def in_range(self, key: str, gte: float | None = None, lte: float | None = None) -> qm.FieldCondition:
        return qm.FieldCondition(key=key, range=qm.Range(gte=gte, lte=lte))

    def has_id(self, ids: Sequence[str]) -> qm.HasIdCondition:
        return qm.HasIdCondition(has_id=list(ids))

    def filter(self, must: Sequence[qm.Condition], must_not: Sequence[qm.Condition] = ()) -> qm.Filter:
        return qm.Filter(must=list(must), must_not=list(must_not) if must_not else None)


FILTERS = ServerFilters()

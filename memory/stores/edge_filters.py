"""The embedded engine's filters: the tenant and namespace conditions every query carries, and what a recall
search lets through (statuses, kinds, tags, session, times, never an expired memory)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import qdrant_edge as qe

from memory.clock import to_timestamp
from memory.ports import RecallFilter
from memory.scope import NamespaceScope
from memory.stores.common import checked_namespaces
from memory.stores.payload import TENANT_FIELD, recallable_statuses


def match_value(key: str, value: str) -> qe.FieldCondition:
    return qe.FieldCondition(key, match=qe.MatchValue(value))


def match_any(key: str, values: Sequence[str]) -> qe.FieldCondition:
    return qe.FieldCondition(key, match=qe.MatchAny(list(values)))


def scope_conditions(scope: NamespaceScope, namespaces: Sequence[str]) -> list[Any]:
    """The tenant and namespace conditions every query carries. `()` means the whole tenant (admin only)."""
    conditions: list[Any] = [match_value(TENANT_FIELD, scope.tenant)]
    checked = checked_namespaces(scope, namespaces)
    if checked:
        conditions.append(match_any("namespace", checked))
    return conditions


def search_filter(in_scope: Sequence[Any], flt: RecallFilter) -> qe.Filter:
    """What a search may return within its scope conditions: the statuses, kinds, tags, session, times and
    attributes `flt` asks for, never a memory expired at `flt.now`."""
    must: list[Any] = [
        *in_scope,
        match_any("status", recallable_statuses(flt.include_superseded, flt.include_archived)),
    ]
    if flt.attributes:
        must.append(match_any("attributes", flt.attributes))
    if flt.kinds:
        must.append(match_any("kind", [k.value for k in flt.kinds]))
    if flt.tags:
        must.append(match_any("tags", flt.tags))
    if flt.session_id is not None:
        must.append(match_value("session_id", flt.session_id))
    if flt.since is not None or flt.until is not None:
        must.append(
            qe.FieldCondition(
                "created_at",
                range=qe.RangeFloat(gte=to_timestamp(flt.since), lte=to_timestamp(flt.until)),
            )
        )
    expired = qe.FieldCondition("expires_at", range=qe.RangeFloat(lte=flt.now.timestamp()))
    return qe.Filter(must=must, must_not=[expired])

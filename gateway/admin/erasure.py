"""`purge_namespace` behind the tool: the engine's erasure of a namespace from every store
(`memory.erasure`), the idempotency answers that name it or its memories in between, and the receipt the answer
and the audit log carry (counts per store, the time and the admin; never content)."""

from __future__ import annotations

from gateway.answers import PurgeAnswer
from gateway.runtime import Runtime
from gateway.serialize import iso
from memory.erasure import Tiers, erase_planned, plan_namespace
from memory.scope import NamespaceScope
from tenancy import Principal


async def purge_everywhere(rt: Runtime, principal: Principal, scope: NamespaceScope, namespace: str) -> PurgeAnswer:
    """Erase `namespace` from every store; a retry after a crash mid-way finishes it (`memory.erasure`)."""
    plan = await plan_namespace(rt.memories, scope, namespace)
    answers = await rt.idempotency.erase(principal.tenant, mentions=(plan.namespace, *plan.every_id))
    erased = await erase_planned(rt.memories, scope, plan, Tiers(rt.working, rt.events, rt.recall_log, rt.summarizer))
    removed = {
        "memories": erased.memories,
        "copies_in_other_namespaces": erased.copies,
        "consolidated_from_copies": erased.derived,
        "events": erased.events,
        "event_sessions": erased.event_sessions,
        "working_memory_sessions": erased.working_sessions,
        "recall_log_entries": erased.recall_log_entries,
        "idempotency_answers": answers,
    }
    return {
        "status": "purged",
        "namespace": plan.namespace,
        "deleted": erased.memories,
        "events_deleted": erased.events,
        "sessions_deleted": erased.event_sessions,
        "receipt": {
            "at": iso(rt.memories.clock.now()) or "",
            "by": principal.subject,
            "namespace": plan.namespace,
            "removed": removed,
        },
    }

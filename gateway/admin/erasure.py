"""Erasure behind the admin tools: the engine's removal from every store (`memory.erasure`), the idempotency
answers that name what goes in between (by their ids, and the subject's own), and the receipt the answer and the
audit log carry (counts per store, the time and the admin; never content)."""

from __future__ import annotations

from gateway.answers.serialize import iso
from gateway.answers.shapes import ErasureReceipt, PurgeAnswer
from gateway.services.runtime import Runtime
from memory.erasure import Erased, Tiers, erase_planned, erase_selected, plan_namespace, plan_selection
from memory.scope import NamespaceScope
from memory.selection import Selection
from tenancy import Principal


def tiers(rt: Runtime) -> Tiers:
    return Tiers(rt.working, rt.events, rt.recall_log, rt.summarizer)


def receipt(rt: Runtime, principal: Principal, erased: Erased, answers: int, **what: str) -> ErasureReceipt:
    """What was removed per store, when and by whom, and what was erased (`namespace` or `selection`)."""
    removed = {
        "memories": erased.memories,
        "copies_in_other_namespaces": erased.copies,
        "consolidated_from_them": erased.derived,
        "events": erased.events,
        "event_sessions": erased.event_sessions,
        "working_memory_sessions": erased.working_sessions,
        "recall_log_entries": erased.recall_log_entries,
        "idempotency_answers": answers,
    }
    made: ErasureReceipt = {"at": iso(rt.memories.clock.now()) or "", "by": principal.subject, "removed": removed}
    if "namespace" in what:
        made["namespace"] = what["namespace"]
    if "selection" in what:
        made["selection"] = what["selection"]
    return made


async def purge_everywhere(rt: Runtime, principal: Principal, scope: NamespaceScope, namespace: str) -> PurgeAnswer:
    """Erase `namespace` from every store; a retry after a crash mid-way finishes it (`memory.erasure`)."""
    plan = await plan_namespace(rt.memories, scope, namespace)
    answers = await rt.idempotency.erase(principal.tenant, mentions=(plan.namespace, *plan.every_id))
    erased = await erase_planned(rt.memories, scope, plan, tiers(rt))
    return {
        "status": "purged",
        "namespace": plan.namespace,
        "deleted": erased.memories,
        "events_deleted": erased.events,
        "sessions_deleted": erased.event_sessions,
        "receipt": receipt(rt, principal, erased, answers, namespace=plan.namespace),
    }


async def erase_everywhere(
    rt: Runtime, principal: Principal, scope: NamespaceScope, selection: Selection
) -> ErasureReceipt:
    """Erase what `selection` names from every store of the tenant; a retry after a crash finishes it."""
    plan = await plan_selection(rt.memories, scope, selection)
    subjects = () if selection.written_by is None else (selection.written_by,)
    answers = await rt.idempotency.erase(principal.tenant, subjects=subjects, mentions=plan.every_id)
    erased = await erase_selected(rt.memories, scope, plan, tiers(rt))
    return receipt(rt, principal, erased, answers, selection=selection.describe())

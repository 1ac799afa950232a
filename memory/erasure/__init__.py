"""Erasure (issue #35): a namespace's data removed from every store the engine keeps — its memories, their linked
copies in other namespaces and the semantic memories consolidated from those copies (rebuilt without them), its
sessions' events and working memory, and the recall-log entries that asked it or returned any of them.

`plan_namespace` reads what is to go; `erase_planned` removes it, in an order a retry can finish from whatever
point a crash left it at (`memory.erasure.namespace`). `plan_selection` and `erase_selected` do the same for what a
`memory.selection.Selection` names across namespaces: what one subject wrote (with its events), or what carries a
tag or a metadata value (`memory.erasure.selected`). The gateway removes the idempotency answers that name the
planned ids in between, and keeps the receipt.
"""

from memory.erasure.namespace import NamespacePlan, erase_planned, plan_namespace, steps
from memory.erasure.parts import Erased, Tiers
from memory.erasure.selected import SelectionPlan, erase_selected, plan_selection

__all__ = [
    "Erased",
    "NamespacePlan",
    "SelectionPlan",
    "Tiers",
    "erase_planned",
    "erase_selected",
    "plan_namespace",
    "plan_selection",
    "steps",
]

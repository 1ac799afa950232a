"""Erasure (issue #35): a namespace's data removed from every store the engine keeps — its memories, their linked
copies in other namespaces and the semantic memories consolidated from those copies (rebuilt without them), its
sessions' events and working memory, and the recall-log entries that asked it or returned any of them.

`plan_namespace` reads what is to go; `erase_planned` removes it, in an order a retry can finish from whatever
point a crash left it at (`memory.erasure.namespace`). The gateway removes the idempotency answers that name the
planned ids in between, and keeps the receipt.
"""

from memory.erasure.namespace import Erased, NamespacePlan, Tiers, erase_planned, plan_namespace, steps

__all__ = ["Erased", "NamespacePlan", "Tiers", "erase_planned", "plan_namespace", "steps"]

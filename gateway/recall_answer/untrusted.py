"""What a recall does with memories whose text reads as instructions to the model reading them (marked `untrusted`
by the write pipeline, `memory.pipeline.injection`), by the tenant's policy (`HINDSIGHT_UNTRUSTED_MEMORIES`,
`HINDSIGHT_UNTRUSTED_TENANTS`): `mark` shows them flagged; `withhold_others` keeps those another subject wrote out
of this token's recall (what an agent reads from a namespace it shares with other writers); `withhold_context` keeps
them out of `format: "context"` blocks. A withheld memory is never dropped in silence: the answer counts it
(`withheld`) and says so in its text; it stays listable (`list_memories`) and is recalled under `mark`."""

from __future__ import annotations

from collections.abc import Sequence

from memory.models import RecallHit
from memory.pipeline.injection import untrusted_mark
from ops.config import Settings, UntrustedPolicy


def policy_for(settings: Settings, tenant: str) -> UntrustedPolicy:
    return settings.untrusted_tenants.get(tenant, settings.untrusted_memories)


def withheld_untrusted(
    hits: Sequence[RecallHit], policy: UntrustedPolicy, reader: str, *, context: bool
) -> tuple[list[RecallHit], int]:
    """`hits` without those the policy withholds from `reader` (a subject) in this format, and how many it withheld."""
    if policy == "mark" or (policy == "withhold_context" and not context):
        return list(hits), 0
    kept = [
        hit
        for hit in hits
        if untrusted_mark(hit.memory) is None or (policy == "withhold_others" and hit.memory.source.subject == reader)
    ]
    return kept, len(hits) - len(kept)


def withheld_line(count: int) -> str:
    return f"({count} recalled {'memory' if count == 1 else 'memories'} withheld: text that reads as instructions.)"

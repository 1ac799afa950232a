"""Provenance in a recall's answer: who wrote a memory, and whether its text can be trusted.

- `with_authors`: a memory another subject than the reader wrote names its author (`author`, and "(by agent-7)" in
  its line), so an agent reading a namespace other writers share can weigh a memory by who wrote it.
- memories whose text reads as instructions to the model reading them (marked `untrusted` by the write pipeline,
  `memory.pipeline.injection`) by the tenant's policy (`HINDSIGHT_UNTRUSTED_MEMORIES`,
  `HINDSIGHT_UNTRUSTED_TENANTS`, `withheld_untrusted`): `mark` shows them flagged; `withhold_others` keeps those
  another subject wrote out of this token's recall; `withhold_context` keeps them out of `format: "context"`
  blocks. A withheld memory is never dropped in silence: the answer counts it (`withheld`) and says so in its
  text; it stays listable (`list_memories`) and is recalled under `mark`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

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


AUTHOR_CHARS = 40  # an author is named by at most this many characters of its subject


def with_authors(hits: Sequence[RecallHit], reader: str) -> list[RecallHit]:
    """`hits`, each written by another subject than `reader` naming its author (what an agent reading a namespace
    other writers share needs to weigh a memory, and to find what one token wrote)."""
    return [
        hit
        if hit.memory.source.subject in (reader, "")
        else replace(hit, author=hit.memory.source.subject[:AUTHOR_CHARS])
        for hit in hits
    ]

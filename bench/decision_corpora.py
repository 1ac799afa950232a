"""Whole corpora through the real write path: the share of memories each rule of the write pipeline hides.

Corpora, the way users log them: LoCoMo dev (each turn as "[1:56 pm on 8 May, 2023] Speaker: text" with
`occurred_at` = its session's time, a namespace per conversation) and MemoryBank cn and en (each turn's user
query as the text, `occurred_at` = its history date, a namespace per user, written by that user). Each write goes
through `MemoryService.write` (default pipeline, embedded engine, WordLlama) with a `ManualClock` one second after
the turn's time, as a live gateway would receive it. At the end of each namespace's ingestion its memories are
listed from the store and counted: plans whose day had passed by then (kept, demoted in recall) or is still
ahead, superseded, merged (writes that updated an older memory in place: the older wording is gone), skipped
(chit-chat; exact repeats apart), and the turns still visible.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from bench.decision_set import DATASETS, header_time, memorybank, memorybank_time, parse_locomo_time, read_json
from bench.scopes import agent_scope
from memory.clock import ManualClock
from memory.embedders import WordLlamaEmbedder
from memory.lifecycle.hidden import is_in_state, plan_until
from memory.models import Memory, WriteStatus
from memory.ports import ListQuery
from memory.requests import WriteRequest
from memory.scope import NamespaceScope
from memory.service import MemoryService
from memory.stores.edge import EdgeVectorStore

TENANT = "corpora"
ARRIVAL = timedelta(seconds=1)
QUICK_TURNS = 120  # turns per corpus with --quick


@dataclass(frozen=True, slots=True)
class Turn:
    namespace: str
    subject: str
    content: str
    at: datetime


@dataclass
class Hidden:
    corpus: str
    written: int = 0  # turns written
    skipped: int = 0  # not stored: chit-chat (density filter)
    duplicates: int = 0  # not stored: an exact repeat of a live memory
    merged: int = 0  # stored by updating an older memory in place
    memories: int = 0  # memories listed at the end (each written turn that created one)
    superseded: int = 0  # memories marked superseded at the end
    passed_plans: int = 0  # plans whose day had passed at the end of their namespace's ingestion (kept, demoted)
    plans_ahead: int = 0  # plans whose day was still ahead at the end
    visible: int = 0  # memories live and current at the end, passed plans included (one turn's text each)

    def share(self, count: int) -> float:
        return count / self.written if self.written else 0.0


def locomo_turns(root: Path = DATASETS) -> Iterator[Turn]:
    for conversation in read_json("locomo/locomo10-dev.json", root):
        namespace = "locomo:" + conversation["sample_id"]
        sessions = conversation["conversation"]
        keys = [k for k, v in sessions.items() if k.startswith("session_") and isinstance(v, list)]
        for key in sorted(keys, key=lambda k: int(k.removeprefix("session_"))):
            at = parse_locomo_time(sessions[f"{key}_date_time"])
            for turn in sessions[key]:
                content = f"[{header_time(at)}] {turn['speaker']}: {turn['text']}"
                yield Turn(namespace, "agent", content, at)


def memorybank_turns(dataset: str, root: Path = DATASETS) -> Iterator[Turn]:
    for number, user in enumerate(memorybank(dataset, root).values()):
        subject = f"user-{number}"
        for day in sorted(user["history"]):
            for index, turn in enumerate(user["history"][day]):
                yield Turn(f"{dataset}:{number}", subject, turn["query"], memorybank_time(day, index))


async def _listed(store: EdgeVectorStore, scope: NamespaceScope, namespace: str) -> list[Memory]:
    found: list[Memory] = []
    after: str | None = None
    while True:
        page, after = await store.list(scope, ListQuery((namespace,), None, True, 200, after))
        found.extend(page)
        if after is None:
            return found


async def ingest(
    service: MemoryService, store: EdgeVectorStore, clock: ManualClock, name: str, turns: Sequence[Turn]
) -> Hidden:
    hidden = Hidden(name)
    namespaces = list(dict.fromkeys(t.namespace for t in turns))
    scope = agent_scope(TENANT, "corpora", namespaces, admin=True)
    ended: dict[str, datetime] = {}
    for turn in turns:
        clock.set(turn.at + ARRIVAL)
        request = WriteRequest(
            content=turn.content, subject=turn.subject, namespace=turn.namespace, occurred_at=turn.at
        )
        outcome = await service.write(scope, request)
        hidden.written += 1
        ended[turn.namespace] = turn.at + ARRIVAL
        if outcome.status is WriteStatus.SKIPPED:
            if outcome.stored:
                hidden.duplicates += 1
            else:
                hidden.skipped += 1
        elif outcome.status is WriteStatus.UPDATED:
            hidden.merged += 1
    for namespace in namespaces:
        end = ended[namespace]
        for memory in await _listed(store, scope, namespace):
            hidden.memories += 1
            until = plan_until(memory)
            passed = until is not None and until <= end
            hidden.superseded += memory.superseded_by is not None
            hidden.passed_plans += passed
            hidden.plans_ahead += until is not None and not passed
            live = memory.deleted_at is None and memory.superseded_by is None
            hidden.visible += live and not is_in_state(memory, "expired", end)  # a ttl that ran out hides
    return hidden


def corpora(quick: bool = False, root: Path = DATASETS) -> dict[str, list[Turn]]:
    found = {
        "LoCoMo dev, `[time] Speaker: text` + occurred_at": list(locomo_turns(root)),
        "MemoryBank cn, user queries + occurred_at": list(memorybank_turns("memorybank_cn", root)),
        "MemoryBank en, user queries + occurred_at": list(memorybank_turns("memorybank_en", root)),
    }
    return {name: turns[:QUICK_TURNS] if quick else turns for name, turns in found.items()}


async def measure(quick: bool = False, workdir: Path | None = None) -> list[Hidden]:
    embedder = WordLlamaEmbedder()
    clock = ManualClock()
    results: list[Hidden] = []
    with tempfile.TemporaryDirectory(prefix="hindsight-corpora-", dir=workdir) as tmp:
        store = EdgeVectorStore.open(Path(tmp) / "vectors", model_id=embedder.model_id, dimension=embedder.dimension)
        try:
            service = MemoryService(store, embedder, clock)
            for name, turns in corpora(quick).items():
                results.append(await ingest(service, store, clock, name, turns))
        finally:
            await store.close()
    return results


def render(results: Sequence[Hidden]) -> list[str]:
    def pct(h: Hidden, count: int) -> str:
        return f"{count} ({h.share(count):.1%})"

    lines = [
        "Whole corpora through the same write path (`bench/decision_corpora.py`; a namespace per conversation or "
        "user, the clock one second after each turn), as a share of the turns written: plans whose day had passed "
        "when the namespace's last turn was written (kept as history, demoted in recall, never hidden) or is still "
        "ahead; what the rules hide: superseded, merged (the write updated an older memory in place: that "
        "wording is gone), skipped; visible: live, current memories.",
        "",
        "| corpus | turns | passed plans (demoted) | plans ahead | superseded | merged (updated) | skipped (chit-chat) "
        "| skipped (exact repeat) | visible |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for h in results:
        cells = [h.corpus, str(h.written), pct(h, h.passed_plans), pct(h, h.plans_ahead), pct(h, h.superseded)]
        cells += [pct(h, h.merged), pct(h, h.skipped), pct(h, h.duplicates), pct(h, h.visible)]
        lines.append("| " + " | ".join(cells) + " |")
    return lines

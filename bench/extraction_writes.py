"""How the extraction-quality stage (`bench.extraction_quality`) writes and asks one conversation: the events an
agent would record of its turns (`source_events`), the four namespaces written through the real `MemoryService`
(`Written`, `Writer`: the raw turns and the facts `RuleExtractor` extracted, as `AgentSessions` writes them), what
was hidden at question time, and every question asked in each namespace (`run_conversation`), its hits counted
for the dialogue turns they stand for."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from bench.extraction_figures import CONFIGS, TOP_K, Asked, Dataset, LanguageFigures
from gateway.evaluation import memorybank
from gateway.evaluation.formats import OCCURRED_AT_ONLY
from gateway.evaluation.locomo import Conversation, Question, Turn
from gateway.evaluation.metrics import Tally
from gateway.evaluation.results import hidden_state, ranked_dia_ids
from gateway.evaluation.runner import ASK_DELAY
from memory.clock import ManualClock
from memory.extraction import ExtractedFact, RuleExtractor, SourceEvent
from memory.models import WriteStatus
from memory.requests import ListRequest, RecallRequest, WriteRequest
from memory.scope import NamespaceScope
from memory.service import MemoryService

SUBJECT = "extraction-eval"
EXTRACT_TOOL = "extract"  # the tool `AgentSessions` writes extracted facts with
FACT_SESSION = "session-{}"  # the session a fact is written in: its turn's, as `AgentSessions` writes it
APART_SESSION = "session-{}-extracted"  # the variant: a session of their own, beside the turns'


def dia_id_of(event_id: str) -> str:
    return event_id.split("#", 1)[0]


def source_events(dataset: Dataset, turns: Sequence[Turn]) -> list[SourceEvent]:
    """What an agent would record of these turns: each LoCoMo turn a `user_message` of its speaker; each MemoryBank
    exchange the user's message and the companion's reply (ids `<dia_id>#user`, `<dia_id>#ai`)."""
    events: list[SourceEvent] = []
    for turn in turns:
        if not dataset.exchanges:
            said = OCCURRED_AT_ONLY.text(turn)  # the utterance with a shared photo's caption, no speaker prefix
            events.append(SourceEvent(turn.dia_id, "user_message", said, turn.occurred_at, speaker=turn.speaker))
            continue
        query, _, reply = turn.text.partition(f"\n{memorybank.COMPANION}: ")
        events.append(SourceEvent(f"{turn.dia_id}#user", "user_message", query, turn.occurred_at, speaker=turn.speaker))
        if reply.strip():
            events.append(SourceEvent(f"{turn.dia_id}#ai", "assistant_message", reply, turn.occurred_at))
    return events


@dataclass
class Written:
    """One namespace: the memory each write resolved to, and the turns each memory stands for."""

    name: str
    dia_ids_of: dict[str, list[str]] = field(default_factory=dict)  # memory id -> dialogue ids
    raw_of: dict[str, str] = field(default_factory=dict)  # dialogue id -> the memory its raw turn resolved to
    raw_ids: set[str] = field(default_factory=set)  # memories a raw turn resolved to
    fact_ids: set[str] = field(default_factory=set)  # memories a fact created
    rewritten: set[str] = field(default_factory=set)  # raw turns' memories a fact updated in place
    hidden: dict[str, str | None] = field(default_factory=dict)  # memory id -> why hidden at question time
    follows: dict[str, str | None] = field(default_factory=dict)  # memory id -> the memory it follows in its session

    def attach(self, memory_id: str, dia_ids: Sequence[str]) -> None:
        known = self.dia_ids_of.setdefault(memory_id, [])
        known += [d for d in dia_ids if d not in known]

    def is_fact(self, memory_id: str) -> bool:
        return memory_id in self.fact_ids and memory_id not in self.raw_ids

    def follows_fact(self, memory_id: str) -> bool:
        """Whether the memory written before it in its session is a fact (so a turn lost its turn context)."""
        before = self.follows.get(memory_id)
        return before is not None and self.is_fact(before)


# -- writing -----------------------------------------------------------------------------------------------------


def _raw_request(dataset: Dataset, turn: Turn, namespace: str) -> WriteRequest:
    """A turn as `gateway.evaluation.runner.ingest` writes it."""
    return WriteRequest(
        content=dataset.fmt.text(turn),
        subject=SUBJECT,
        namespace=namespace,
        occurred_at=turn.occurred_at,
        session_id=f"session-{turn.session}",
        metadata={"dia_id": turn.dia_id, "speaker": turn.speaker},
        tool="eval",
    )


def _fact_request(fact: ExtractedFact, session: str, namespace: str) -> WriteRequest:
    """A fact as `AgentSessions` writes it."""
    return WriteRequest(
        content=fact.content,
        subject=SUBJECT,
        namespace=namespace,
        kind=fact.kind,
        occurred_at=fact.occurred_at,
        session_id=session,
        metadata={"source_event_ids": list(fact.source_event_ids), "extracted_by": "rules"},
        tool=EXTRACT_TOOL,
    )


class Writer:
    def __init__(self, service: MemoryService, scope: NamespaceScope, clock: ManualClock) -> None:
        self.service, self.scope, self.clock = service, scope, clock

    async def raw(self, dataset: Dataset, turn: Turn, into: Written) -> None:
        self.clock.set(turn.occurred_at)
        outcome = await self.service.write(self.scope, _raw_request(dataset, turn, into.name))
        if outcome.id is not None:
            into.attach(outcome.id, [turn.dia_id])
            into.raw_of[turn.dia_id] = outcome.id
            into.raw_ids.add(outcome.id)

    async def fact(self, fact: ExtractedFact, session: str, into: Written, tally: Counter[str] | None) -> None:
        self.clock.set(fact.occurred_at)
        outcome = await self.service.write(self.scope, _fact_request(fact, session, into.name))
        dia_ids = list(dict.fromkeys(dia_id_of(s) for s in fact.source_event_ids))
        memory_id = outcome.id
        if memory_id is None:
            what = "not stored (low information)"
        elif outcome.status is WriteStatus.CREATED:
            what = "stored as a memory of its own"
            into.fact_ids.add(memory_id)
        else:
            onto = "a raw turn" if memory_id in into.raw_ids else "an earlier fact"
            verb = "merged into" if outcome.status is WriteStatus.UPDATED else "an exact repeat of"
            if outcome.status is WriteStatus.UPDATED and memory_id in into.raw_ids:
                into.rewritten.add(memory_id)
            what = f"{verb} {onto}"
        if memory_id is not None:
            into.attach(memory_id, dia_ids)
        if tally is not None:
            tally[what] += 1
            tally["superseded a raw turn"] += sum(1 for s in outcome.superseded if s in into.raw_ids)


async def _classify(service: MemoryService, scope: NamespaceScope, written: Written, now: datetime) -> None:
    cursor: str | None = None
    while True:
        page = await service.list(
            scope, ListRequest(namespace=written.name, include_deleted=True, limit=200, cursor=cursor)
        )
        for m in page.memories:
            written.hidden[m.id] = hidden_state(
                deleted_at=m.deleted_at, superseded_by=m.superseded_by, expires_at=m.expires_at, now=now
            )
            written.follows[m.id] = m.follows
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


def _sessions(turns: Sequence[Turn]) -> list[list[Turn]]:
    grouped: dict[int, list[Turn]] = {}
    for turn in turns:
        grouped.setdefault(turn.session, []).append(turn)
    return list(grouped.values())


def _namespace(config: str, dataset: Dataset, conversation: Conversation) -> str:
    slug = "".join(c if c.isalnum() else "-" for c in conversation.sample_id.lower())
    return f"xq-{dataset.key}-{config}-{slug}"


# -- one conversation ----------------------------------------------------------------------------------------------


async def run_conversation(
    service: MemoryService,
    scope: NamespaceScope,
    clock: ManualClock,
    dataset: Dataset,
    conversation: Conversation,
    figures: LanguageFigures,
) -> None:
    extractor = RuleExtractor()
    writer = Writer(service, scope, clock)
    spaces = {config: Written(_namespace(config, dataset, conversation)) for config in CONFIGS}
    cited = {e for q in conversation.questions for e in q.evidence}
    with_fact: set[str] = set()
    for session in _sessions(conversation.turns):
        events = source_events(dataset, session)
        started = time.perf_counter()
        facts = extractor.extract_sync(events)
        figures.extract_seconds += time.perf_counter() - started
        figures.events += len(events)
        figures.facts += len(facts)
        figures.kinds.update(f.kind for f in facts)
        index = {t.dia_id: i for i, t in enumerate(session)}
        after: dict[int, list[ExtractedFact]] = {}  # turn index -> the facts written after it (its last source)
        for fact in facts:
            sources = [dia_id_of(s) for s in fact.source_event_ids]
            with_fact.update(sources)
            after.setdefault(max(index[s] for s in sources), []).append(fact)
        for i, turn in enumerate(session):
            await writer.raw(dataset, turn, spaces["raw"])
            await writer.raw(dataset, turn, spaces["both"])
            await writer.raw(dataset, turn, spaces["apart"])
            for fact in after.get(i, []):
                in_turns, apart = FACT_SESSION.format(turn.session), APART_SESSION.format(turn.session)
                await writer.fact(fact, in_turns, spaces["both"], figures.fact_writes)
                await writer.fact(fact, apart, spaces["apart"], None)
                await writer.fact(fact, in_turns, spaces["facts"], None)
    figures.conversations += 1
    figures.turns += len(conversation.turns)
    figures.turns_with_fact += len(with_fact)
    figures.evidence_turns += len(cited)
    figures.evidence_with_fact += len(cited & with_fact)

    clock.set(conversation.turns[-1].occurred_at + ASK_DELAY)
    for config in ("raw", "both", "apart"):
        space = spaces[config]
        await _classify(service, scope, space, clock.now())
        figures.evidence_hidden[config] += sum(
            1 for e in cited if e not in space.raw_of or space.hidden.get(space.raw_of[e]) is not None
        )
    both = spaces["both"]
    figures.turns_after_fact += sum(1 for memory_id in set(both.raw_of.values()) if both.follows_fact(memory_id))
    figures.raw_memories += len(set(both.raw_of.values()))
    for q in conversation.questions:
        await _ask(service, scope, conversation, q, spaces, figures)


async def _ask(
    service: MemoryService,
    scope: NamespaceScope,
    conversation: Conversation,
    q: Question,
    spaces: dict[str, Written],
    figures: LanguageFigures,
) -> None:
    ranked: dict[str, list[str]] = {}
    counts: dict[str, int] = {}
    facts: dict[str, int] = {}
    both_hits: list[tuple[str, str]] = []
    for config, space in spaces.items():
        hits = await service.recall(scope, RecallRequest(query=q.question, namespaces=[space.name], top_k=TOP_K))
        await service.drain()  # access-count bumps land before the next question, as in the runner
        ranked[config] = ranked_dia_ids([h.memory.id for h in hits], space.dia_ids_of)
        figures.tallies[config].add(ranked[config], q.evidence)
        figures.by_category[config].setdefault(q.category, Tally()).add(ranked[config], q.evidence)
        kinds = [("fact" if space.is_fact(h.memory.id) else "turn", h.memory.content) for h in hits]
        counts[config], facts[config] = len(kinds), sum(1 for kind, _ in kinds if kind == "fact")
        if config == "both":
            both_hits = kinds
    asked = Asked(conversation.sample_id, q.question, q.category, q.evidence, ranked, counts, facts)
    if asked.recall("both") < asked.recall("raw"):
        asked = replace(asked, both_top=tuple(both_hits))
        both = spaces["both"]
        for e in q.evidence:
            if e in ranked["raw"][:TOP_K] and e not in ranked["both"][:TOP_K]:
                raw = both.raw_of.get(e)
                if raw is None or both.hidden.get(raw):
                    figures.lost_causes["hidden"] += 1
                elif raw in both.rewritten:
                    figures.lost_causes["rewritten"] += 1
                elif both.follows_fact(raw):
                    figures.lost_causes["context"] += 1
                else:
                    figures.lost_causes["outranked"] += 1
    figures.asked.append(asked)

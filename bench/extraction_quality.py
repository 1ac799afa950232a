"""`python -m bench.extraction_quality [--quick] [--out PATH]`: do the facts the rule-based extractor writes help or
hurt recall of the evidence, beside the raw turns (issue #17.5)? English (LoCoMo dev) and Chinese (MemoryBank).

Per dataset, every conversation is written four ways, each into a namespace of its own, through the real
`MemoryService` of the runtime the server opens (embedded engine, the default embedder and its calibrated weights)
on a `ManualClock`, every memory at its turn's time:

1. `raw`: every turn as today's evaluation writes it (`gateway.evaluation.runner`): LoCoMo in the plain format
   ("Speaker: text"), MemoryBank as `hindsight eval memorybank` does (the exchange alone, speaker in metadata);
2. `raw + extracted`: the same turns and, after each turn, the facts `RuleExtractor` extracted from it, written as
   `AgentSessions` writes them (the fact's kind, `metadata.source_event_ids`, tool `extract`). The extractor reads a
   session at a time (a LoCoMo session, a MemoryBank day), as it reads an agent's session: a LoCoMo turn is one
   `user_message` of its speaker; a MemoryBank exchange is the user's `user_message` and the companion's
   `assistant_message` (so the companion's "you" resolves to the user);
3. `raw + extracted, facts in a session of their own`: as 2, but each fact in a session beside its turn's
   (`session-N-extracted`), so no fact comes between two turns of a session: the engine joins a dialogue turn to
   the memory written before it in its session (`memory.pipeline.turns`, `memory.recall.ranking`), and a fact there
   takes the previous turn's place (a candidate fix, measured beside the design of 2);
4. `extracted only`: the facts alone.

Every question is asked a day after its conversation's last turn (`top_k` 10) in each namespace; a hit counts for
the turns it stands for: a raw turn for its dialogue id, a fact for the dialogue ids of its source turns (one memory
that several writes resolved to counts for all of them). Reported: recall@5/@10, NDCG@10 and MRR per namespace, the
questions whose evidence the extracted facts pushed out of the top 10 (and why), the share of turns and of evidence
turns the extractor kept a fact of, facts per turn and their kinds, what the write pipeline did with each fact, the
wall time and the machine load. Written to RESULTS.md as its own section (`make bench` runs it too; `--quick`: the
first LoCoMo conversation's first three sessions and three MemoryBank users).
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from bench.config import settings_for
from bench.decision_set import DATASETS
from bench.procinfo import load_average
from bench.sections import closing, stage_main
from bench.stats import paired_bootstrap_interval
from gateway.evaluation import locomo, memorybank
from gateway.evaluation.formats import OCCURRED_AT_ONLY, PLAIN, TurnFormat
from gateway.evaluation.locomo import CATEGORY_NAMES, Conversation, Question, Turn, first_sessions
from gateway.evaluation.metrics import Tally, recall_at
from gateway.evaluation.results import hidden_state, ranked_dia_ids
from gateway.evaluation.runner import ASK_DELAY
from gateway.services.assembly import open_runtime
from memory.clock import ManualClock
from memory.extraction import ExtractedFact, RuleExtractor, SourceEvent
from memory.models import WriteStatus
from memory.requests import ListRequest, RecallRequest, WriteRequest
from memory.scope import NamespaceScope
from memory.service import MemoryService
from ops.config import Settings
from tenancy import SCOPE_ADMIN, SCOPE_READ, SCOPE_WRITE, Principal, scope_for

BEGIN = "<!-- bench:extraction-quality:begin -->"
END = "<!-- bench:extraction-quality:end -->"
HEADING = "## Extracted facts beside raw turns: recall of the evidence, English and Chinese"
TOP_K = 10
SUBJECT = "extraction-eval"
EXTRACT_TOOL = "extract"  # the tool `AgentSessions` writes extracted facts with
CONFIGS = ("raw", "both", "apart", "facts")
LABELS = {
    "raw": "raw turns",
    "both": "raw + extracted",
    "apart": "raw + extracted, facts in a session of their own",
    "facts": "extracted only",
}
FACT_SESSION = "session-{}"  # the session a fact is written in: its turn's, as `AgentSessions` writes it
APART_SESSION = "session-{}-extracted"  # the variant: a session of their own, beside the turns'

METRICS = ("recall@5", "recall@10", "ndcg@10", "mrr")
QUICK_SESSIONS = 3  # --quick: the first LoCoMo conversation's first sessions
QUICK_USERS = 3  # --quick: the first MemoryBank users
QUICK_HELP = f"the first LoCoMo conversation's first {QUICK_SESSIONS} sessions, {QUICK_USERS} MemoryBank users"
EXAMPLES = 4  # lost questions shown per language


@dataclass(frozen=True, slots=True)
class Dataset:
    key: str  # "en" / "zh"
    label: str
    conversations: tuple[Conversation, ...]
    fmt: TurnFormat  # how the raw turns are written
    exchanges: bool  # a turn is "query\nAI: reply" (MemoryBank): two events, the user's and the companion's


def load_datasets(quick: bool = False, root: Path = DATASETS) -> list[Dataset]:
    english = locomo.load(root / "locomo" / "locomo10-dev.json")
    chinese = memorybank.load(root / "memorybank")
    if quick:
        first = english[0]
        english = [first_sessions(first, QUICK_SESSIONS)]
        chinese = chinese[:QUICK_USERS]
    return [
        Dataset("en", "English: LoCoMo dev", tuple(english), PLAIN, exchanges=False),
        Dataset("zh", "Chinese: MemoryBank", tuple(chinese), OCCURRED_AT_ONLY, exchanges=True),
    ]


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


@dataclass(frozen=True, slots=True)
class Asked:
    """One question: the dialogue ids each namespace ranked (top 10 memories), and how many of its hits each
    namespace answered and how many of them were facts."""

    conversation: str
    question: str
    category: int
    evidence: tuple[str, ...]
    ranked: dict[str, list[str]]
    hits: dict[str, int]
    fact_hits: dict[str, int]
    both_top: tuple[tuple[str, str], ...] = ()  # ("fact"/"turn", text) of `both`'s hits, kept for a lost question

    def recall(self, config: str, k: int = TOP_K) -> float:
        return recall_at(self.ranked[config], self.evidence, k)


@dataclass
class LanguageFigures:
    key: str
    label: str
    fmt: str
    conversations: int = 0
    turns: int = 0
    questions: int = 0
    events: int = 0
    evidence_turns: int = 0  # distinct turns some question cites
    evidence_with_fact: int = 0
    turns_with_fact: int = 0
    facts: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    fact_writes: Counter[str] = field(default_factory=Counter)  # what the write path did with each fact (`both`)
    evidence_hidden: Counter[str] = field(default_factory=Counter)  # config -> evidence turns whose raw is hidden
    tallies: dict[str, Tally] = field(default_factory=lambda: {c: Tally() for c in CONFIGS})
    by_category: dict[str, dict[int, Tally]] = field(default_factory=lambda: {c: {} for c in CONFIGS})
    asked: list[Asked] = field(default_factory=list)
    # evidence turns lost from `both`'s top 10: hidden / rewritten / context (follows a fact) / outranked
    lost_causes: Counter[str] = field(default_factory=Counter)
    turns_after_fact: int = 0  # raw turns' memories of `both` written right after a fact of their session
    raw_memories: int = 0  # the memories the raw turns of `both` resolved to
    extract_seconds: float = 0.0
    wall_seconds: float = 0.0

    def means(self, config: str) -> dict[str, float]:
        return self.tallies[config].means()

    def fact_hit_share(self, config: str) -> float:
        """The share of a namespace's top-10 hits that were facts."""
        hits = sum(a.hits[config] for a in self.asked)
        return sum(a.fact_hits[config] for a in self.asked) / hits if hits else 0.0

    def changed(self, config: str = "both") -> tuple[int, int]:
        """Questions whose recall@10 the extracted facts lowered, and raised (in `config` against `raw`)."""
        lower = sum(1 for a in self.asked if a.recall(config) < a.recall("raw"))
        higher = sum(1 for a in self.asked if a.recall(config) > a.recall("raw"))
        return lower, higher


@dataclass
class Figures:
    languages: list[LanguageFigures]
    embedder: str
    quick: bool
    load_before: str
    load_after: str = ""
    wall_seconds: float = 0.0


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


async def _conversation(
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


# -- the stage -------------------------------------------------------------------------------------------------------


def _settings(data_dir: Path) -> Settings:
    # memory maintenance off, as in `hindsight eval`: recall already hides what it would soft-delete
    return settings_for(data_dir).replaced(memory_maintenance_interval_seconds=0)


async def measure(
    quick: bool = False, workdir: Path | None = None, datasets: Sequence[Dataset] | None = None
) -> Figures:
    """The three namespaces of every conversation of `datasets` (default: LoCoMo dev and MemoryBank, or their
    `quick` slices), in one runtime."""
    chosen = list(datasets) if datasets is not None else load_datasets(quick)
    started = time.perf_counter()
    principal = Principal(subject=SUBJECT, tenant="eval", scopes=frozenset({SCOPE_READ, SCOPE_WRITE, SCOPE_ADMIN}))
    scope = scope_for(principal)
    clock = ManualClock(datetime(2023, 1, 1, tzinfo=UTC))
    with tempfile.TemporaryDirectory(prefix="hindsight-extraction-", dir=workdir) as tmp:
        settings = _settings(Path(tmp) / "data")
        figures = Figures([], settings.models.embedder, quick, load_average())
        async with open_runtime(settings, clock) as rt:
            for dataset in chosen:
                language = LanguageFigures(dataset.key, dataset.label, dataset.fmt.name)
                began = time.perf_counter()
                for conversation in dataset.conversations:
                    await _conversation(rt.memories, scope, clock, dataset, conversation, language)
                    language.questions += len(conversation.questions)
                language.wall_seconds = time.perf_counter() - began
                figures.languages.append(language)
    figures.load_after = load_average()
    figures.wall_seconds = time.perf_counter() - started
    return figures


# -- the section -----------------------------------------------------------------------------------------------------


def _share(part: int, whole: int) -> str:
    return f"{part / whole:.1%}" if whole else "–"


def _clip(text: str, limit: int = 90) -> str:
    text = " ".join(text.split()).replace("|", "/")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _verdict(lang: LanguageFigures, config: str) -> str:
    delta = lang.means(config)["recall@10"] - lang.means("raw")["recall@10"]
    verdict = "meets the bar (not lower)" if delta >= 0 else f"**below the bar by {-delta:.3f}**"
    lower, higher = lang.changed(config)
    low, high = paired_bootstrap_interval([a.recall(config) - a.recall("raw") for a in lang.asked])
    return (
        f"{delta:+.3f} (95% paired bootstrap interval over the questions {low:+.3f} to {high:+.3f}), {verdict}; "
        f"lower for {lower} questions, higher for {higher}"
    )


def _recall_table(lang: LanguageFigures) -> list[str]:
    lines = [
        f"### {lang.label}",
        "",
        "| figure | " + " | ".join(LABELS[c] for c in CONFIGS) + " |",
        "| --- |" + " ---: |" * len(CONFIGS),
    ]
    for metric in METRICS:
        lines.append(f"| {metric} | " + " | ".join(f"{lang.means(c)[metric]:.3f}" for c in CONFIGS) + " |")
    lines.append(
        "| facts among the top-10 hits | " + " | ".join(f"{lang.fact_hit_share(c):.0%}" for c in CONFIGS) + " |"
    )
    hidden = [str(lang.evidence_hidden[c]) if c != "facts" else "–" for c in CONFIGS]
    lines.append("| evidence turns whose raw memory is hidden at question time | " + " | ".join(hidden) + " |")
    causes = lang.lost_causes
    lines += [
        "",
        f"recall@10 against raw turns: raw + extracted {_verdict(lang, 'both')}; with the facts in a session of "
        f"their own {_verdict(lang, 'apart')}. In raw + extracted, {lang.turns_after_fact:,} of the "
        f"{lang.raw_memories:,} raw turns' memories were written right after a fact of their session, so the "
        "engine's turn context (the lift of the reply to a matching question, `memory.recall.ranking`, and for a "
        '"Speaker: text" turn the vectors mixed with the previous turn\'s, `memory.pipeline.turns`) joins them to '
        "that fact instead of the turn before. Of the evidence turns raw + "
        f"extracted lost from the top 10: {causes['context']} follow a fact (turn context lost), "
        f"{causes['outranked']} were outranked with their context intact, {causes['rewritten']} had their text "
        f"replaced by a fact merged into them, {causes['hidden']} were hidden (superseded or expired).",
    ]
    return lines


def _category_table(lang: LanguageFigures) -> list[str]:
    rows = []
    for category, name in CATEGORY_NAMES.items():
        tallies = [lang.by_category[c].get(category) for c in CONFIGS]
        if tallies[0] is None:
            continue
        cells = [f"{t.means()['recall@10']:.3f}" if t else "–" for t in tallies]
        rows.append(f"| {name} | {tallies[0].n} | " + " | ".join(cells) + " |")
    if not rows:
        return []
    head = "| category | questions | " + " | ".join(f"{LABELS[c]} recall@10" for c in CONFIGS) + " |"
    return ["", head, "| --- | ---: |" + " ---: |" * len(CONFIGS), *rows]


def _examples(lang: LanguageFigures) -> list[str]:
    lost = sorted(
        (a for a in lang.asked if a.recall("both") < a.recall("raw")),
        key=lambda a: a.recall("both") - a.recall("raw"),
    )[:EXAMPLES]
    if not lost:
        return []
    lines = [
        "",
        f"Questions that lost evidence (the {len(lost)} largest losses): the evidence's rank among the dialogue ids "
        "(raw → raw + extracted), and the first hits of raw + extracted.",
        "",
        "| question | evidence | rank raw → with facts | first hits with facts |",
        "| --- | --- | --- | --- |",
    ]
    for a in lost:
        ranks = []
        for e in a.evidence:
            before = a.ranked["raw"].index(e) + 1 if e in a.ranked["raw"] else None
            after = a.ranked["both"].index(e) + 1 if e in a.ranked["both"] else None
            ranks.append(f"{before or '–'} → {after or '–'}")
        top = "; ".join(f"[{kind}] {_clip(text, 60)}" for kind, text in a.both_top[:3])
        lines.append(
            f"| {_clip(a.question, 70)} ({a.conversation}) | {', '.join(a.evidence)} | {', '.join(ranks)} | {top} |"
        )
    return lines


def render(figures: Figures) -> str:
    langs = figures.languages
    lines = [
        BEGIN,
        HEADING,
        "",
        "`python -m bench.extraction_quality`"
        + (" `--quick`" if figures.quick else "")
        + ": each conversation written four ways (a namespace each) through the real `MemoryService` (embedder "
        f"{figures.embedder}, "
        "its calibrated weights, embedded engine) on a manual clock, each memory at its turn's time: the raw turns "
        '(LoCoMo plain "Speaker: text"; MemoryBank the exchange alone, as `hindsight eval memorybank` writes it), '
        "the raw turns plus the facts `RuleExtractor` extracted from each session (written after their source turn "
        "as `AgentSessions` writes them: the fact's kind, `metadata.source_event_ids`, the turn's session), the same "
        "with each fact in a session of its own beside the turn's (a candidate fix: no fact between two turns of a "
        "session), and the facts alone. Each "
        f"question asked a day after the conversation (`top_k` {TOP_K}); a fact's hit counts for its source turns. "
        f"Bar (issue #17): raw + extracted recall@10 not lower than raw. Wall time {figures.wall_seconds:.0f} s; "
        f"machine load {figures.load_before} at the start, {figures.load_after} at the end.",
        "",
        "| language | conversations | turns | events | questions | evidence turns | facts | facts per turn | "
        "episodic / semantic | turns with no fact | evidence turns with a fact | extraction ms per turn | wall s |",
        "| --- |" + " ---: |" * 12,
    ]
    for lang in langs:
        ms_per_turn = lang.extract_seconds * 1000 / lang.turns if lang.turns else 0.0
        lines.append(
            f"| {lang.label} | {lang.conversations} | {lang.turns:,} | {lang.events:,} | {lang.questions:,} | "
            f"{lang.evidence_turns:,} | {lang.facts:,} | {lang.facts / max(1, lang.turns):.2f} | "
            f"{lang.kinds['episodic']:,} / {lang.kinds['semantic']:,} | "
            f"{_share(lang.turns - lang.turns_with_fact, lang.turns)} | "
            f"{_share(lang.evidence_with_fact, lang.evidence_turns)} | {ms_per_turn:.2f} | {lang.wall_seconds:.0f} |"
        )
    outcomes = sorted({k for lang in langs for k in lang.fact_writes})
    lines += [
        "",
        "What the write path did with each fact in the raw + extracted namespaces:",
        "",
        "| language | " + " | ".join(outcomes) + " |",
        "| --- |" + " ---: |" * len(outcomes),
    ]
    for lang in langs:
        lines.append(f"| {lang.label} | " + " | ".join(f"{lang.fact_writes[k]:,}" for k in outcomes) + " |")
    for lang in langs:
        lines += ["", *_recall_table(lang)]
        if lang.key == "en":
            lines += _category_table(lang)
        lines += _examples(lang)
    return closing(lines, END)


if __name__ == "__main__":
    sys.exit(stage_main("extraction_quality", __doc__, measure, render, BEGIN, END, quick_help=QUICK_HELP))

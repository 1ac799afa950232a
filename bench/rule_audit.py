"""`python -m bench.rule_audit [--quick] [--out PATH]`: does each recall and write rule earn its place (issue #34.5)?

Every rule a recall or a write applies beside plain hybrid relevance (a text cue, a lift, a weight, a write filter)
is switched off in turn, everything else at its default, and the engine is measured again on a fresh store, on
sets split by how far the rule's value was chosen on them: LoCoMo dev's first two conversations (the grid's tuning
half) and its last three (its held-out half: the weights were looked at over all five, so even these are not
independent), two English conversations written for this repository without sight of the rules or of LoCoMo
(`bench/en_conversations/`, never tuned on), and the Chinese personal-assistant questions (`bench/zh_assistant/`:
dev and its blind part). A rule stays only where switching it off lowers a figure it was not tuned on (the
held-out half, the blind English conversations or the Chinese blind part); one that only helps what it was
tuned on is taken out (bench/FINDINGS.md says which). WordLlama, the default embedder; LoCoMo is skipped where
`../shared/datasets` is not beside the repository."""

from __future__ import annotations

import statistics
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from bench import zh_assistant
from bench.decision_set import DATASETS
from bench.procinfo import load_average
from bench.sections import opening, stage_main
from gateway.evaluation import locomo
from gateway.evaluation.locomo import Conversation
from gateway.evaluation.metrics import recall_at
from gateway.evaluation.runner import ASK_DELAY, ingest, recalled
from gateway.services.runtime import scoring_weights
from memory.clock import ManualClock
from memory.embedders import WordLlamaEmbedder
from memory.pipeline.settings import PipelineSettings, for_embedder
from memory.ports import Embedder
from memory.recall.scoring import ScoringWeights
from memory.service import MemoryService
from memory.stores.edge import EdgeVectorStore
from ops.config import Settings
from tenancy import SCOPE_ADMIN, SCOPE_READ, SCOPE_WRITE, Principal, scope_for

BEGIN = "<!-- bench:rule_audit:begin -->"
END = "<!-- bench:rule_audit:end -->"
QUICK_HELP = "LoCoMo's tuning half only"
HEADING = "## Which rules earn their place: each switched off, on sets it was and was not tuned on"
BLIND_CONVERSATIONS = Path(__file__).with_name("en_conversations")
LOCOMO = DATASETS / "locomo" / "locomo10-dev.json"
TUNE_HALF = 2  # LoCoMo dev's first conversations: the grid's tuning half (`gateway.evaluation.runner.grid_search`)
TOP_K = 10


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    what: str
    weights: Mapping[str, Any] = field(default_factory=dict)  # ScoringWeights fields that switch it off
    pipeline: Mapping[str, Any] = field(default_factory=dict)  # PipelineSettings fields that switch it off


DEFAULTS = Rule("(defaults)", "every rule as shipped")
RULES: tuple[Rule, ...] = (
    Rule("speaker cue", "a memory spoken by the person the query names x1.4", weights={"speaker": 0.0}),
    Rule("when cue", "a memory that says when x1.2 for a 'when' query", weights={"when": 0.0}),
    Rule("question damping", "a turn ending in a question x0.85", weights={"question": 0.0}),
    Rule("answer lift", "a matching question lifts its answer twice the context lift", weights={"answer_lift": 1.0}),
    Rule("turn context lift", "a match lifts the next turn (0.3) and the one before", weights={"context": 0.0}),
    Rule("session lift", "every memory + 0.3 x its session's best relevance", weights={"session": 0.0}),
    Rule("keyword feedback", "pseudo-relevance feedback terms at 0.2", weights={"feedback": 0.0}),
    Rule("recency", "0.05 of the score", weights={"recency": 0.0}),
    Rule("importance", "0.05 of the score", weights={"importance": 0.0}),
    Rule("use", "0.05 of the score for how often recalled", weights={"access_frequency": 0.0}),
    Rule("dense cosine", "the embedder's share of relevance (keywords alone without it)", weights={"dense_share": 0.0}),
    Rule(
        "turn vector context",
        "a turn's vector mixed with the previous turn's (0.3)",
        pipeline={"turn_context_weight": 0.0},
    ),
    Rule(
        "turn keyword context",
        "a turn's keywords hold the previous turn's at 0.15",
        pipeline={"turn_context_keyword_weight": 0.0},
    ),
    Rule("time-bound expiry", "a plan is hidden once its day has passed", pipeline={"time_bound_expiry": False}),
    Rule("density filter", "fillers ('ok', 'thanks') are not stored", pipeline={"density_filter": False}),
    Rule(
        "conflict detection",
        "a changed value supersedes, a near-duplicate updates",
        pipeline={"conflict_detection": False},
    ),
    Rule("importance rules", "a write's importance from its words", pipeline={"importance_rules": False}),
)


@dataclass
class Figures:
    """One configuration's figures: recall@10 per LoCoMo and blind conversation, and the Chinese questions' ranks."""

    locomo: dict[str, list[float]] = field(default_factory=dict)  # conversation -> each question's recall@10
    blind: dict[str, list[float]] = field(default_factory=dict)
    zh: dict[str, tuple[float, float]] = field(default_factory=dict)  # part -> (recall@1, recall@3)


def configured(embedder: Embedder, rule: Rule) -> tuple[ScoringWeights, PipelineSettings]:
    weights = scoring_weights(Settings(_env_file=None), embedder.model_id)
    return replace(weights, **rule.weights), replace(for_embedder(embedder.model_id), **rule.pipeline)


async def conversation_recall(
    embedder: Embedder, rule: Rule, conversations: Sequence[Conversation], workdir: Path
) -> dict[str, list[float]]:
    """recall@10 of each question of each conversation, every one written through the real write path into its own
    namespace of one fresh store and asked a day after its last turn (as `hindsight eval locomo` in process)."""
    weights, pipeline = configured(embedder, rule)
    store = EdgeVectorStore.open(workdir, model_id=embedder.model_id, dimension=embedder.dimension)
    clock = ManualClock(conversations[0].turns[0].occurred_at)
    principal = Principal(subject="audit", tenant="audit", scopes=frozenset({SCOPE_READ, SCOPE_WRITE, SCOPE_ADMIN}))
    scope = scope_for(principal)
    figures: dict[str, list[float]] = {}
    try:
        service = MemoryService(store, embedder, clock, weights=weights, pipeline=pipeline)
        for conversation in conversations:
            ingested = await ingest(service, scope, clock, conversation)
            clock.set(conversation.turns[-1].occurred_at + ASK_DELAY)
            found = figures[conversation.sample_id] = []
            for question in conversation.questions:
                ranked, _ = await recalled(service, scope, ingested, question.question, TOP_K)
                found.append(recall_at(ranked, question.evidence, TOP_K))
    finally:
        await store.close()
    return figures


async def chinese_recall(embedder: Embedder, rule: Rule, workdir: Path) -> dict[str, tuple[float, float]]:
    weights, pipeline = configured(embedder, rule)
    users = zh_assistant.load()
    ranks = await zh_assistant.engine_ranks(embedder, users, workdir, weights=weights, pipeline=pipeline)
    rows = [(u.part, q.answers) for u in users for q in u.questions]
    figures = {}
    for part in ("dev", "blind"):
        chosen = [(r, gold) for (p, gold), r in zip(rows, ranks, strict=True) if p == part]
        figures[part] = (
            statistics.fmean(recall_at(r, gold, 1) for r, gold in chosen),
            statistics.fmean(recall_at(r, gold, 3) for r, gold in chosen),
        )
    return figures


def blind_conversations() -> list[Conversation]:
    return [c for path in sorted(BLIND_CONVERSATIONS.glob("*.json")) for c in locomo.load(path)]


async def measure(quick: bool = False, workdir: Path | None = None) -> dict[str, Any]:
    embedder = WordLlamaEmbedder()
    dev = locomo.load(LOCOMO) if LOCOMO.exists() else []
    if quick:
        dev = dev[:TUNE_HALF]
    blind = blind_conversations()
    results: dict[str, Figures] = {}
    load_before = load_average()
    with tempfile.TemporaryDirectory(prefix="hindsight-rule-audit-", dir=workdir) as tmp:
        for n, rule in enumerate((DEFAULTS, *RULES)):
            print(f"rule_audit: {rule.name}", file=sys.stderr, flush=True)
            figures = Figures()
            if dev:
                figures.locomo = await conversation_recall(embedder, rule, dev, Path(tmp) / f"{n}-locomo")
            if blind:
                figures.blind = await conversation_recall(embedder, rule, blind, Path(tmp) / f"{n}-blind")
            figures.zh = await chinese_recall(embedder, rule, Path(tmp) / f"{n}-zh")
            results[rule.name] = figures
    return {
        "results": results,
        "locomo": [c.sample_id for c in dev],
        "blind": {c.sample_id: len(c.questions) for c in blind},
        "load": (load_before, load_average()),
    }


def pooled(by_conversation: Mapping[str, list[float]], ids: Sequence[str]) -> float | None:
    """recall@10 over every question of the conversations `ids` (pooled, as the grid reports a half)."""
    values = [v for i in ids for v in by_conversation.get(i, [])]
    return statistics.fmean(values) if values else None


NOISE = 0.005  # a difference smaller than this is read as none


def columns(figures: Figures, locomo_ids: Sequence[str], blind_ids: Sequence[str]) -> dict[str, float | None]:
    """The figures of one configuration, by column: those tuned on first, then those it was not tuned on."""
    return {
        "LoCoMo tuning half": pooled(figures.locomo, locomo_ids[:TUNE_HALF]),
        "Chinese dev @1": figures.zh["dev"][0],
        "Chinese dev @3": figures.zh["dev"][1],
        "LoCoMo held-out half": pooled(figures.locomo, locomo_ids[TUNE_HALF:]),
        "English blind": pooled(figures.blind, blind_ids),
        "Chinese blind @1": figures.zh["blind"][0],
        "Chinese blind @3": figures.zh["blind"][1],
    }


UNSEEN = ("LoCoMo held-out half", "English blind", "Chinese blind @1", "Chinese blind @3")


def verdict(changes: Mapping[str, float | None]) -> str:
    """What switching a rule off did: it lowered a figure it was not tuned on and raised none (it earns its place),
    lowered one and raised another (mixed), lowered only a figure it was tuned on, or nothing beyond `NOISE`."""
    unseen = [change for name, change in changes.items() if name in UNSEEN and change is not None]
    seen = [change for name, change in changes.items() if name not in UNSEEN and change is not None]
    if any(change <= -NOISE for change in unseen):
        return "mixed" if any(change >= NOISE for change in unseen) else "earns its place"
    if any(change <= -NOISE for change in seen):
        return "helps only what it was tuned on"
    return "no effect"


def _difference(value: float | None, base: float | None) -> float | None:
    return value - base if value is not None and base is not None else None


def render(results: dict[str, Any]) -> str:
    figures: dict[str, Figures] = results["results"]
    locomo_ids, blind_ids = results["locomo"], list(results["blind"])
    base = columns(figures[DEFAULTS.name], locomo_ids, blind_ids)
    names = [name for name, value in base.items() if value is not None]
    load_before, load_after = results["load"]
    lines = [
        *opening(BEGIN, HEADING, "rule_audit", __doc__),
        "",
        f"LoCoMo dev: {len(locomo_ids)} conversations; English blind: "
        + ", ".join(f"{name} ({count} questions)" for name, count in results["blind"].items())
        + f"; recall@10 for the conversations, recall@1 / @3 for the Chinese questions. Load average "
        f"{load_before} before, {load_after} after (figures of quality: the load does not move them).",
        "",
        "| rule switched off | what it does | " + " | ".join(names) + " | verdict |",
        "| --- | --- |" + " ---: |" * len(names) + " --- |",
        "| (none: the defaults) | every rule as shipped | " + " | ".join(f"{base[n]:.3f}" for n in names) + " | |",
    ]
    for rule in RULES:
        row = columns(figures[rule.name], locomo_ids, blind_ids)
        changes = {n: _difference(row[n], base[n]) for n in names}
        cells = " | ".join(f"{change:+.3f}" if change is not None else "–" for change in changes.values())
        lines.append(f"| {rule.name} | {rule.what} | {cells} | {verdict(changes)} |")
    lines += [
        "",
        "Each rule row gives the change when only that rule is off (negative: the rule helps). The verdict reads "
        f"only differences of at least {NOISE}: 'earns its place' where switching it off lowers a figure it was not "
        "tuned on (LoCoMo's held-out half, the blind English conversations, the Chinese blind part) and raises "
        "none, 'mixed' where it lowers one and raises another, 'no effect' where no figure moves: a write filter's "
        "work is measured by its own labelled sets (bench.decisions, bench.expired_plans, bench.as_of).",
        "",
        END,
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(stage_main("rule_audit", __doc__, measure, render, BEGIN, END, quick_help=QUICK_HELP))

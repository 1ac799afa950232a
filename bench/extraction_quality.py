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
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from bench.config import settings_for
from bench.decision_set import DATASETS
from bench.extraction_figures import TOP_K, Dataset, Figures, LanguageFigures
from bench.extraction_tables import category_table, examples, recall_table, share
from bench.extraction_writes import SUBJECT, run_conversation
from bench.procinfo import load_average
from bench.sections import closing, stage_main
from gateway.evaluation import locomo, memorybank
from gateway.evaluation.formats import OCCURRED_AT_ONLY, PLAIN
from gateway.evaluation.locomo import first_sessions
from gateway.services.assembly import open_runtime
from memory.clock import ManualClock
from ops.config import Settings
from tenancy import SCOPE_ADMIN, SCOPE_READ, SCOPE_WRITE, Principal, scope_for

BEGIN = "<!-- bench:extraction-quality:begin -->"
END = "<!-- bench:extraction-quality:end -->"
HEADING = "## Extracted facts beside raw turns: recall of the evidence, English and Chinese"
QUICK_SESSIONS = 3  # --quick: the first LoCoMo conversation's first sessions
QUICK_USERS = 3  # --quick: the first MemoryBank users
QUICK_HELP = f"the first LoCoMo conversation's first {QUICK_SESSIONS} sessions, {QUICK_USERS} MemoryBank users"


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
                    await run_conversation(rt.memories, scope, clock, dataset, conversation, language)
                    language.questions += len(conversation.questions)
                language.wall_seconds = time.perf_counter() - began
                figures.languages.append(language)
    figures.load_after = load_average()
    figures.wall_seconds = time.perf_counter() - started
    return figures


# -- the section -----------------------------------------------------------------------------------------------------


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
            f"{share(lang.turns - lang.turns_with_fact, lang.turns)} | "
            f"{share(lang.evidence_with_fact, lang.evidence_turns)} | {ms_per_turn:.2f} | {lang.wall_seconds:.0f} |"
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
        lines += ["", *recall_table(lang)]
        if lang.key == "en":
            lines += category_table(lang)
        lines += examples(lang)
    return closing(lines, END)


if __name__ == "__main__":
    sys.exit(stage_main("extraction_quality", __doc__, measure, render, BEGIN, END, quick_help=QUICK_HELP))

"""`python -m bench.expired_plans [--quick] [--out PATH]`: what a plan whose day has passed is worth to recall.

A plan read from the text ("I'm having an art show next month") is never hidden: once its day has passed, recall
keeps it as history, marks it (`memory.lifecycle.hidden`) and, for a question about the present, weighs it at
`ScoringWeights.passed_plan` times its relevance (1 by default: not lowered). This runs LoCoMo dev in the
timestamp-header format through the real `MemoryService` (embedded engine, WordLlama), questions asked at the end
of each conversation (`gateway.evaluation.runner.evaluate`), once per weight side by side in one run: 0 (passed
plans at the bottom for such questions), 0.5, and 1 (the default: kept at full relevance). Written to RESULTS.md
as its own section (`make bench` runs it too; `--quick`: the first three sessions of one conversation).
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from bench.decision_set import DATASETS
from bench.sections import stage_main
from gateway.evaluation import locomo
from gateway.evaluation.formats import HEADER
from gateway.evaluation.results import EvalReport
from gateway.evaluation.runner import evaluate
from memory.clock import ManualClock
from memory.embedders import WordLlamaEmbedder
from memory.recall.scoring import ScoringWeights
from memory.service import MemoryService
from memory.stores.edge import EdgeVectorStore
from tenancy import SCOPE_ADMIN, SCOPE_READ, SCOPE_WRITE, Principal, scope_for

BEGIN = "<!-- bench:expired-plans:begin -->"
END = "<!-- bench:expired-plans:end -->"
HEADING = "## Passed plans: how much they weigh in recall"
QUICK_SESSIONS = 3  # --quick: the first sessions of the first conversation
QUICK_HELP = f"only the first {QUICK_SESSIONS} sessions of the first conversation"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}


WEIGHTS = (0.0, 0.5, 1.0)


async def run_one(conversations: Sequence[locomo.Conversation], passed_plan: float, workdir: Path) -> EvalReport:
    embedder = WordLlamaEmbedder()
    path = workdir / f"passed-{passed_plan}"
    store = EdgeVectorStore.open(path, model_id=embedder.model_id, dimension=embedder.dimension)
    clock = ManualClock(datetime.now(UTC))
    principal = Principal(subject="eval", tenant="eval", scopes=frozenset({SCOPE_READ, SCOPE_WRITE, SCOPE_ADMIN}))
    try:
        weights = replace(ScoringWeights(), passed_plan=passed_plan)
        service = MemoryService(store, embedder, clock, weights=weights)
        return await evaluate(service, scope_for(principal), clock, conversations, fmt=HEADER)
    finally:
        await store.close()


def render(result: Sequence[tuple[float, EvalReport]]) -> str:
    def row(weight: float, report: EvalReport) -> str:
        system = report.systems["hindsight"]
        name = f"{weight:g}" + (" (default)" if weight == ScoringWeights().passed_plan else "")
        cells = [name, f"{system.overall.means()['recall@10']:.3f}"]
        for category in CATEGORIES:
            tally = system.by_category.get(category)
            cells.append(f"{tally.means()['recall@10']:.3f}" if tally else "–")
        return "| " + " | ".join(cells) + " |"

    first = result[0][1]
    lines = [
        BEGIN,
        HEADING,
        "",
        f"`python -m bench.expired_plans`: LoCoMo dev, {first.conversations} conversations, {first.questions} "
        "questions, timestamp-header turns through the real `MemoryService` in process, questions asked at the end "
        "of each conversation, once per `passed_plan` weight (the factor on a passed plan's relevance for a "
        'question about the present, "...now?", "目前..."; 0 puts them at the bottom for such questions). '
        "Hiding passed plans outright (what the engine did before it only noted them) gave 0.780 in an earlier run.",
        "",
        "| passed_plan | recall@10 | " + " | ".join(CATEGORIES.values()) + " |",
        "|" + " --- |" * (len(CATEGORIES) + 2),
        *(row(weight, report) for weight, report in result),
        "",
        END,
    ]
    return "\n".join(lines) + "\n"


async def measure(quick: bool = False, workdir: Path | None = None) -> list[tuple[float, EvalReport]]:
    conversations = locomo.load(DATASETS / "locomo" / "locomo10-dev.json")
    if quick:  # the first sessions of the first conversation: the smoke run checks the section, not the figure
        first = conversations[0]
        conversations = [locomo.first_sessions(first, QUICK_SESSIONS)]
    with tempfile.TemporaryDirectory(prefix="hindsight-passed-", dir=workdir) as tmp:
        return [(weight, await run_one(conversations, weight, Path(tmp))) for weight in WEIGHTS]


if __name__ == "__main__":
    sys.exit(stage_main("expired_plans", __doc__, measure, render, BEGIN, END, quick_help=QUICK_HELP))

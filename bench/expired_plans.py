"""`python -m bench.expired_plans [--quick] [--out PATH]`: what hiding a passed plan costs recall, measured.

An expired plan ("I'm having an art show next month", read after that month) is soft-deleted by maintenance and
no longer recalled (DESIGN §4, `memory.pipeline.expiry`). The alternative is to keep it as history and demote it.
This measures the most that alternative could win: LoCoMo dev in the timestamp-header format through the real
`MemoryService` (embedded engine, WordLlama), once with the default pipeline and once with no expiry read from
the text at all (every plan kept at full score: an upper bound for any demotion), questions asked at the end of
each conversation (`memory.evaluation.runner.evaluate`), side by side in one run. Written to RESULTS.md as its
own section (`make bench` runs it too; `--quick`: one conversation).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import anyio

from bench.decision_set import DATASETS
from bench.sections import replace_section
from memory.clock import ManualClock
from memory.embedders import WordLlamaEmbedder
from memory.evaluation import locomo
from memory.evaluation.formats import HEADER
from memory.evaluation.results import EvalReport
from memory.evaluation.runner import evaluate
from memory.pipeline import for_embedder
from memory.service import MemoryService
from memory.stores.edge import EdgeVectorStore
from tenancy import SCOPE_ADMIN, SCOPE_READ, SCOPE_WRITE, Principal, scope_for

BEGIN = "<!-- bench:expired-plans:begin -->"
END = "<!-- bench:expired-plans:end -->"
HEADING = "## Passed plans: hidden or kept"
QUICK_CONVERSATIONS = 1
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}


async def run_one(conversations: Sequence[locomo.Conversation], expiry: bool, workdir: Path) -> EvalReport:
    embedder = WordLlamaEmbedder()
    store = EdgeVectorStore.open(workdir / f"expiry-{expiry}", model_id=embedder.model_id, dimension=embedder.dimension)
    clock = ManualClock(datetime.now(UTC))
    principal = Principal(subject="eval", tenant="eval", scopes=frozenset({SCOPE_READ, SCOPE_WRITE, SCOPE_ADMIN}))
    try:
        pipeline = for_embedder(embedder.model_id, time_bound_expiry=expiry)
        service = MemoryService(store, embedder, clock, pipeline=pipeline)
        return await evaluate(service, scope_for(principal), clock, conversations, fmt=HEADER)
    finally:
        await store.close()


def render(result: tuple[EvalReport, EvalReport]) -> str:
    hidden, kept = result

    def row(name: str, report: EvalReport) -> str:
        system = report.systems["hindsight"]
        cells = [name, f"{system.overall.means()['recall@10']:.3f}", str(report.evidence_expired)]
        for category in CATEGORIES:
            tally = system.by_category.get(category)
            cells.append(f"{tally.means()['recall@10']:.3f}" if tally else "–")
        return "| " + " | ".join(cells) + " |"

    head = "| passed plans | recall@10 | evidence turns expired | " + " | ".join(CATEGORIES.values()) + " |"
    lines = [
        BEGIN,
        HEADING,
        "",
        f"`python -m bench.expired_plans`: LoCoMo dev, {hidden.conversations} conversations, {hidden.questions} "
        "questions, timestamp-header turns through the real `MemoryService` in process, questions asked at the end "
        "of each conversation, with the default pipeline and with no expiry read from the text (every plan kept at "
        "full score: the most that keeping passed plans as demoted history could win).",
        "",
        head,
        "|" + " --- |" * (len(CATEGORIES) + 3),
        row("hidden once passed (default)", hidden),
        row("never expired (upper bound of keeping them)", kept),
        "",
        END,
    ]
    return "\n".join(lines) + "\n"


def write_section(path: Path, section: str) -> None:
    replace_section(path, section, BEGIN, END)


async def measure(quick: bool = False, workdir: Path | None = None) -> tuple[EvalReport, EvalReport]:
    conversations = locomo.load(DATASETS / "locomo" / "locomo10-dev.json")
    if quick:
        conversations = conversations[:QUICK_CONVERSATIONS]
    with tempfile.TemporaryDirectory(prefix="hindsight-expired-", dir=workdir) as tmp:
        hidden = await run_one(conversations, True, Path(tmp))
        kept = await run_one(conversations, False, Path(tmp))
    return hidden, kept


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.expired_plans", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"only the first {QUICK_CONVERSATIONS} conversations")
    parser.add_argument("--out", type=Path, help="also write the section into this RESULTS.md")
    args = parser.parse_args(argv)
    section = render(anyio.run(measure, args.quick))
    print(section)
    if args.out is not None:
        write_section(args.out, section)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`python -m bench.as_of [--out PATH]`: does a recall as of a date answer what was true then (issue #34.4)?

The set (`bench/as_of/updates.jsonl`, written for this repository before it was measured): 24 scenarios, 12 in
English and 12 in Chinese, each one person's attribute changing over time (where they live, what a team uses, a
favourite, a job, a phone number, an age), stated in 2-3 dated memories with two unrelated memories of the same
person beside them, and 2-3 questions each asking what held at a date. Half the scenarios are `blind`: written
with the rest, never looked at while changing a rule, reported apart. Every memory goes through the real
`MemoryService` write pipeline (its conflict rules decide what supersedes what; nothing is linked by hand), then
each question is recalled with `as_of` at the end of its day, and once more without it (the present), top 5.
Reported per language and part: hit@1 and hit@3 of the memory valid at the date, the same for the present recall,
and how many of the labelled replacements the write pipeline made."""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.sections import closing, opening, stage_main
from gateway.services.runtime import scoring_weights
from memory.clock import ManualClock
from memory.embedders import WordLlamaEmbedder
from memory.requests import RecallRequest, WriteRequest
from memory.service import MemoryService
from memory.stores.edge import EdgeVectorStore
from ops.config import Settings
from tenancy import SCOPE_READ, SCOPE_WRITE, Principal, scope_for

BEGIN = "<!-- bench:as_of:begin -->"
END = "<!-- bench:as_of:end -->"
HEADING = "## Recall as of a date: labelled update questions"
CASES = Path(__file__).with_name("as_of") / "updates.jsonl"
TOP_K = 5


@dataclass(frozen=True, slots=True)
class Scenario:
    id: str
    lang: str
    part: str
    facts: list[tuple[str, datetime]]  # the versions, oldest first
    noise: list[tuple[str, datetime]]
    questions: list[tuple[str, datetime, int]]  # (question, as of the end of that day, index of the fact)


def day(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def load(path: Path = CASES) -> list[Scenario]:
    scenarios = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            scenarios.append(
                Scenario(
                    row["id"],
                    row["lang"],
                    row["part"],
                    [(text, day(at)) for text, at in row["facts"]],
                    [(text, day(at)) for text, at in row["noise"]],
                    [(q, day(at) + timedelta(days=1, seconds=-1), answer) for q, at, answer in row["questions"]],
                )
            )
    return scenarios


async def measure(quick: bool = False, workdir: Path | None = None) -> dict[str, Any]:
    """Per (language, part): each question's (as_of rank, present rank) of the memory valid at its date (0: not in
    the top 5), and (replacements made, labelled)."""
    embedder = WordLlamaEmbedder()
    rows: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="hindsight-as-of-", dir=workdir) as tmp:
        store = EdgeVectorStore.open(Path(tmp), model_id=embedder.model_id, dimension=embedder.dimension)
        clock = ManualClock(day("2026-06-01"))
        weights = scoring_weights(Settings(_env_file=None), embedder.model_id)
        service = MemoryService(store, embedder, clock, weights=weights)
        try:
            for s in load():
                namespace = f"user:{s.id}"
                principal = Principal(
                    subject=s.id,
                    tenant="asof",
                    write_namespaces=(namespace,),
                    scopes=frozenset({SCOPE_READ, SCOPE_WRITE}),
                )
                scope = scope_for(principal)
                ids: dict[int, str] = {}
                labelled = [(text, at, index) for index, (text, at) in enumerate(s.facts)]
                writes = sorted(labelled + [(text, at, -1) for text, at in s.noise], key=lambda w: w[1])
                made = 0
                for text, at, index in writes:
                    request = WriteRequest(content=text, subject=s.id, namespace=namespace, occurred_at=at)
                    outcome = await service.write(scope, request)
                    if index >= 0 and outcome.id is not None:
                        ids[index] = outcome.id
                        made += int(index > 0 and ids.get(index - 1) in outcome.superseded)
                group = rows.setdefault(f"{s.lang} {s.part}", {"questions": [], "made": 0, "labelled": 0})
                group["made"] += made
                group["labelled"] += len(s.facts) - 1
                for question, at, answer in s.questions:
                    ranks = []
                    for as_of in (at, None):
                        asked = RecallRequest(query=question, namespaces=[namespace], top_k=TOP_K, as_of=as_of)
                        hits = [h.memory.id for h in await service.recall(scope, asked)]
                        ranks.append(hits.index(ids[answer]) + 1 if answer in ids and ids[answer] in hits else 0)
                    group["questions"].append((ranks[0], ranks[1], s.id, question))
        finally:
            await store.close()
    return rows


def render(rows: dict[str, Any]) -> str:
    lines = [
        *opening(BEGIN, HEADING, "as_of", __doc__),
        "",
        "| language, part | questions | as_of hit@1 | as_of hit@3 | present hit@1 | present hit@3 "
        "| replacements made / labelled |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for key in sorted(rows):
        group = rows[key]
        qs = group["questions"]

        def share(column: int, k: int, qs: list[Any] = qs) -> float:
            return statistics.fmean(1.0 if 0 < q[column] <= k else 0.0 for q in qs)

        lines.append(
            f"| {key} | {len(qs)} | {share(0, 1):.3f} | {share(0, 3):.3f} | {share(1, 1):.3f} | {share(1, 3):.3f} "
            f"| {group['made']} / {group['labelled']} |"
        )
    missed = [(q[2], q[3]) for group in rows.values() for q in group["questions"] if q[0] != 1]
    if missed:
        lines += [
            "",
            "Questions whose answer as of the date was not first: " + "; ".join(f"{i} “{q}”" for i, q in missed) + ".",
        ]
    return closing(lines, END)


if __name__ == "__main__":
    sys.exit(stage_main("as_of", __doc__, measure, render, BEGIN, END))

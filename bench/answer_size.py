"""`python -m bench.answer_size [--out PATH]`: how much text a recall answer costs the LLM that reads it.

One LoCoMo dev conversation (its turns as plain text, each with `occurred_at`) and one MemoryBank Chinese user's
history are written over MCP into the real app in this process (`gateway.evaluation.target.in_process`); then each
conversation's questions (LoCoMo's own; for MemoryBank, its user's own messages as queries) are recalled with the
default `top_k` in three ways side by side: lean hits (the default), `detail: "full"` (every stored field, what
every answer carried before), and full with `explain`. Reports the characters of the answer's text per hit and per
answer (medians), the ratio full / lean, and what `token_budget` leaves of an answer. Written to RESULTS.md as its
own section (`make bench` runs it too).
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.decision_set import DATASETS
from bench.procinfo import load_average
from bench.sections import closing, stage_main
from gateway.evaluation import locomo
from gateway.evaluation.target import eval_settings, in_process
from memory.text.tokens import count_tokens

BEGIN = "<!-- bench:answer-size:begin -->"
END = "<!-- bench:answer-size:end -->"
HEADING = "## Recall answers: what the LLM reads"
WAYS: dict[str, dict[str, Any]] = {
    "lean (default)": {},
    "full": {"detail": "full"},
    "full + explain": {"detail": "full", "explain": True},
}
BEFORE = "before: every field, spaced JSON"  # what every answer was before lean hits: `full` without `when`
BUDGETS = (100, 300)


def memorybank_user(limit: int) -> tuple[list[str], list[str]]:
    """The first Chinese MemoryBank user's messages (memories) and a sample of them again as queries."""
    data = json.loads((DATASETS / "memorybank/memory_bank_cn.json").read_text(encoding="utf-8"))
    user = next(iter(data.values()))
    said = [turn["query"] for day in user["history"].values() for turn in day if turn.get("query")]
    said = said[:limit]
    return said, said[:: max(1, len(said) // 40)]


def before(full: dict[str, Any]) -> str:
    """The answer as the gateway gave it before hits were lean: every stored field and the score (no `when`),
    JSON with a space after each separator."""
    hits = [{k: v for k, v in hit.items() if k != "when"} for hit in full["memories"]]
    return json.dumps({"memories": hits}, ensure_ascii=False)


async def measure(quick: bool = False, workdir: Path | None = None) -> dict[str, Any]:
    conversation = locomo.load(DATASETS / "locomo/locomo10-dev.json")[0]
    texts, queries = memorybank_user(60 if quick else 200)
    ways = [*WAYS, BEFORE]
    sizes: dict[str, dict[str, list[float]]] = {lang: {way: [] for way in ways} for lang in ("en", "zh")}
    budgets: dict[int, list[int]] = {budget: [] for budget in BUDGETS}
    with tempfile.TemporaryDirectory(prefix="hindsight-answer-size-", dir=workdir) as tmp:
        async with in_process(eval_settings(Path(tmp))) as target:
            client = target.client

            async def recall(namespace: str, query: str, extra: dict[str, Any]) -> tuple[str, dict[str, Any]]:
                result = await client.call_tool("recall_memory", {"query": query, "namespaces": [namespace], **extra})
                if result.is_error or result.structured_content is None:
                    raise RuntimeError(f"recall_memory failed: {result.content}")
                return result.content[0].text, result.structured_content  # type: ignore[union-attr]

            for turn in conversation.turns:
                body = {"content": turn.text, "namespace": "en", "occurred_at": turn.occurred_at.isoformat()}
                await client.call_tool("write_memory", {**body, "metadata": {"speaker": turn.speaker}})
            for text in texts:
                await client.call_tool("write_memory", {"content": text, "namespace": "zh"})
            asked = [("en", q.question) for q in conversation.questions][: 30 if quick else None]
            asked += [("zh", q) for q in queries]
            for lang, query in asked:
                for way, extra in WAYS.items():
                    text, answer = await recall(lang, query, extra)
                    if hits := len(answer["memories"]):
                        sizes[lang][way].append(len(text) / hits)
                        if way == "full":
                            sizes[lang][BEFORE].append(len(before(answer)) / hits)
                for budget in budgets:
                    text, _ = await recall(lang, query, {"token_budget": budget})
                    budgets[budget].append(count_tokens(text))
    return {"questions": len(asked), "sizes": sizes, "budgets": budgets, "load": load_average()}


def render(figures: dict[str, Any]) -> str:
    lines = [
        BEGIN,
        HEADING,
        "",
        f"`python -m bench.answer_size`: {figures['questions']} recalls (LoCoMo dev conversation 1 in English, one "
        "MemoryBank user's messages in Chinese) over MCP into the app in this process, default `top_k`, each asked "
        "three ways side by side; characters of the answer's JSON text per hit, medians (the before row is the "
        f"same answers encoded as the gateway gave them before lean hits); machine load {figures['load']}.",
        "",
        "| answer | en: chars per hit | × lean | zh: chars per hit | × lean |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    sizes = figures["sizes"]
    lean = {lang: statistics.median(sizes[lang]["lean (default)"]) for lang in sizes}
    for way in sizes["en"]:
        cells = [way]
        for lang in ("en", "zh"):
            per_hit = statistics.median(sizes[lang][way])
            cells += [f"{per_hit:.0f}", f"{per_hit / lean[lang]:.1f}"]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "| token_budget | answer tokens (median) | largest |", "| ---: | ---: | ---: |"]
    for budget, spent in figures["budgets"].items():
        lines.append(f"| {budget} | {statistics.median(spent):.0f} | {max(spent)} |")
    return closing(lines, END)


if __name__ == "__main__":
    sys.exit(stage_main("answer_size", __doc__, measure, render, BEGIN, END))

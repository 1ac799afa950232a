"""`python -m bench.budget [--quick] [--out PATH]`: evidence delivered within a token budget (issue #30).

What an agent reads of a recall is the text content of the tool result. Every LoCoMo dev conversation (its turns
written over MCP the way `hindsight eval locomo` writes them: "Speaker: text", `occurred_at`, `session_id`,
metadata) and every MemoryBank Chinese user (each exchange written as `hindsight eval memorybank` does) go into
the real app in this process (`gateway.evaluation.target.in_process`); each question (LoCoMo's own, every category the
eval scores; MemoryBank's probing questions with the evidence labelled in `gateway/evaluation/labels/`) is then
answered side by side, within B = 250 and 500 tokens (`memory.text.tokens.count_tokens`), by:

- new: `recall_memory(query, format="context", token_budget=B)`, its text content, whatever it is at run time;
- previous: the answer the gateway gave before (`{"context", "memories", "omitted"}` JSON), rebuilt from a plain
  `recall_memory(query)` by the frozen copy in `bench.budget_text.previous_answer`;
- bm25 lines: plain BM25 over the same turns, "[YYYY-MM-DD] text" lines packed best first into B.

Evidence delivered is the share of a question's evidence turns whose words are in the text, contiguously
(`bench.budget_text.evidence_delivered`), averaged over questions. Also: the tokens of the tool definitions a
read/write token lists, and the overhead per hit of a recall without a budget (default and `format="context"`).
`--quick`: one conversation with a sample of its questions (fixed seed) and the first MemoryBank users.
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import TextContent

from bench.budget_text import Bm25Lines, evidence_delivered, overhead_per_hit, previous_answer, tool_tokens
from bench.decision_set import DATASETS
from bench.procinfo import load_average
from bench.sections import closing, stage_main
from gateway.cli.errors import http_client
from gateway.evaluation import locomo, memorybank
from gateway.evaluation.formats import BY_NAME, TurnFormat
from gateway.evaluation.locomo import Conversation, Question
from gateway.evaluation.over_mcp import McpEvaluation
from gateway.evaluation.target import EVAL_SECRET, LOCAL_URL, eval_settings, in_process
from gateway.web.app import create_app
from memory.text.tokens import count_tokens
from ops.config import Settings
from tenancy import mint_token

BEGIN = "<!-- bench:budget:begin -->"
END = "<!-- bench:budget:end -->"
QUICK_HELP = "one LoCoMo conversation (a sample of its questions) and a few MemoryBank users (~2 minutes)"
HEADING = "## Evidence delivered within a token budget"
BUDGETS = (250, 500)
SYSTEMS = ("new", "previous", "bm25 lines")
SKIPPED_CATEGORIES: frozenset[int] = frozenset()  # `hindsight eval locomo` scores every category with evidence
SEED = 30
QUICK_QUESTIONS = 60  # per LoCoMo conversation in --quick
QUICK_USERS = 4  # MemoryBank users in --quick


@dataclass(frozen=True, slots=True)
class Dataset:
    label: str
    fmt: TurnFormat  # how its turns are written (and what BM25 ranks)
    conversations: list[Conversation]


@dataclass
class Tally:
    """Per system and budget: evidence delivered and tokens used, one value per question; overheads per hit."""

    questions: int = 0
    turns: int = 0
    evidence: dict[str, list[float]] = field(default_factory=dict)
    used: dict[str, list[int]] = field(default_factory=dict)
    overhead: dict[str, list[float]] = field(default_factory=lambda: {"default": [], "context": []})

    def add(self, system: str, budget: int, share: float, text: str) -> None:
        self.evidence.setdefault(f"{system}@{budget}", []).append(share)
        self.used.setdefault(f"{system}@{budget}", []).append(count_tokens(text))

    def summary(self) -> dict[str, Any]:
        def spread(values: list[float]) -> dict[str, float]:
            return {"median": statistics.median(values), "mean": statistics.fmean(values)} if values else {}

        return {
            "questions": self.questions,
            "turns": self.turns,
            "evidence": {key: statistics.fmean(values) for key, values in self.evidence.items()},
            "used": {key: statistics.fmean(values) for key, values in self.used.items()},
            "overhead": {key: spread(values) for key, values in self.overhead.items()},
        }


def say(message: str) -> None:
    print(f"budget: {message}", file=sys.stderr, flush=True)


def sampled(questions: Sequence[Question], limit: int | None, seed: int = SEED) -> list[Question]:
    """The questions the bench asks: those of a category the eval scores, at most `limit` of them (a fixed-seed
    sample, in their own order)."""
    kept = [q for q in questions if q.category not in SKIPPED_CATEGORIES]
    if limit is None or len(kept) <= limit:
        return kept
    return [kept[i] for i in sorted(random.Random(seed).sample(range(len(kept)), limit))]


def datasets(quick: bool) -> list[Dataset]:
    conversations = locomo.load(DATASETS / "locomo/locomo10-dev.json")
    users = memorybank.load(DATASETS / "memorybank")
    return [
        Dataset("LoCoMo dev", BY_NAME["plain"], conversations[:1] if quick else conversations),
        Dataset("MemoryBank, Chinese", BY_NAME["occurred_at"], users[:QUICK_USERS] if quick else users),
    ]


async def recall(client: Client, namespace: str, query: str, extra: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The text content and the structured content of `recall_memory` over `namespace`."""
    result = await client.call_tool("recall_memory", {"query": query, "namespaces": [namespace], **extra})
    block = result.content[0] if result.content else None
    if result.is_error or not isinstance(block, TextContent):
        raise RuntimeError(f"recall_memory failed: {result.content}")
    return block.text, result.structured_content or {}


async def ask(
    client: Client, namespace: str, question: str, bm25: Bm25Lines, evidence: list[str], tally: Tally
) -> None:
    """One question answered by every system within every budget, and the overheads of unbudgeted recalls."""
    plain_text, plain = await recall(client, namespace, question, {})
    hits: list[dict[str, Any]] = plain.get("memories", [])
    for budget in BUDGETS:
        new, _ = await recall(client, namespace, question, {"format": "context", "token_budget": budget})
        for system, text in (
            ("new", new),
            ("previous", previous_answer(hits, budget)),
            ("bm25 lines", bm25.text(question, budget)),
        ):
            tally.add(system, budget, evidence_delivered(evidence, text), text)
    context_text, context = await recall(client, namespace, question, {"format": "context"})
    content_of = {hit["id"]: str(hit["content"]) for hit in hits}
    cited = context.get("memories") or context.get("citations") or []  # a citation may carry no content
    shown = [str(hit["content"]) if "content" in hit else content_of.get(hit["id"]) for hit in cited]
    for key, text, contents in (("default", plain_text, list(content_of.values())), ("context", context_text, shown)):
        if all(content is not None for content in contents):  # else a hit the plain recall did not rank
            per_hit = overhead_per_hit(text, [content for content in contents if content is not None])
            if per_hit is not None:
                tally.overhead[key].append(per_hit)


async def measure_dataset(evaluation: McpEvaluation, dataset: Dataset, limit: int | None) -> Tally:
    tally = Tally()
    fmt = dataset.fmt
    for conversation in dataset.conversations:
        namespace = evaluation.namespace(fmt, conversation)
        questions = sampled(conversation.questions, limit)
        say(f"{dataset.label} {conversation.sample_id}: writing {len(conversation.turns)} turns")
        await evaluation.ingest(fmt, conversation, namespace)
        written = [fmt.text(turn) for turn in conversation.turns]
        texts = {turn.dia_id: text for turn, text in zip(conversation.turns, written, strict=True)}
        bm25 = Bm25Lines(written, [turn.occurred_at.date().isoformat() for turn in conversation.turns])
        say(f"{dataset.label} {conversation.sample_id}: asking {len(questions)} questions")
        for number, q in enumerate(questions, 1):
            await ask(evaluation.client, namespace, q.question, bm25, [texts[e] for e in q.evidence], tally)
            if number % 50 == 0:
                say(f"  {number}/{len(questions)}")
        tally.questions += len(questions)
        tally.turns += len(conversation.turns)
    return tally


@asynccontextmanager
async def read_write_client(settings: Settings) -> AsyncIterator[Client]:
    """An MCP client of a read/write token (no admin) to the app in this process: `tools/list` shows a token only
    the tools its scopes allow, and `gateway.evaluation.target.in_process` holds an admin token."""
    app = create_app(settings)
    token = mint_token(EVAL_SECRET, tenant="eval", subject="agent", read=["user:1"], write=["user:1"])
    async with app.router.lifespan_context(app):
        http = http_client(token, transport=httpx2.ASGITransport(app=app), base_url=LOCAL_URL)
        async with http, Client(streamable_http_client(f"{LOCAL_URL}/mcp", http_client=http)) as client:
            yield client


async def measure(
    quick: bool = False, workdir: Path | None = None, chosen: Sequence[Dataset] | None = None
) -> dict[str, Any]:
    """The figures of `render`; `chosen` replaces the datasets read from beside the repository (a test's own)."""
    started = time.perf_counter()
    chosen = datasets(quick) if chosen is None else chosen
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="hindsight-budget-", dir=workdir) as tmp:
        async with read_write_client(eval_settings(Path(tmp) / "tools")) as client:
            tools = tool_tokens((await client.list_tools()).tools)
        async with in_process(eval_settings(Path(tmp) / "mcp")) as target:
            evaluation = McpEvaluation(target.client, target.embedder, run_tag=target.run_tag)
            for dataset in chosen:
                limit = QUICK_QUESTIONS if quick and dataset.label.startswith("LoCoMo") else None
                tally = await measure_dataset(evaluation, dataset, limit)
                results[dataset.label] = {"conversations": len(dataset.conversations), **tally.summary()}
    seconds = time.perf_counter() - started
    say(f"done in {seconds:.0f} s")
    return {"quick": quick, "datasets": results, "tools": tools, "seconds": seconds, "load": load_average()}


def _spread(values: dict[str, float]) -> str:
    return f"{values['median']:.1f} / {values['mean']:.1f}" if values else "-"


def render(figures: dict[str, Any]) -> str:
    scope = (
        f"`--quick`: the first LoCoMo conversation ({QUICK_QUESTIONS} of its questions, seed {SEED}) and the first "
        f"{QUICK_USERS} MemoryBank users"
        if figures["quick"]
        else "every LoCoMo dev conversation and every MemoryBank Chinese user"
    )
    lines = [
        BEGIN,
        HEADING,
        "",
        f"`python -m bench.budget`: {scope}, written over MCP into the app in this process (LoCoMo turns as "
        '"Speaker: text", every question category `hindsight eval locomo` scores, adversarial included); each '
        'question answered within B tokens (cl100k) by: **new**, the text content of `recall_memory(format="context", '
        "token_budget=B)`; **previous**, the JSON answer the gateway gave before this change, rebuilt from a plain "
        "`recall_memory` (default `top_k` 8) by a frozen copy of its code; **bm25 lines**, plain BM25 over the same "
        "turns as `[YYYY-MM-DD] text` lines (those sharing a word with the question) packed best first. Evidence "
        "delivered: the share of a question's evidence turns whose words appear contiguously in the text (JSON "
        "escapes undone), mean over questions. "
        f"Wall time {figures['seconds']:.0f} s; machine load {figures['load']}.",
    ]
    for label, data in figures["datasets"].items():
        lines += [
            "",
            f"### {label}: {data['conversations']} conversations, {data['turns']} turns, {data['questions']} questions",
            "",
            "| system | evidence@250 | evidence@500 | tokens used @250 | tokens used @500 |",
            "| --- | ---: | ---: | ---: | ---: |",
        ]
        for system in SYSTEMS:
            shares = [f"{data['evidence'].get(f'{system}@{b}', 0.0):.3f}" for b in BUDGETS]
            used = [f"{data['used'].get(f'{system}@{b}', 0.0):.0f}" for b in BUDGETS]
            lines.append(f"| {system} | " + " | ".join(shares + used) + " |")
    tools = figures["tools"]
    lines += [
        "",
        f"Tool definitions a read/write token lists: {tools['tools']} tools, {tools['tokens']:,} tokens (name, "
        f"description and input schema of each, `json.dumps`), `tools/list` {tools['bytes']:,} bytes.",
        "",
        "Overhead per hit of a recall without a budget, (tokens of the text - tokens of each hit's content) / hits, "
        "median / mean over questions:",
        "",
        '| dataset | default recall | `format="context"` |',
        "| --- | ---: | ---: |",
    ]
    for label, data in figures["datasets"].items():
        overhead = data["overhead"]
        lines.append(f"| {label} | {_spread(overhead['default'])} | {_spread(overhead['context'])} |")
    return closing(lines, END)


if __name__ == "__main__":
    sys.exit(stage_main("budget", __doc__, measure, render, BEGIN, END, quick_help=QUICK_HELP))

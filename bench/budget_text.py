"""The texts `bench.budget` compares, and what it counts in them.

- `delivered` / `evidence_delivered`: whether an evidence turn's words are in a text an agent reads (the turn's
  `gateway.evaluation.metrics.tokens` appearing contiguously in the text's), after undoing JSON string escapes so
  that a memory quoted inside a JSON answer counts like the same memory in plain text;
- `previous_answer`: a FROZEN copy of what `recall_memory(format="context", token_budget=B)` answered before the
  context block became the tool result's text itself (`context_answer` of `gateway/context_block.py` at commit
  5d447d0, its memories-only path: no session, order "score", lean hits), rebuilt from a plain recall's hits. It
  deliberately imports nothing from `gateway`, so later changes to the gateway leave the baseline as it was;
- `bm25_text`: plain BM25's ranked turns as dated lines, packed best first into a token budget;
- `tool_tokens`: what the tool definitions of `tools/list` cost in tokens and bytes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from gateway.evaluation.metrics import Bm25Baseline, tokens
from memory.text.tokens import count_tokens

_ESCAPE = re.compile(r'\\(u[0-9a-fA-F]{4}|["\\/bfnrt])')
_PLAIN = {'"': '"', "\\": "\\", "/": "/", "b": " ", "f": " ", "n": " ", "r": " ", "t": " "}


# -- evidence delivered ------------------------------------------------------------------------------------------
def readable(text: str) -> str:
    """`text` with JSON string escapes undone (`\\n` a space, `\\"` a quote, `\\u4f60` its character): what a
    reader takes from a JSON answer. Plain text is left as it is (barring a literal backslash escape)."""
    return _ESCAPE.sub(lambda m: chr(int(m[1][1:], 16)) if m[1][0] == "u" else _PLAIN[m[1]], text)


def words(text: str) -> str:
    """The text's tokens as one space-delimited string (each token between spaces): contiguous token runs are
    then substrings."""
    return " " + " ".join(tokens(readable(text))) + " "


def delivered(turn: str, text: str) -> bool:
    """Whether every word of `turn` appears, in order and contiguously, in `text` (a turn without any word never
    counts as delivered)."""
    wanted = words(turn)
    return wanted.strip() != "" and wanted in words(text)


def evidence_delivered(turns: Sequence[str], text: str) -> float:
    """The share of the evidence `turns` delivered in `text`."""
    if not turns:
        return 0.0
    said = words(text)
    found = sum(1 for turn in turns if (wanted := words(turn)).strip() and wanted in said)
    return found / len(turns)


# -- the previous answer (frozen) ---------------------------------------------------------------------------------
PREVIOUS_HEADER = "Relevant memories (most relevant first):"


def _json_text(body: object) -> str:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))


def _escaped_cost(line: str) -> int:
    return count_tokens(json.dumps(line + "\n", ensure_ascii=False)[1:-1])


def previous_line(hit: dict[str, Any], with_namespace: bool) -> str:
    """`[<id>] <day of when, UTC> (<namespace>) <content on one line>`, the namespace only when asked."""
    day = datetime.fromisoformat(hit["when"]).astimezone(UTC).date().isoformat()
    where = f" ({hit['namespace']})" if with_namespace else ""
    return f"[{hit['id']}] {day}{where} {' '.join(str(hit['content']).split())}"


def _previous_body(hits: list[dict[str, Any]], cited: list[int], lines: list[str]) -> str:
    context = [PREVIOUS_HEADER, *(lines[i] for i in cited)] if cited else []
    body = {"context": "\n".join(context), "memories": [hits[i] for i in cited], "omitted": len(hits) - len(cited)}
    return _json_text(body)


def previous_answer(hits: list[dict[str, Any]], token_budget: int) -> str:
    """The JSON text the gateway answered before, for these recall hits (best first) within `token_budget`: whole
    hits best first, a hit that does not fit skipped (a later, shorter one may still fit), then the last added
    taken back until the whole text fits. The hits are used as given: the structured hits of a plain recall now
    carry the score to 3 decimals where the old answer had 6 (about one token less per hit than it spent)."""
    several = len({hit["namespace"] for hit in hits}) > 1
    lines = [previous_line(hit, several) for hit in hits]
    spent = count_tokens(_json_text({"context": "", "memories": [], "omitted": len(hits)}))
    header = _escaped_cost(PREVIOUS_HEADER)
    cited: list[int] = []
    for index, hit in enumerate(hits):
        cost = _escaped_cost(lines[index]) + count_tokens(_json_text(hit)) + 1 + (header if not cited else 0)
        if spent + cost <= token_budget:
            cited.append(index)
            spent += cost
    answer = _previous_body(hits, cited, lines)
    while cited and count_tokens(answer) > token_budget:
        cited.pop()
        answer = _previous_body(hits, cited, lines)
    return answer


# -- plain BM25 lines --------------------------------------------------------------------------------------------
class Bm25Lines:
    """Plain BM25 over a conversation's turns (the texts as written), answering dated lines
    `[YYYY-MM-DD] <text on one line>`; only turns sharing a word with the question are ranked."""

    def __init__(self, texts: Sequence[str], days: Sequence[str]) -> None:
        ids = [str(index) for index in range(len(texts))]
        self.bm25 = Bm25Baseline(ids, texts)
        self.lines = [f"[{day}] {' '.join(text.split())}" for text, day in zip(texts, days, strict=True)]
        self.costs = [count_tokens(line + "\n") for line in self.lines]

    def ranked(self, query: str) -> list[int]:
        terms = set(tokens(query))
        order = [int(i) for i in self.bm25.rank(query, len(self.lines))]
        return [i for i in order if terms & self.bm25.docs[i].keys()]

    def text(self, query: str, token_budget: int) -> str:
        order = self.ranked(query)
        return pack([self.lines[i] for i in order], token_budget, [self.costs[i] for i in order])


def pack(lines: Sequence[str], token_budget: int, costs: Sequence[int] | None = None) -> str:
    """`lines` (best first) joined by newlines, whole lines only, within `token_budget`: a line that does not
    fit is skipped (a later, shorter one may still fit), then the last kept taken back until the text fits."""
    costs = costs if costs is not None else [count_tokens(line + "\n") for line in lines]
    kept: list[int] = []
    spent = 0
    for index, cost in enumerate(costs):
        if spent + cost <= token_budget:
            kept.append(index)
            spent += cost
    text = "\n".join(lines[i] for i in kept)
    while kept and count_tokens(text) > token_budget:
        kept.pop()
        text = "\n".join(lines[i] for i in kept)
    return text


# -- overheads ---------------------------------------------------------------------------------------------------
def overhead_per_hit(text: str, contents: Sequence[str]) -> float | None:
    """(tokens of the answer's text - tokens of each hit's content) / hits; None without hits."""
    if not contents:
        return None
    return (count_tokens(text) - sum(count_tokens(content) for content in contents)) / len(contents)


def tool_tokens(tools: Sequence[Any]) -> dict[str, int]:
    """The tools `tools/list` gave (`mcp` Tool objects): how many, the tokens of their definitions (name,
    description, input schema; `json.dumps` with its default spacing) and the bytes of the listing as JSON."""
    total = sum(
        count_tokens(json.dumps({"name": t.name, "description": t.description, "input_schema": t.input_schema}))
        for t in tools
    )
    listing = json.dumps([t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools])
    return {"tools": len(tools), "tokens": total, "bytes": len(listing.encode("utf-8"))}

"""A recall's answer: its structured content (for code) and its text (what an MCP host hands its model).

- `format: "memories"` (the default), lean: the text is the memories as lines (`gateway.recall_answer.lines`),
  `[n]` citing the n-th of the structured `memories` (id, namespace, content, when, score and the flags set).
- `format: "context"`: the text is the block (`gateway.recall_answer.block`), led by the session's working memory
  with `session_id`; the structured content holds it as `context`, with `citations` (each `[ref]` with its id,
  namespace, when, score and flags; the content is in the block) and `omitted`.
- `format: "memories"` with `detail: "full"` or `explain`: the caller asked for every field, so the text is the
  structured answer's JSON, and `token_budget` bounds that JSON text (whole hits).

`token_budget` bounds the text; `omitted` counts the recalled memories the text left out. `order` says how the
memories are shown: `score` (most relevant first), `time` (oldest first, by when each happened) or `importance`
(highest first); a budget keeps the most important ones for `importance` and the most relevant otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from gateway.answers.serialize import cited_json, hit_json
from gateway.answers.shapes import Citation, Hit, RecallAnswer
from gateway.errors import json_text
from gateway.recall_answer.block import SessionPart, fitted_block, kept_first, shown_in, whole_block
from gateway.recall_answer.lines import NOTHING, Order, Shown, spans_namespaces
from gateway.recall_answer.provenance import withheld_line
from memory.models import RecallHit, WorkingMemory
from memory.recall.budget import fill, trim
from memory.text.tokens import count_tokens

Format = Literal["memories", "context"]
Detail = Literal["lean", "full"]


@dataclass(frozen=True, slots=True)
class RecallView:
    """How the caller asked to see a recall."""

    format: Format = "memories"
    order: Order = "score"
    detail: Detail = "lean"
    explain: bool = False
    token_budget: int | None = None

    @property
    def as_json(self) -> bool:
        """Whether the text is the structured answer's JSON (every field asked for) rather than lines."""
        return self.format == "memories" and (self.detail == "full" or self.explain)


@dataclass(frozen=True, slots=True)
class Answer:
    body: RecallAnswer
    text: str
    returned: list[RecallHit]  # the memories the answer holds, in its order


# an answer of up to this many hits is built on the calling thread (~0.1 ms for 8); more in a worker thread
INLINE_ANSWER_HITS = 16


def recall_answer(
    hits: Sequence[RecallHit], view: RecallView, session: WorkingMemory | None = None, withheld: int = 0
) -> Answer:
    """The answer to a recall of `hits` (best first), shown as `view` asks (see the module docstring); `withheld`
    memories the tenant's policy kept out (`gateway.recall_answer.provenance`) are counted in it, and said in its
    text where the token budget leaves room."""
    answer = json_answer(hits, view) if view.as_json else text_answer(hits, view, session)
    if not withheld:
        return answer
    answer.body["withheld"] = withheld
    text = json_text(answer.body) if view.as_json else f"{answer.text}\n{withheld_line(withheld)}"
    fits = view.token_budget is None or count_tokens(text) <= view.token_budget
    return Answer(answer.body, text if fits else answer.text, answer.returned)


def text_answer(hits: Sequence[RecallHit], view: RecallView, session: WorkingMemory | None) -> Answer:
    """The answer whose text is lines a model reads (the default, `detail: "lean"` without `explain`)."""
    part = SessionPart.of(session if view.format == "context" else None, framed=view.format == "context")
    several = spans_namespaces(hits)
    if view.token_budget is None:
        block = whole_block(hits, view.order, several, part)
    else:
        block = fitted_block(hits, view.order, several, part, view.token_budget)
    shown = block.shown()
    text = block.text() or empty_text(len(hits), view.token_budget)
    omitted = len(hits) - len(shown)
    body: dict[str, Any]
    if view.format == "context":
        citations = [citation(ref, item, view.explain) for ref, item in enumerate(shown, 1)]
        body = {"context": text, "citations": citations, "omitted": omitted}
    else:
        body = {"memories": [memory_hit(item, view.explain) for item in shown]}
        if view.token_budget is not None:
            body["omitted"] = omitted
    return Answer(cast(RecallAnswer, body), text, [item.hit for item in shown])


def session_namespace(namespaces: Sequence[str] | None, default: str | None) -> str | None:
    """Where the session of a context recall is read: the token's default namespace when the recall covers it (or
    names none), else the first namespace it names."""
    return None if not namespaces or default in namespaces else namespaces[0]


def empty_text(recalled: int, token_budget: int | None) -> str:
    """The text of an answer that shows no memory: none matched, or none fits the budget (when that fits)."""
    text = NOTHING if not recalled else f"{recalled} memories matched; none fits token_budget {token_budget}."
    return text if token_budget is None or count_tokens(text) <= token_budget else ""


def citation(ref: int, item: Shown, explain: bool) -> Citation:
    body: dict[str, Any] = {"ref": ref, **cited_json(item.hit, explain=explain)}
    if item.cut:
        body["truncated"] = True
    return cast(Citation, body)


def memory_hit(item: Shown, explain: bool) -> Hit:
    hit = hit_json(item.hit, explain=explain)
    if item.cut:
        hit["truncated"] = True
    return hit


def json_answer(hits: Sequence[RecallHit], view: RecallView) -> Answer:
    """Every field asked for: the hits as JSON, those (best first) that keep the JSON text within the budget, in
    the order asked."""
    wires = {id(hit): hit_json(hit, full=view.detail == "full", explain=view.explain) for hit in hits}

    def cost(_: Sequence[RecallHit], hit: RecallHit) -> int:
        return count_tokens(json_text(wires[id(hit)])) + 1  # and its separator

    def assembled(kept: Sequence[RecallHit]) -> RecallAnswer:
        body: RecallAnswer = {"memories": [wires[id(hit)] for hit in shown_in(kept, view.order)]}
        if view.token_budget is not None:
            body["omitted"] = len(hits) - len(kept)
        return body

    kept = kept_first(hits, view.order)
    if view.token_budget is not None:
        budget = view.token_budget
        kept, _ = fill(kept, cost, budget, count_tokens(json_text({"memories": [], "omitted": len(hits)})))
        kept = kept[: trim(len(kept), lambda count: count_tokens(json_text(assembled(kept[:count]))) <= budget)]
    body = assembled(kept)
    return Answer(body, json_text(body), shown_in(kept, view.order))

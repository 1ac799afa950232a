"""The recall answer in the order asked for, and its prompt-ready form (`recall_memory` with `format: "context"`).

`order` says how the memories are shown: `score` (most relevant first, the engine's ranking), `time` (oldest first,
by when each happened: to follow how things developed) or `importance` (highest first: constraints first). When
`token_budget` leaves some out, the ones kept are the most important for `importance` and the most relevant
otherwise (chronology says nothing about which memory matters), then shown in `order`.

The context block is one text an agent can put in its prompt as is:

    Session s1 state: {"goal":"book a flight"}
    Session s1 recent turns (oldest first):
    user: Find me a morning flight to Shanghai
    Relevant memories (oldest first):
    [0190...] 2026-05-04 The user prefers Air China
    [0190...] 2026-05-06 (team:travel) Company policy: economy class under 3 hours

The session part appears when `session_id` is given and its working memory has a state or turns. Each memory is
one line: its citation `[id]`, the day it happened (`occurred_at`, else when written; UTC), its namespace only when
the recalled memories span several, and its content on one line. `memories` holds exactly the cited memories, in
the block's order; `omitted` counts the recalled ones left out.

The budget is the whole answer's JSON text, counted with `memory.tokens.count_tokens` (the block appears in it
escaped, beside `memories`), in whole lines: the session's state first (all of it or none), then the memories (a
memory that does not fit is skipped, a later shorter one may still fit), then the recent turns with what is left,
newest first and without gaps (the agent usually still holds its latest turns; the state and the long-term memories
it does not). The assembled answer is counted once more and the last item added dropped until it fits, so the
bound holds exactly, not only line by line.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC
from typing import Literal

from gateway.answers import Hit, RecallAnswer
from gateway.errors import json_text
from gateway.serialize import within_budget
from memory.models import RecallHit, WorkingMemory
from memory.tokens import count_tokens

Order = Literal["score", "time", "importance"]
Wire = Callable[[RecallHit], Hit]  # a hit's JSON in `memories` (lean or full, with or without its scores)

HEADERS: dict[Order, str] = {
    "score": "Relevant memories (most relevant first):",
    "time": "Relevant memories (oldest first):",
    "importance": "Relevant memories (most important first):",
}


def shown_in(hits: list[RecallHit], order: Order) -> list[RecallHit]:
    """`hits` (best first) in the order they are shown; ties keep the engine's ranking."""
    if order == "time":
        return sorted(hits, key=lambda hit: hit.memory.created_at)
    if order == "importance":
        return sorted(hits, key=lambda hit: -hit.memory.importance)
    return list(hits)


def kept_first(hits: list[RecallHit], order: Order) -> list[RecallHit]:
    """`hits` in the order a token budget keeps them: by importance for `importance`, by relevance otherwise."""
    return shown_in(hits, "importance") if order == "importance" else list(hits)


def memories_answer(hits: list[RecallHit], order: Order, token_budget: int | None, wire: Wire) -> RecallAnswer:
    """The hits as JSON (`format: "memories"`), those that keep the whole answer within `token_budget`."""
    ranked = kept_first(hits, order)
    answer = within_budget([wire(hit) for hit in ranked], token_budget)
    position = {hit.memory.id: index for index, hit in enumerate(shown_in(hits, order))}
    answer["memories"].sort(key=lambda hit: position[hit["id"]])
    return answer


def one_line(text: str) -> str:
    return " ".join(text.split())


def memory_line(hit: RecallHit, with_namespace: bool) -> str:
    memory = hit.memory
    day = memory.created_at.astimezone(UTC).date().isoformat()
    where = f" ({memory.namespace})" if with_namespace else ""
    return f"[{memory.id}] {day}{where} {one_line(memory.content)}"


def escaped_cost(line: str) -> int:
    """The tokens `line` and its line break add to the answer: as they appear inside its JSON string."""
    return count_tokens(json.dumps(line + "\n", ensure_ascii=False)[1:-1])


@dataclass(slots=True)
class Block:
    """What the context block holds so far; `added` remembers the order items went in, to take the last back."""

    state: list[str]
    turns: list[str]  # newest first while filling
    cited: list[RecallHit]
    added: list[Literal["state", "turn", "memory"]]

    def take_back(self) -> None:
        kind = self.added.pop()
        if kind == "state":
            self.state = []
        elif kind == "turn":
            self.turns.pop()
        else:
            self.cited.pop()


def session_namespace(namespaces: list[str] | None, default: str | None) -> str | None:
    """Where the session of a context recall is read: the token's default namespace when the recall covers it (or
    names none), else the first namespace it names."""
    return None if not namespaces or default in namespaces else namespaces[0]


def session_lines(session: WorkingMemory | None) -> tuple[list[str], list[str], str]:
    """The state line (none for an empty state), the turn lines oldest first, and the turns' header."""
    if session is None:
        return [], [], ""
    state = [f"Session {session.session_id} state: {json_text(session.state)}"] if session.state else []
    turns = [f"{turn.role}: {one_line(turn.content)}" for turn in session.turns]
    return state, turns, f"Session {session.session_id} recent turns (oldest first):"


def context_answer(
    hits: list[RecallHit], order: Order, token_budget: int | None, wire: Wire, session: WorkingMemory | None
) -> RecallAnswer:
    """The prompt-ready answer (`format: "context"`; see the module docstring)."""
    several = len({hit.memory.namespace for hit in hits}) > 1
    lines = {hit.memory.id: memory_line(hit, several) for hit in hits}
    wires = {hit.memory.id: wire(hit) for hit in hits}
    state, turns, turns_header = session_lines(session)
    if token_budget is None:
        block = Block(state, turns[::-1], list(hits), [])
        return _assemble(block, order, lines, wires, turns_header, len(hits))

    block = Block([], [], [], [])
    spent = count_tokens(json_text({"context": "", "memories": [], "omitted": len(hits)}))
    state_cost = sum(escaped_cost(line) for line in state)
    if state and spent + state_cost <= token_budget:
        block.state, spent = state, spent + state_cost
        block.added.append("state")
    header = escaped_cost(HEADERS[order])
    for hit in kept_first(hits, order):
        cost = escaped_cost(lines[hit.memory.id]) + count_tokens(json_text(wires[hit.memory.id])) + 1
        cost += header if not block.cited else 0
        if spent + cost <= token_budget:
            block.cited.append(hit)
            block.added.append("memory")
            spent += cost
    header = escaped_cost(turns_header)
    for line in reversed(turns):  # newest first, and no older turn after one that does not fit
        cost = escaped_cost(line) + (header if not block.turns else 0)
        if spent + cost > token_budget:
            break
        block.turns.append(line)
        block.added.append("turn")
        spent += cost

    answer = _assemble(block, order, lines, wires, turns_header, len(hits))
    while block.added and count_tokens(json_text(answer)) > token_budget:
        block.take_back()
        answer = _assemble(block, order, lines, wires, turns_header, len(hits))
    return answer


def _assemble(
    block: Block, order: Order, lines: dict[str, str], wires: dict[str, Hit], turns_header: str, recalled: int
) -> RecallAnswer:
    text = list(block.state)
    if block.turns:
        text += [turns_header, *reversed(block.turns)]
    cited = shown_in(block.cited, order)
    if cited:
        text += [HEADERS[order], *(lines[hit.memory.id] for hit in cited)]
    return {
        "context": "\n".join(text),
        "memories": [wires[hit.memory.id] for hit in cited],
        "omitted": recalled - len(cited),
    }

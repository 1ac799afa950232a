"""`RuleExtractor`: facts from the events of a turn without an LLM. Pure and deterministic, English and Chinese,
linear in the input.

Each user or assistant message (`system` events are skipped) gives the facts of its sentences (`messages`: chit-chat
dropped, relative dates made absolute, requests and worthwhile questions rewritten as statements, other sentences
kept when they carry something, persons written out, a pronoun's sentence joined to the one before).
The user's name, when every named user message of the batch has the same speaker, is whom the assistant's "you"
means; a batch of user messages of two or more named speakers and no assistant is a conversation between people.

A tool_call and its tool_result (same `call_id`) become one episodic fact citing both events ("The assistant called
search_flights (from=PEK, to=SHA): 3 results, cheapest CA1501 at 08:00"), cut to `MAX_TOOL_FACT_CHARS` with "…".
Identical facts of one batch are merged, with the union of their sources.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from memory import cpu_meter
from memory.extraction.messages import message_drafts
from memory.extraction.model import ExtractedFact, Extraction, SourceEvent

MAX_TOOL_FACT_CHARS = 300
_TOOL_ARGS_CHARS = 120


def _rendered(content: str, limit: int) -> str:
    """Tool input or output on one line: a JSON object as "key=value, ...", anything else compacted."""
    text = content.strip()
    if text[:1] in "{[":
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        if isinstance(value, dict):
            text = ", ".join(
                f"{k}={v if isinstance(v, str | int | float) else json.dumps(v, ensure_ascii=False)}"
                for k, v in value.items()
            )
        elif value is not None:
            text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _tool_fact(group: list[SourceEvent]) -> ExtractedFact:
    calls = [e for e in group if e.type == "tool_call"]
    results = [e for e in group if e.type == "tool_result"]
    tool = next((e.tool for e in group if e.tool), None) or "a tool"
    if calls:
        who = calls[0].speaker or "The assistant"
        arguments = _rendered(calls[0].content, _TOOL_ARGS_CHARS)
        text = f"{who} called {tool}" + (f" ({arguments})" if arguments else "")
        if results:
            text += f": {_rendered(results[-1].content, MAX_TOOL_FACT_CHARS)}"
    else:
        text = f"{tool} returned: {_rendered(results[-1].content, MAX_TOOL_FACT_CHARS)}"
    if len(text) > MAX_TOOL_FACT_CHARS:
        text = text[: MAX_TOOL_FACT_CHARS - 1] + "…"
    return ExtractedFact(text, tuple(e.id for e in group), "episodic", max(e.occurred_at for e in group))


def _addressee(events: Sequence[SourceEvent]) -> str | None:
    """The user's name when every named user message of the batch has the same speaker."""
    names = {e.speaker for e in events if e.type == "user_message" and e.speaker}
    return names.pop() if len(names) == 1 else None


def _among_people(events: Sequence[SourceEvent]) -> bool:
    """Whether the batch is a conversation between people: user messages of two or more named speakers and no
    assistant message (with an assistant present, a request may be put to it)."""
    if any(e.type == "assistant_message" for e in events):
        return False
    return len({e.speaker for e in events if e.type == "user_message" and e.speaker}) >= 2


class RuleExtractor:
    """The rule-based `FactExtractor`. Stateless: one instance serves any number of concurrent calls."""

    method = "rules"

    def extract_sync(self, events: Sequence[SourceEvent]) -> list[ExtractedFact]:
        """The facts of `events`, in the order of their sources (CPU only: run it in a worker thread for a big
        batch)."""
        addressee = _addressee(events)
        among_people = _among_people(events)
        tool_groups: dict[str, list[SourceEvent]] = {}
        for event in events:
            if event.type in ("tool_call", "tool_result") and event.call_id:
                tool_groups.setdefault(event.call_id, []).append(event)
        facts: list[ExtractedFact] = []
        seen: dict[str, int] = {}

        def keep(fact: ExtractedFact) -> None:
            if fact.content in seen:
                old = facts[seen[fact.content]]
                ids = old.source_event_ids + tuple(i for i in fact.source_event_ids if i not in old.source_event_ids)
                facts[seen[fact.content]] = ExtractedFact(
                    old.content, ids, old.kind, max(old.occurred_at, fact.occurred_at)
                )
            else:
                seen[fact.content] = len(facts)
                facts.append(fact)

        for event in events:
            if event.type == "system":
                continue
            if event.type in ("tool_call", "tool_result"):
                group = tool_groups.pop(event.call_id, None) if event.call_id else [event]
                if group:
                    keep(_tool_fact(group))
                continue
            for draft in message_drafts(event, addressee, among_people):
                keep(ExtractedFact(draft.content, (event.id,), draft.kind, event.occurred_at))
        return facts

    async def extract(self, events: Sequence[SourceEvent]) -> list[ExtractedFact]:
        """`extract_sync` in a worker thread: a turn costs well under a millisecond per kilobyte of text (about
        50 ms for 8,000 hostile characters), which must not stall the event loop's other requests."""
        return await cpu_meter.run_sync(self.extract_sync, events)

    async def run(self, events: Sequence[SourceEvent]) -> Extraction:
        return Extraction(tuple(await self.extract(events)), "rules")

"""`LlmExtractor`: facts from the events of a turn by the optional LLM (`memory.llm.client.ChatClient`), with a
fallback extractor (the rules) for every way the LLM can fail.

The events (id, type, speaker, time, content; a tool event's call id and tool name; `system` events are not sent)
go to the model as JSON, with a system prompt asking for a JSON array of {"content", "source_event_ids", "kind"}:
self-contained statements, speaker resolved, relative dates made absolute from each event's time. The answer is
read strictly (`parse_facts`): one JSON array (a ```json fence and a reasoning model's <think> preamble are
tolerated), at most `MAX_FACTS` items, each an object whose `content` is a non-empty string of at most
`MAX_FACT_CHARS`, whose `source_event_ids` is a non-empty list of ids of the events sent, and whose `kind` is
"episodic" or "semantic". An empty array is a valid answer (nothing worth remembering).

`run` says which method produced the facts (`Extraction.method`): "llm", or "rules" when the fallback answered,
with the reason in `fallback_reason`: "timeout: ..." (no answer within `timeout_seconds`, enforced with
`anyio.fail_after` around the whole call, retries included), "backend_unavailable: ..." (connection error, HTTP
error, empty answer), "invalid_answer: ..." (not JSON, wrong shape, an unknown event id, a bad kind, an empty or
oversized statement). One invalid item rejects the whole answer: a model that invents one id is not trusted with
the others. `extract` (the `FactExtractor` protocol) returns the facts alone.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import anyio

from memory.errors import BackendUnavailable
from memory.extraction.model import FACT_KINDS, MAX_FACT_CHARS, ExtractedFact, Extraction, FactExtractor, SourceEvent
from memory.llm.client import ChatClient

SYSTEM_PROMPT = (
    "You extract long-term memories from one turn of a conversation between a user and an AI assistant (or "
    'between people). The user message is a JSON object whose "events" each have an id, a type (user_message, '
    "assistant_message, tool_call, tool_result), a speaker if known, the time it happened (ISO 8601) and the "
    "content. Write every fact worth remembering as one short, self-contained statement: name who speaks instead "
    'of "I" or "you" (the speaker\'s name if given, else "the user" or "the assistant"); write a relative date '
    'with the absolute date after it, computed from the event\'s time (e.g. "tomorrow (2026-12-03)", '
    '"明天（2026-12-03）"); keep names, numbers, places, dates and preferences; write in the language of the '
    "source. Bind a tool call and its result (same call_id) into one fact. Skip greetings, thanks, small talk and "
    "questions that ask for nothing. Answer with a JSON array only, no other text: "
    '[{"content": "<the statement>", "source_event_ids": ["<ids of the events the fact comes from>"], '
    '"kind": "semantic" for preferences, habits, traits and standing facts, "episodic" for events, plans, '
    "decisions, requests and tool results}]. Answer [] when nothing is worth remembering."
)
MAX_TOKENS = 1_500
MAX_FACTS = 200
MAX_EVENT_CHARS = 4_000  # of each event's content sent to the model

_THINKING = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)


class InvalidAnswer(ValueError):
    """The model's answer is not a valid list of facts about the events sent."""


def _prompt(events: Sequence[SourceEvent]) -> str:
    sent: list[dict[str, str]] = []
    for event in events:
        item = {"id": event.id, "type": event.type, "time": event.occurred_at.isoformat()}
        if event.speaker:
            item["speaker"] = event.speaker
        if event.call_id:
            item["call_id"] = event.call_id
        if event.tool:
            item["tool"] = event.tool
        content = event.content
        item["content"] = content if len(content) <= MAX_EVENT_CHARS else content[: MAX_EVENT_CHARS - 1] + "…"
        sent.append(item)
    return json.dumps({"events": sent}, ensure_ascii=False)


def _item(item: Any, events: dict[str, SourceEvent], position: int) -> ExtractedFact:
    if not isinstance(item, dict):
        raise InvalidAnswer(f"item {position} is not an object")
    content, ids, kind = item.get("content"), item.get("source_event_ids"), item.get("kind")
    if not isinstance(content, str) or not content.strip():
        raise InvalidAnswer(f"item {position} has no content")
    content = " ".join(content.split())
    if len(content) > MAX_FACT_CHARS:
        raise InvalidAnswer(f"item {position} is longer than {MAX_FACT_CHARS} characters")
    if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
        raise InvalidAnswer(f"item {position} has no list of source event ids")
    unknown = [i for i in ids if i not in events]
    if unknown:
        raise InvalidAnswer(f"item {position} cites an unknown source event id {unknown[0][:40]!r}")
    if kind not in FACT_KINDS:
        raise InvalidAnswer(f"item {position} has kind {str(kind)[:20]!r}, not episodic or semantic")
    cited = tuple(dict.fromkeys(ids))
    return ExtractedFact(content, cited, kind, max(events[i].occurred_at for i in cited))


def parse_facts(answer: str, events: Sequence[SourceEvent]) -> list[ExtractedFact]:
    """The facts an answer states about `events`; `InvalidAnswer` when it is not exactly a valid list of them."""
    text = _THINKING.sub("", answer).strip()
    if text.startswith("```") and text.endswith("```") and len(text) >= 6:
        text = text[3:-3]
        text = text[4:] if text[:4].lower() == "json" else text
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise InvalidAnswer(f"not JSON: {text[:60]!r}") from exc
    if not isinstance(value, list):
        raise InvalidAnswer(f"a JSON {type(value).__name__}, not an array")
    if len(value) > MAX_FACTS:
        raise InvalidAnswer(f"{len(value)} facts, more than {MAX_FACTS}")
    by_id = {event.id: event for event in events}
    return [_item(item, by_id, position) for position, item in enumerate(value)]


class LlmExtractor:
    """The LLM `FactExtractor`, with `fallback` (usually a `RuleExtractor`) for any failure or timeout."""

    method = "llm"

    def __init__(
        self,
        chat: ChatClient,
        fallback: FactExtractor,
        timeout_seconds: float,
        *,
        attempts: int = 1,
        max_tokens: int = MAX_TOKENS,
    ) -> None:
        self.chat = chat  # not owned: whoever made the client closes it
        self.fallback = fallback
        self.timeout_seconds = timeout_seconds
        self.attempts = attempts  # one by default: a retry rarely fits in the deadline
        self.max_tokens = max_tokens

    async def _fallback(self, events: Sequence[SourceEvent], reason: str) -> Extraction:
        return Extraction(tuple(await self.fallback.extract(events)), "rules", reason)

    async def run(self, events: Sequence[SourceEvent]) -> Extraction:
        """The facts of `events`, and which method produced them."""
        sent = [event for event in events if event.type != "system"]
        if not sent:
            return Extraction((), "llm")
        try:
            with anyio.fail_after(self.timeout_seconds):
                answer = await self.chat.complete(
                    SYSTEM_PROMPT, _prompt(sent), max_tokens=self.max_tokens, attempts=self.attempts
                )
        except TimeoutError:
            return await self._fallback(events, f"timeout: no answer within {self.timeout_seconds:g} s")
        except BackendUnavailable as exc:
            return await self._fallback(events, f"backend_unavailable: {exc.message}")
        try:
            facts = parse_facts(answer, sent)
        except InvalidAnswer as exc:
            return await self._fallback(events, f"invalid_answer: {exc}")
        return Extraction(tuple(facts), "llm")

    async def extract(self, events: Sequence[SourceEvent]) -> list[ExtractedFact]:
        return list((await self.run(events)).facts)

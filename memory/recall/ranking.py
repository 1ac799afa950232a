"""Recall ranking helpers: the similarity part of the recall score, which candidates a recall keeps and in what
order.

The similarity part is a relevance relative to the best candidate of the same recall, in four steps:
1. hybrid relevance: the dense cosine, min-max scaled over the candidates, and the BM25 score over the best BM25
   score, mixed by `dense_share` (a convex mix of calibrated scores: unlike reciprocal-rank fusion it lets the
   stronger signal of a query decide, and on LoCoMo it beat both halves where rank fusion fell below BM25 alone);
2. cues (`memory.recall.cues`): a memory spoken by someone the query names (its "Name: " prefix or the speaker given in
   its metadata) is multiplied by 1 + `speaker`, and one that says when something happened by 1 + `when` if the
   query asks when; a plan whose day has passed (`memory.lifecycle.hidden`) by `passed_plan` when the query asks about
   the present (history, not the present);
3. conversation context: a memory that follows a matching one in its session (the answer to a matching question)
   is lifted by `context` times the match's relevance (twice that when the match asks a question), the memory
   before a match by a third of that, and every memory by `session` times the best relevance found in its
   session (itself included; a memory without a session is its own); then a memory that ends in a question
   (it asks more than it tells) is lowered by the share `question`;
4. the result is divided by the best, so the top candidate has similarity 1 (as do all, when none stands out).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from memory.lifecycle.hidden import is_passed_plan
from memory.models import EXTRACTED, Memory, RecallHit
from memory.ports import RecallFilter, ScoredMemory
from memory.recall.cues import QueryCues, asks, ends_asking, speaker_of, states_time
from memory.recall.scoring import estimate_tokens
from memory.text.words import content_words, has_cjk

# Cosines closer together than this are not stretched apart by the min-max scaling of the hybrid relevance.
MIN_COSINE_SPREAD = 0.1
# A match that asks a question lifts the turn after it (its answer) this many times the usual context lift (the
# default of `ScoringWeights.answer_lift`).
QUESTION_CONTEXT_FACTOR = 2.0


# An extracted fact at least half of whose own words another hit holds restates it (or is restated by it). A fact
# restated by a better ranked memory adds nothing and is left out. A memory restated by a better ranked fact is left
# out only when the fact was extracted from it: the same session and the same moment (a fact carries the time of its
# last source event). On LoCoMo dev a fact and its own source turn otherwise took two of ten places; and a fact from
# another turn ("Caroline is off to go do some research.") pushed out the turn that answered ("Caroline:
# Researching adoption agencies ..."): 445 turns left out by a fact not extracted from them, every one with another
# session or another moment, while all 2,835 fact-and-source pairs shared both. A fact's own words leave out what
# extraction adds: the person it resolved ("the user", "用户", "the assistant") and numbers (the absolute dates it
# wrote after time phrases).
RESTATES = 0.5
# A second fact of a turn a better fact already stands for rarely adds a turn, but it may be the very detail asked
# ("Melanie's new shoes are purple." beside "Melanie bought new shoes."): it is ranked by this share of its score,
# after what is better than that and before the rest, and shows that score (it used to wait behind every other hit,
# so a 0.79 fact came after 0.10 ones, or not at all).
SAME_TURN_SHARE = 0.5
_ADDED_BY_EXTRACTION = frozenset(content_words("the user the assistant 用户 助手"))


def _own_words(fact: set[str]) -> set[str]:
    return {word for word in fact if word not in _ADDED_BY_EXTRACTION and not word.isdigit()}


def _restates(fact: set[str], other: set[str]) -> bool:
    own = _own_words(fact)
    return bool(own) and len(own & other) >= RESTATES * len(own)


def _extracted_from(fact: Memory, memory: Memory) -> bool:
    """Whether `memory` may be the source turn of `fact`: said in the fact's session at the fact's moment."""
    return fact.session_id is not None and fact.session_id == memory.session_id and fact.created_at == memory.created_at


def restates_chosen(hit: RecallHit, chosen: Sequence[tuple[RecallHit, set[str]]], words: set[str]) -> bool:
    """Whether `hit` only repeats an already chosen hit of its namespace: a fact extracted from events whose words
    a chosen memory holds, or a memory whose words a chosen fact extracted from it holds (the turn the fact came
    from). Memories not extracted are never compared with each other."""
    extracted = hit.memory.source.tool == EXTRACTED
    for other, other_words in chosen:
        if other.memory.namespace != hit.memory.namespace:
            continue
        if extracted and other.memory.source.tool != EXTRACTED and _restates(words, other_words):
            return True
        if (
            not extracted
            and other.memory.source.tool == EXTRACTED
            and _extracted_from(other.memory, hit.memory)
            and _restates(other_words, words)
        ):
            return True
    return False


def _sources(memory: Memory) -> frozenset[str]:
    """The events an extracted fact cites (`metadata.source_event_ids`); none for any other memory."""
    cited = memory.metadata.get("source_event_ids") if memory.source.tool == EXTRACTED else None
    if not isinstance(cited, list):
        return frozenset()
    return frozenset(str(event_id) for event_id in cited)


def select_hits(hits: list[RecallHit], top_k: int, token_budget: int | None, *, least: int = 0) -> list[RecallHit]:
    """The best hits, one per origin and per text, and one of a fact extracted from events and the memory it restates,
    best first by the score each carries, at most `top_k` (`hits` sorted best first). With a token budget, at least
    `least` hits and then more until their contents' estimated tokens reach it (the one that reaches it included: the
    caller fits the text it shows exactly, `gateway.recall_answer`). A fact all of whose source events a better fact
    already cites (another fact of the same turn) is ranked by `SAME_TURN_SHARE` of its score, and says so in its cues
    (`same_turn`)."""
    chosen: list[RecallHit] = []
    compared: list[tuple[RecallHit, set[str]]] = []  # chosen hits with their words, where a fact may be involved
    seen_origins: set[str] = set()
    seen_content: set[tuple[str, str]] = set()
    cited: set[str] = set()  # the source events of the chosen facts
    lowered: list[RecallHit] = []  # same-turn facts at their lowered score, best first
    spent = 0
    any_fact = any(hit.memory.source.tool == EXTRACTED for hit in hits)

    def take(hit: RecallHit, *, defer: bool) -> None:
        nonlocal spent
        origin = hit.memory.origin_id or hit.memory.id
        same_text = (hit.memory.namespace, hit.memory.content_hash)
        if origin in seen_origins or same_text in seen_content:
            return
        words = content_words(hit.memory.content) if any_fact else set()
        if any_fact and restates_chosen(hit, compared, words):
            return
        sources = _sources(hit.memory)
        if defer and sources and sources <= cited:
            parts = hit.scores
            later = replace(parts, score=parts.score * SAME_TURN_SHARE, cues=(*parts.cues, "same_turn"))
            lowered.append(replace(hit, scores=later))
            lowered.sort(key=lambda h: h.scores.score, reverse=True)
            return
        seen_origins.add(origin)
        seen_content.add(same_text)
        cited.update(sources)
        spent += estimate_tokens(hit.memory.content)
        chosen.append(hit)
        if any_fact:
            compared.append((hit, words))

    upcoming = iter(hits)
    following = next(upcoming, None)
    while len(chosen) < top_k and (token_budget is None or spent < token_budget or len(chosen) < least):
        if lowered and (following is None or lowered[0].scores.score >= following.scores.score):
            take(lowered.pop(0), defer=False)
        elif following is not None:
            take(following, defer=True)
            following = next(upcoming, None)
        else:
            break
    return chosen


def passes_filter(memory: Memory, namespaces: tuple[str, ...], flt: RecallFilter) -> bool:
    """Whether a memory reached through a supersession link meets the filters its search applied."""
    return not (
        (namespaces and memory.namespace not in namespaces)
        or (memory.expires_at is not None and memory.expires_at <= flt.now)
        or (memory.archived_at is not None and not flt.include_archived)
        or (flt.kinds and memory.kind not in flt.kinds)
        or (flt.tags and not set(flt.tags) & set(memory.tags))
        or (flt.session_id is not None and memory.session_id != flt.session_id)
        or (flt.since is not None and memory.created_at < flt.since)
        or (flt.until is not None and memory.created_at > flt.until)
    )


def hybrid_relevance(
    candidates: Sequence[ScoredMemory],
    dense_share: float,
    *,
    query_cjk: bool = False,
    cross_script_share: float | None = None,
) -> list[float]:
    """Step 1: `dense_share`·(cosine scaled to [0, 1] over the candidates) + (1 − `dense_share`)·(BM25 / best
    BM25). The cosine spread used for scaling is at least `MIN_COSINE_SPREAD`, so near-equal cosines stay
    near-equal instead of being stretched over the whole range. With `cross_script_share` (a multilingual
    embedder), a candidate written in the other script than the query (CJK against the rest) has no keyword half
    to lose, since BM25 cannot match across scripts: its relevance is `cross_script_share`·(scaled cosine)."""
    if not candidates:
        return []
    cosines = [c.similarity for c in candidates]
    low = min(cosines)
    spread = max(max(cosines) - low, MIN_COSINE_SPREAD)
    best_keyword = max(c.keyword for c in candidates)
    keyword_share = 1.0 - dense_share
    relevance = []
    for c in candidates:
        dense = (c.similarity - low) / spread
        if cross_script_share is not None and has_cjk(c.memory.content) != query_cjk:
            relevance.append(cross_script_share * dense)  # BM25 cannot match across scripts
        else:
            keyword = c.keyword / best_keyword if best_keyword > 0 else 0.0
            relevance.append(dense_share * dense + keyword_share * keyword)
    return relevance


def cue_relevance(
    query: QueryCues,
    memories: Sequence[Memory],
    relevance: Sequence[float],
    *,
    speaker: float,
    when: float,
    notes: Sequence[list[str]] | None = None,
    now: datetime | None = None,
    passed_plan: float = 1.0,
) -> list[float]:
    """Step 2 (see the module docstring): the speaker the query names and the time a "when" query asks for; a
    plan whose day has passed by `now` is history: marked, and at `passed_plan` times its relevance for a question
    about the present ("where does she live now?"). `notes`, one list per memory, receives the name of each cue
    that applied ("speaker", "when", "passed_plan")."""
    lifted = []
    for i, (memory, value) in enumerate(zip(memories, relevance, strict=True)):
        if now is not None and is_passed_plan(memory, now):
            if query.asks_now:
                value *= passed_plan
            _note(notes, i, "passed_plan")
        who = speaker_of(memory.content, memory.metadata) if speaker else None
        if who is not None and query.names(who):
            value *= 1 + speaker
            _note(notes, i, "speaker")
        if when and query.asks_when and states_time(memory.content):
            value *= 1 + when
            _note(notes, i, "when")
        lifted.append(value)
    return lifted


def _note(notes: Sequence[list[str]] | None, index: int, cue: str) -> None:
    if notes is not None:
        notes[index].append(cue)


def conversation_relevance(
    memories: Sequence[Memory],
    relevance: Sequence[float],
    *,
    context: float,
    session: float,
    question: float = 0.0,
    answer_lift: float = QUESTION_CONTEXT_FACTOR,
    notes: Sequence[list[str]] | None = None,
) -> list[float]:
    """Steps 3 and 4 (see the module docstring): lifted by conversation context (`answer_lift` times it for the
    turn after a matching question), divided by the best. `notes`
    receives "answers_question" for a memory lifted as the reply to a matching question and "ends_asking" for
    one lowered as a question."""
    position = {m.id: i for i, m in enumerate(memories)}
    lifted = list(relevance)
    for i, memory in enumerate(memories):
        before = position.get(memory.follows) if memory.follows is not None else None
        if before is not None:
            answers = asks(memories[before].content)
            lifted[i] += context * (answer_lift if answers else 1.0) * relevance[before]
            lifted[before] += context / 3 * relevance[i]
            if answers and context and relevance[before] > 0:
                _note(notes, i, "answers_question")
    if session:
        best: dict[tuple[str, str], float] = {}
        for memory, value in zip(memories, relevance, strict=True):
            key = (memory.namespace, memory.session_id or memory.id)
            best[key] = max(best.get(key, 0.0), value)
        for i, memory in enumerate(memories):
            lifted[i] += session * best[(memory.namespace, memory.session_id or memory.id)]
    if question:
        for i, memory in enumerate(memories):
            if ends_asking(memory.content):
                lifted[i] *= 1 - question
                _note(notes, i, "ends_asking")
    top = max(lifted, default=0.0)
    return [value / top for value in lifted] if top > 0 else [1.0] * len(lifted)  # none stands out: all equal

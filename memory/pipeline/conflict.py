"""Step 4 of the write pipeline (docs/DESIGN.md § "The write path"): conflict detection against the memories already
stored.

Given a new statement and the live memories nearest to it in the same namespace (with their cosine
similarity), decide, by rules, on what they read of each statement (`memory.pipeline.reading`):

- supersede only for a new value of the same attribute of the same subject (`memory.pipeline.claims`): "I live
  in Berlin" -> "I moved to Paris", "my favourite colour is blue" -> "... is green now", the same preference with
  the opposite polarity ("I like tea" -> "I don't like tea anymore"), or what someone uses when the new statement
  presents it as a change and names what changes ("we migrated billing to PostgreSQL" replaces "we use MySQL for
  billing", never "... for analytics"). The subject of a first-person statement is its speaker (who said it,
  `memory.recall.cues.speaker_of`: a "Speaker: text" prefix or the `metadata.speaker` given beside the text), else its
  writer (the memory's `source.subject`), so two speakers' or writers' "I live in X" never meet. A change
  verb alone, a shared person, or embedding similarity alone never supersedes.
- update in place only for the same statement: a near-duplicate (cosine >= `near_duplicate_similarity`) by the
  same writer and speaker that states the same named entities, numbers, dates and negations, with most
  informative words in common (Chinese text, where a static embedder's cosines mean little: the same characters
  once filler words are set aside), and no attribute with another value.
- otherwise create.

Conservative on purpose: a false supersession hides a memory from recall. Only memories not newer than the new
statement are touched: an old statement imported late never replaces a newer memory; if the newer one
contradicts it, the old statement is stored already superseded by it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from memory.models import Memory
from memory.pipeline.claims import PREFERENCE, SINGLE, USES, WEAK_CHANGE, Claim, purpose
from memory.pipeline.reading import MARKS, Statement
from memory.pipeline.settings import PipelineSettings
from memory.text.budget import BudgetExhausted, CpuBudget, check
from memory.text.words import has_cjk, nfkc, split_speaker, tokenize


class ConflictAction(StrEnum):
    CREATE = "create"
    UPDATE = "update"
    SUPERSEDE = "supersede"


@dataclass(frozen=True, slots=True)
class Superseded:
    memory: Memory
    similarity: float
    reason: str


@dataclass(frozen=True, slots=True)
class ConflictDecision:
    """`update` is the near-duplicate to update in place (None: create a new memory); `supersede` lists older
    memories the new (or updated) one replaces; `superseded_by` is a newer memory that already replaces the new
    statement (an old statement imported late), which is then stored as superseded."""

    update: Memory | None = None
    update_similarity: float | None = None
    supersede: list[Superseded] = field(default_factory=list)
    superseded_by: Superseded | None = None
    unexamined: int = 0  # candidates left alone because the CPU budget ran out (see `decide`)

    @property
    def action(self) -> ConflictAction:
        if self.update is not None:
            return ConflictAction.UPDATE
        return ConflictAction.SUPERSEDE if self.supersede else ConflictAction.CREATE


class StatementCache:
    """What the rules read from candidate memories, kept across the decisions of one batch's items
    (`memory.write.batch_commit`): a stored memory that is a candidate of many items is read once. Each decision still
    spends its own budget on what it reads anew. Valid while the memories it has read do not change."""

    def __init__(self) -> None:
        self._read: dict[tuple[str, str | None], Statement] = {}

    def statement(self, memory: Memory, writer: str | None, budget: CpuBudget | None) -> Statement:
        key = (memory.id, writer)
        held = self._read.get(key)
        if held is None or held.content != memory.content:
            held = self._read[key] = Statement(memory.content, writer=writer, metadata=memory.metadata)
        held.budget = budget
        return held


def _names(text: str, target: str) -> bool:
    """Whether `text` mentions what a change names (`target`): most of its words, or of its Chinese bigrams."""
    wanted = {t for t in tokenize(target) if not has_cjk(t) or len(t) > 1}
    return bool(wanted) and len(wanted & set(tokenize(text))) * 2 >= len(wanted)


def _overlap(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


def _claim_conflict(
    new: Claim, old: Claim, content: str, old_content: str, similarity: float, settings: PipelineSettings
) -> str | None:
    """Why `new` replaces `old` (same attribute of the same person), or None when both can hold."""
    if similarity < settings.attribute_similarity:
        return None
    changed = f"{new.attribute} changed from {old.value!r} to {new.value!r}"
    if new.kind == SINGLE and new.value != old.value and not _extends(new.value, old.value):
        return changed
    if new.kind == PREFERENCE and new.positive != old.positive:
        return f"{new.attribute} turned {'positive' if new.positive else 'negative'}"
    if new.kind == USES and new.value != old.value:
        new_purpose, old_purpose = purpose(new.value), purpose(old.value)
        if new_purpose is not None and old_purpose is not None and new_purpose != old_purpose:
            return None  # "Slack for chat" and "Figma for design" are both in use
        # a change names what it changes: "we migrated billing to PostgreSQL" replaces the billing memory only,
        # and a bare "we migrated to PostgreSQL" does not say which of "MySQL for billing / for analytics"
        if new.target and not _names(old_content, new.target):
            return None
        if not new.target and old_purpose is not None and not _names(content, old_purpose.removeprefix("做")):
            return None
        if new.changed:  # "switched to", "migrated to", "换成"
            return changed
        if WEAK_CHANGE.search(content) and similarity >= settings.marker_similarity:  # "we use Teams now"
            return changed
    return None


def _extends(a: str, b: str) -> bool:
    """Whether one value is the other said with more words after it ("berlin" / "berlin with my two cats"): the
    same value, not a new one."""
    shorter, longer = sorted((a, b), key=len)
    return longer.startswith(shorter) and not longer[len(shorter)].isalnum()


def _supersession(new: Statement, old: Statement, similarity: float, settings: PipelineSettings) -> str | None:
    """Why the statement `new` replaces the older statement `old`, or None: only a new value of an attribute of
    the same subject does (a change verb with no attribute, a shared name or a close cosine never does)."""
    old_claims = old.claims if new.claims else {}  # the old text is read only if needed
    for key, claim in new.claims.items():
        previous = old_claims.get(key)
        if previous is None or previous.kind != claim.kind:
            continue
        reason = _claim_conflict(claim, previous, new.content, old.content, similarity, settings)
        if reason is not None:
            return reason
    return _moved(new, old)


# "<thing> moved to <time or place>": a change that names the thing it moves ("the team standup moved to 10:00",
# "我们办公室搬到五楼了"); it replaces only a memory that states that thing's time or place by the same writer
_MOVED = re.compile(
    r"\b(?:moved|changed|switched|shifted|rescheduled|postponed|pushed)\s+(?:back\s+)?to\b|"
    r"改到|搬到|挪到|换到|调到|改成|改为|推迟到|提前到",
    re.IGNORECASE,
)
_CLAUSE_END = re.compile(r"[,.;!?，。；！？:：\n]")
_OWNER_WORDS = re.compile(r"^(?:(?:the|our|my|their|his|her)\s+|我们的|我们|我的|我)", re.IGNORECASE)
_AUXILIARY = re.compile(r"(?:\s+(?:has|have|had|was|is|been|just|now|already|finally))+$|(?:已经|刚刚|刚|又|也)+$")
_THING_WINDOW = 60  # characters before the change verb read for the thing it names


def _thing(text: str, last: bool = True) -> str:
    """The last (or first) clause of a text, without its owner word: "Our office is on ..." -> "office is on ..."."""
    clauses = _CLAUSE_END.split(text)
    clause = (clauses[-1] if last else clauses[0]).strip()
    return _OWNER_WORDS.sub("", clause).strip()


def _states_value(text: str) -> bool:
    return MARKS.search(text) is not None or any(c.isdigit() for c in text)


def _moved(new: Statement, old: Statement) -> str | None:
    if new.speaker != old.speaker or new.writer != old.writer:
        return None
    body = nfkc(split_speaker(new.content)[1])
    marker = _MOVED.search(body)
    if marker is None:
        return None
    thing = _AUXILIARY.sub("", _thing(body[max(0, marker.start() - _THING_WINDOW) : marker.start()])).lower()
    # a thing, not a person: an English noun in lower case ("standup"), or three Chinese characters or more
    named = re.search(r"[a-z]{3,}", _OWNER_WORDS.sub("", thing)) if not has_cjk(thing) else len(thing) >= 3
    value = _CLAUSE_END.split(body[marker.end() : marker.end() + _THING_WINDOW])[0]
    old_body = _thing(re.sub(r"(\d):(\d)", r"\1\2", nfkc(split_speaker(old.content)[1])[: _THING_WINDOW * 2]), False)
    old_body = old_body.lower()
    if not named or not thing or not old_body.startswith(thing) or not _states_value(value):
        return None
    if not _states_value(old_body[len(thing) :]):
        return None
    return f"{thing} {marker.group(0)} {value.strip()!r}"


def _near_duplicate(new: Statement, old: Statement, similarity: float, settings: PipelineSettings) -> bool:
    """Whether `new` is the same statement as `old`: never when they differ in the entity, number, date or
    negation they state, or in who says it, whatever their cosine."""
    if similarity < min(settings.near_duplicate_similarity, settings.near_duplicate_similarity_cjk):
        return False  # below either threshold: the marks (regexes, stemming) need not be computed
    cjk = bool(new.marks[2] or old.marks[2])
    threshold = settings.near_duplicate_similarity_cjk if cjk else settings.near_duplicate_similarity
    if similarity < threshold or new.speaker != old.speaker:
        return False
    if new.writer is not None and old.writer is not None and new.writer != old.writer:
        return False
    if new.numbers != old.numbers or new.negations != old.negations:
        return False
    if _overlap(new.words, old.words) < settings.near_duplicate_overlap:
        return False
    (new_entities, new_marks, new_core), (old_entities, old_marks, old_core) = new.marks, old.marks
    if new_marks != old_marks:  # another number, day or month
        return False
    # a name one states and the other does not mention ("Every Tuesday we ..." / "We ... every Tuesday" is fine)
    if new_entities - old.plain or old_entities - new.plain:
        return False
    if new.lead and old.lead and new.lead != old.lead:  # "Caroline thanks Melanie" / "Melanie thanks Caroline"
        return False
    if new_core != old_core:  # Chinese: the same characters (in any order) once fillers are set aside
        return False
    old_claims = old.claims
    return all(a not in old_claims or old_claims[a].value == c.value for a, c in new.claims.items())


def decide(
    content: str,
    created_at: datetime,
    candidates: Sequence[tuple[Memory, float]],
    settings: PipelineSettings,
    claims: Sequence[Claim] | None = None,
    budget: CpuBudget | None = None,
    budget_seconds: float | None = None,
    subject: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    cache: StatementCache | None = None,
) -> ConflictDecision:
    """What to do with a new statement, given live memories of its namespace and kind with their similarity.
    With a `budget` of thread CPU time (or `budget_seconds`, a budget started here, in the thread that does the
    work), the candidates it does not reach are left alone and counted in `unexamined`: the decision stands on
    the closer ones (never raises for lack of budget). `subject` is the writer of the new statement (its token's
    subject): first-person claims are the writer's, compared with each candidate's `source.subject`. `metadata` is
    the new statement's: a `speaker` given there is who said a content without a "Name: " prefix (first person is
    theirs, as each candidate's is the speaker its own content or metadata names). A batch passes its `cache` of
    what was read from candidates for earlier items (`StatementCache`)."""
    if budget is None and budget_seconds is not None:
        budget = CpuBudget(budget_seconds)
    statement = Statement(content, claims, budget, subject, metadata)
    update: tuple[Memory, float] | None = None
    superseded: list[Superseded] = []
    newer: Superseded | None = None
    seen: set[str] = set()
    ordered = sorted(candidates, key=lambda c: c[1], reverse=True)
    unexamined = 0
    for position, (memory, similarity) in enumerate(ordered):
        if memory.id in seen:
            continue
        try:
            check(budget)
            writer = memory.source.subject if subject else None
            if cache is not None:
                old = cache.statement(memory, writer, budget)
            else:
                old = Statement(memory.content, budget=budget, writer=writer, metadata=memory.metadata)
            if memory.updated_at > created_at:  # a newer memory: it may replace this statement, never the reverse
                reason = _supersession(old, statement, similarity, settings)
                if reason is not None and newer is None:
                    newer = Superseded(memory, similarity, reason)
                seen.add(memory.id)
                continue
            reason = _supersession(statement, old, similarity, settings)
            duplicate = reason is None and update is None and _near_duplicate(statement, old, similarity, settings)
        except BudgetExhausted:
            unexamined = len({m.id for m, _ in ordered[position:]} - seen)
            break
        seen.add(memory.id)
        if reason is not None:
            superseded.append(Superseded(memory, similarity, reason))
        elif duplicate:
            update = (memory, similarity)
    if newer is not None:  # the statement is already out of date: store it as history, touch nothing
        return ConflictDecision(superseded_by=newer, unexamined=unexamined)
    if update is None:
        return ConflictDecision(supersede=superseded, unexamined=unexamined)
    return ConflictDecision(update=update[0], update_similarity=update[1], supersede=superseded, unexamined=unexamined)

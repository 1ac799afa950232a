"""Step 4 of the write pipeline (DESIGN §4): conflict detection against the memories already stored.

Given a new statement and the live memories nearest to it in the same namespace (with their cosine
similarity), decide, by rules:

- supersede: an older memory states the same attribute of the same person with another value ("I live in
  Berlin" -> "I moved to Paris", "my favourite colour is blue" -> "... is green now"); or the same preference
  with the opposite polarity ("I like tea" -> "I don't like tea anymore", "我喜欢喝咖啡" -> "我不喜欢喝咖啡了");
  or what someone uses, when the new statement presents it as a change ("we use MySQL" -> "we migrated to
  PostgreSQL"; "I use vim" then "I use Slack" are both kept); or, with no recognised attribute, the new one
  carries a change marker ("moved to", "no longer", "换成", ...), is at least `marker_similarity` close and shares
  an informative word ("the team meeting is on Monday" -> "the team meeting moved to Tuesday").
- update in place: a near-duplicate (cosine >= `near_duplicate_similarity`) that says the same thing: the same
  numbers, the same negation, most informative words in common, no attribute with another value.
- otherwise create.

Conservative on purpose: a false supersession hides a memory from recall. Only memories not newer than the new
statement are touched: an old statement imported late never replaces a newer memory; if the newer one
contradicts it, the old statement is stored already superseded by it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from memory.models import Memory
from memory.pipeline.budget import BudgetExhausted, CpuBudget, check
from memory.pipeline.claims import PREFERENCE, SINGLE, STRONG_CHANGE, USES, WEAK_CHANGE, Claim, extract, purpose
from memory.pipeline.settings import PipelineSettings
from memory.pipeline.text import content_words, numbers, split_speaker

_NEGATION = re.compile(r"\b(?:not|no|never|don't|doesn't|didn't|isn't|aren't|wasn't|won't|can't|cannot)\b|不|没|别|未")


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


def _negations(text: str) -> int:
    return len(_NEGATION.findall(text.lower()))


def _words(text: str) -> set[str]:
    return content_words(split_speaker(text)[1])


class _Statement:
    """One text and what the rules read from it, each computed once when first needed (a write compares its
    statement with up to 16 candidates: re-reading it for each cost up to 0.4 s on hostile text)."""

    def __init__(self, content: str, claims: Sequence[Claim] | None = None, budget: CpuBudget | None = None) -> None:
        self.content = content
        self._budget = budget
        self._claims = {c.attribute: c for c in claims} if claims is not None else None
        self._speaker: tuple[str | None] | None = None
        self._numbers: set[str] | None = None
        self._negations: int | None = None
        self._words: set[str] | None = None

    @property
    def claims(self) -> dict[str, Claim]:
        if self._claims is None:
            check(self._budget)
            self._claims = {c.attribute: c for c in extract(self.content, self._budget)}
        return self._claims

    @property
    def speaker(self) -> str | None:
        if self._speaker is None:
            check(self._budget)
            self._speaker = (split_speaker(self.content)[0],)
        return self._speaker[0]

    @property
    def numbers(self) -> set[str]:
        if self._numbers is None:
            check(self._budget)
            self._numbers = numbers(self.content)
        return self._numbers

    @property
    def negations(self) -> int:
        if self._negations is None:
            check(self._budget)
            self._negations = _negations(self.content)
        return self._negations

    @property
    def words(self) -> set[str]:
        if self._words is None:
            check(self._budget)
            self._words = _words(self.content)
        return self._words


def _overlap(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


def _claim_conflict(new: Claim, old: Claim, content: str, similarity: float, settings: PipelineSettings) -> str | None:
    """Why `new` replaces `old` (same attribute of the same person), or None when both can hold."""
    if similarity < settings.attribute_similarity:
        return None
    changed = f"{new.attribute} changed from {old.value!r} to {new.value!r}"
    if new.kind == SINGLE and new.value != old.value:
        return changed
    if new.kind == PREFERENCE and new.positive != old.positive:
        return f"{new.attribute} turned {'positive' if new.positive else 'negative'}"
    if new.kind == USES and new.value != old.value:
        new_purpose, old_purpose = purpose(new.value), purpose(old.value)
        if new_purpose is not None and old_purpose is not None and new_purpose != old_purpose:
            return None  # "Slack for chat" and "Figma for design" are both in use
        if new.changed:  # "switched to", "migrated to", "换成"
            return changed
        if WEAK_CHANGE.search(content) and similarity >= settings.marker_similarity:  # "we use Teams now"
            return changed
    return None


def _supersession(new: _Statement, old: _Statement, similarity: float, settings: PipelineSettings) -> str | None:
    """Why the statement `new` replaces the older statement `old`, or None."""
    content, old_claims = new.content, old.claims if new.claims else {}  # the old text is read only if needed
    shared = [(claim, old_claims[claim.attribute]) for claim in new.claims.values() if claim.attribute in old_claims]
    if shared:  # the same attribute of the same person: the values decide
        for claim, previous in shared:
            reason = (
                _claim_conflict(claim, previous, content, similarity, settings) if claim.kind == previous.kind else None
            )
            if reason is not None:
                return reason
        return None
    marker = STRONG_CHANGE.search(content)
    if marker is not None and similarity >= settings.marker_similarity:
        # the words just before the marker name what changed ("the team meeting moved to ..."): the old memory
        # must mention one of them, and be said by the same speaker
        subject = _words(content[max(0, marker.start() - 40) : marker.start()]) - _words(new.speaker or "")
        if subject & old.words and new.speaker == old.speaker:
            return f"a change of the same subject ({marker.group(0)!r})"
    return None


def _near_duplicate(new: _Statement, old: _Statement, similarity: float, settings: PipelineSettings) -> bool:
    if similarity < settings.near_duplicate_similarity or new.speaker != old.speaker:
        return False
    if new.numbers != old.numbers or new.negations != old.negations:
        return False
    if _overlap(new.words, old.words) < settings.near_duplicate_overlap:
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
) -> ConflictDecision:
    """What to do with a new statement, given live memories of its namespace and kind with their similarity.
    With a `budget` of thread CPU time (or `budget_seconds`, a budget started here, in the thread that does the
    work), the candidates it does not reach are left alone and counted in `unexamined`: the decision stands on
    the closer ones (never raises for lack of budget)."""
    if budget is None and budget_seconds is not None:
        budget = CpuBudget(budget_seconds)
    statement = _Statement(content, claims, budget)
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
            old = _Statement(memory.content, budget=budget)
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

"""Step 4 of the write pipeline (docs/DESIGN.md § "The write path"): conflict detection against the memories already
stored.

Given a new statement and the live memories nearest to it in the same namespace (with their cosine
similarity), decide, by rules:

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
from itertools import islice
from typing import Any

from memory.models import Memory
from memory.pipeline.claims import PREFERENCE, SINGLE, USES, WEAK_CHANGE, Claim, extract, purpose
from memory.pipeline.settings import PipelineSettings
from memory.recall.cues import speaker_of
from memory.text.budget import BudgetExhausted, CpuBudget, check
from memory.text.words import STOPWORDS, content_words, has_cjk, nfkc, numbers, split_speaker, stem, tokenize

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


# what two statements must state alike to be the same statement, besides their digits: number words, days,
# months (a Chinese numeral inside a common word, "一点", "一起", is not a number)
_MARKS = re.compile(
    r"\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|hundred|thousand|first|"
    r"second|third|half|once|twice|monday|tuesday|wednesday|thursday|friday|saturday|sunday|january|february|"
    r"march|april|may|june|july|august|september|october|november|december|today|tomorrow|yesterday|tonight)\b|"
    r"(?!一点|一起|一下|一些|一直|一样|一般|一定|一个)[零一二两三四五六七八九十百千万半]|[今明昨前后]天|周[一二三四五六日末]",
    re.IGNORECASE,
)
# a capitalised word (a name, a place, a product), so "Anna's course lasts eight weeks" and "Tom's course ..."
# differ in what they are about; the pronoun "I" is not one
_ENTITY = re.compile(r"(?<![\w'-])(?!I\b|I')[A-Z][\w'-]{0,30}")
# words a Chinese statement can add or drop and still say the same thing ("我更喜欢简短一点的回答" = "我喜欢简短的回答")
_ZH_FILLER = re.compile(
    r"非常|特别|比较|一点|一些|其实|真的|[的了呢吧啊呀嘛很更也还都就真]|[\s，。！？、；：,.!?;:~…]+"
)


def _negations(text: str) -> int:
    return len(_NEGATION.findall(text.lower()))


def _words(text: str) -> set[str]:
    return content_words(split_speaker(text)[1])


class _Statement:
    """One text and what the rules read from it, each computed once when first needed (a write compares its
    statement with up to 16 candidates: re-reading it for each cost up to 0.4 s on hostile text). Its `speaker` is
    who said it (`memory.recall.cues.speaker_of`: its "Name: " prefix, else the speaker given in its `metadata`)."""

    def __init__(
        self,
        content: str,
        claims: Sequence[Claim] | None = None,
        budget: CpuBudget | None = None,
        writer: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        self.content = content
        self.writer = writer
        self.speaker = speaker_of(content, metadata)
        self._budget = budget
        self._claims = {self._key(c): c for c in claims} if claims is not None else None
        self._numbers: set[str] | None = None
        self._negations: int | None = None
        self._words: set[str] | None = None
        self._marks: tuple[set[str], set[str], str] | None = None
        self._plain: set[str] | None = None

    @property
    def claims(self) -> dict[str, Claim]:
        if self._claims is None:
            check(self._budget)
            self._claims = {self._key(c): c for c in extract(self.content, self._budget, self.speaker)}
        return self._claims

    def _key(self, claim: Claim) -> str:
        """The claim's attribute with its real owner: a first-person claim belongs to the writer."""
        if claim.first_person and self.writer:
            return f"writer:{self.writer}|{claim.attribute.split('|', 1)[1]}"
        return claim.attribute

    @property
    def plain(self) -> set[str]:
        """Every word of the text, lower-cased and stemmed (stop words too)."""
        if self._plain is None:
            check(self._budget)
            body = nfkc(split_speaker(self.content)[1]).lower()
            self._plain = {stem(m.group(0)) for m in islice(_WORD.finditer(body), _MAX_WORDS)}
        return self._plain

    @property
    def marks(self) -> tuple[set[str], set[str], str]:
        """The entities, number and date words, and (Chinese) the characters it states, for `_near_duplicate`."""
        if self._marks is None:
            check(self._budget)
            body = nfkc(split_speaker(self.content)[1])
            found = (m.group(0).lower() for m in islice(_ENTITY.finditer(body), _MAX_MARKS))
            entities = {stem(w) for w in found if w not in STOPWORDS}  # not a sentence's capitalised "The"
            marks = {m.group(0).lower() for m in islice(_MARKS.finditer(body), _MAX_MARKS)}
            core = "".join(sorted(_ZH_FILLER.sub("", body.lower()))) if has_cjk(body) else ""
            self._marks = (entities, marks, core)
        return self._marks

    @property
    def lead(self) -> str | None:
        """The first name the text states (stemmed), when it opens with one: who a third-person statement is
        about ("Caroline expresses ..."); None for "I ..." or a text that opens with anything else."""
        match = _ENTITY.match(nfkc(split_speaker(self.content)[1]).lstrip())
        word = stem(match.group(0).lower()) if match else None
        return word if word is not None and word not in STOPWORDS else None

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


class StatementCache:
    """What the rules read from candidate memories, kept across the decisions of one batch's items
    (`memory.write.batch_commit`): a stored memory that is a candidate of many items is read once. Each decision still
    spends its own budget on what it reads anew. Valid while the memories it has read do not change."""

    def __init__(self) -> None:
        self._read: dict[tuple[str, str | None], _Statement] = {}

    def statement(self, memory: Memory, writer: str | None, budget: CpuBudget | None) -> _Statement:
        key = (memory.id, writer)
        held = self._read.get(key)
        if held is None or held.content != memory.content:
            held = self._read[key] = _Statement(memory.content, writer=writer, metadata=memory.metadata)
        held._budget = budget
        return held


_WORD = re.compile(r"[\w'-]{1,40}")
_MAX_WORDS = 2000  # words read per text for `plain` (a text is cut at MAX_ANALYSED_CHARS anyway)
_MAX_MARKS = 64  # entities and number words compared per text (more: the texts are not near-duplicates anyway)


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


def _supersession(new: _Statement, old: _Statement, similarity: float, settings: PipelineSettings) -> str | None:
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
    return _MARKS.search(text) is not None or any(c.isdigit() for c in text)


def _moved(new: _Statement, old: _Statement) -> str | None:
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


def _near_duplicate(new: _Statement, old: _Statement, similarity: float, settings: PipelineSettings) -> bool:
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
    statement = _Statement(content, claims, budget, subject, metadata)
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
                old = _Statement(memory.content, budget=budget, writer=writer, metadata=memory.metadata)
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

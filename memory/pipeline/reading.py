"""What the conflict rules (`memory.pipeline.conflict`) read from one statement, each part computed once when first
needed and only while its CPU budget lasts: its claims (`memory.pipeline.claims`), keyed by their real owner; its
words, plain and informative; its numbers and negations; the names, number words, days and months it states, and
(Chinese) its characters once filler words are set aside.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import cached_property
from itertools import islice
from typing import Any

from memory.pipeline.claims import Claim, extract
from memory.recall.cues import speaker_of
from memory.text.budget import CpuBudget, check
from memory.text.patterns import bilingual
from memory.text.words import STOPWORDS, content_words, has_cjk, nfkc, numbers, split_speaker, stem

_NEGATION = re.compile(r"\b(?:not|no|never|don't|doesn't|didn't|isn't|aren't|wasn't|won't|can't|cannot)\b|不|没|别|未")

# what two statements must state alike to be the same statement, besides their digits: number words, days,
# months (a Chinese numeral inside a common word, "一点", "一起", is not a number)
MARKS = bilingual(
    r"one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|hundred|thousand|first|second|third|"
    r"half|once|twice|monday|tuesday|wednesday|thursday|friday|saturday|sunday|january|february|march|april|may|june|"
    r"july|august|september|october|november|december|today|tomorrow|yesterday|tonight",
    r"(?!一点|一起|一下|一些|一直|一样|一般|一定|一个)[零一二两三四五六七八九十百千万半]|[今明昨前后]天|周[一二三四五六日末]",
)
# a capitalised word (a name, a place, a product), so "Anna's course lasts eight weeks" and "Tom's course ..."
# differ in what they are about; the pronoun "I" is not one
_ENTITY = re.compile(r"(?<![\w'-])(?!I\b|I')[A-Z][\w'-]{0,30}")
# words a Chinese statement can add or drop and still say the same thing ("我更喜欢简短一点的回答" = "我喜欢简短的回答")
_ZH_FILLER = re.compile(
    r"非常|特别|比较|一点|一些|其实|真的|[的了呢吧啊呀嘛很更也还都就真]|[\s，。！？、；：,.!?;:~…]+"
)
_WORD = re.compile(r"[\w'-]{1,40}")
_MAX_WORDS = 2000  # words read per text for `plain` (a text is cut at MAX_ANALYSED_CHARS anyway)
_MAX_MARKS = 64  # entities and number words compared per text (more: the texts are not near-duplicates anyway)


class Statement:
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
        self.budget = budget
        self._claims = {self._key(c): c for c in claims} if claims is not None else None

    @property
    def claims(self) -> dict[str, Claim]:
        if self._claims is None:
            check(self.budget)
            self._claims = {self._key(c): c for c in extract(self.content, self.budget, self.speaker)}
        return self._claims

    def _key(self, claim: Claim) -> str:
        """The claim's attribute with its real owner: a first-person claim belongs to the writer."""
        if claim.first_person and self.writer:
            return f"writer:{self.writer}|{claim.attribute.split('|', 1)[1]}"
        return claim.attribute

    @cached_property
    def plain(self) -> set[str]:
        """Every word of the text, lower-cased and stemmed (stop words too)."""
        check(self.budget)
        body = nfkc(split_speaker(self.content)[1]).lower()
        return {stem(m.group(0)) for m in islice(_WORD.finditer(body), _MAX_WORDS)}

    @cached_property
    def marks(self) -> tuple[set[str], set[str], str]:
        """The entities, number and date words, and (Chinese) the characters it states, for a near-duplicate."""
        check(self.budget)
        body = nfkc(split_speaker(self.content)[1])
        found = (m.group(0).lower() for m in islice(_ENTITY.finditer(body), _MAX_MARKS))
        entities = {stem(w) for w in found if w not in STOPWORDS}  # not a sentence's capitalised "The"
        marks = {m.group(0).lower() for m in islice(MARKS.finditer(body), _MAX_MARKS)}
        core = "".join(sorted(_ZH_FILLER.sub("", body.lower()))) if has_cjk(body) else ""
        return entities, marks, core

    @property
    def lead(self) -> str | None:
        """The first name the text states (stemmed), when it opens with one: who a third-person statement is
        about ("Caroline expresses ..."); None for "I ..." or a text that opens with anything else."""
        match = _ENTITY.match(nfkc(split_speaker(self.content)[1]).lstrip())
        word = stem(match.group(0).lower()) if match else None
        return word if word is not None and word not in STOPWORDS else None

    @cached_property
    def numbers(self) -> set[str]:
        check(self.budget)
        return numbers(self.content)

    @cached_property
    def negations(self) -> int:
        check(self.budget)
        return len(_NEGATION.findall(self.content.lower()))

    @cached_property
    def words(self) -> set[str]:
        check(self.budget)
        return content_words(split_speaker(self.content)[1])

"""What a statement is about when it shares no word with the others: the everyday domain its words belong to, and
the forms a word takes (a compound's parts, an activity's or agent's stem).

Facts about one topic often share no word: "The user swims laps", "The user needs new goggles", "The user wants
to improve their freestyle" (a thing, its gear, its technique). The shipped embedders do not see that: on the
labelled set `gateway/evaluation/labels/consolidation_words.json` their cosine ranks a same-topic pair above a
cross-topic pair only 77-92% of the time, too noisy to merge on without false merges (bench/FINDINGS.md, "Topics
that share no word").

So a lexicon (`domains.json`) lists words that almost always mean one domain of a person's life (swimming:
goggles, freestyle, 泳镜, 游泳馆 ...); a statement holding one gets that domain as an extra topic term
(`@swimming`, prefixed so it never collides with a word), shown by its name in the statement's language. English
words match by their topic key (`memory.consolidation.topics`) or their root ("renovating" meets "renovation"),
Chinese words as written anywhere in a run (segmentation splits unfamiliar compounds: "新泳镜" -> 新泳/镜).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

LEXICON = Path(__file__).with_name("domains.json")
DOMAIN_PREFIX = "@"
_CJK = re.compile(r"[\u3400-\u9fff]")


@dataclass(frozen=True, slots=True)
class Domain:
    key: str
    en: str
    zh: str

    @property
    def term(self) -> str:
        return DOMAIN_PREFIX + self.key

    def name(self, chinese: bool) -> str:
        return self.zh if chinese else self.en


@dataclass(frozen=True, slots=True)
class Lexicon:
    english: dict[str, Domain]  # topic key -> domain
    chinese: re.Pattern[str]  # any Chinese word of a domain, longest first
    chinese_domain: dict[str, Domain]


def load(normalise: Callable[[str], str], path: Path = LEXICON) -> Lexicon:
    """The lexicon with English words normalised the way topic keys are (`normalise`), each under its singular,
    its plural's key ("tomato" and "tomatoes") and its root ("renovation" -> renov)."""
    data = json.loads(path.read_text(encoding="utf-8"))["domains"]
    english: dict[str, Domain] = {}
    chinese: dict[str, Domain] = {}
    for key, entry in data.items():
        domain = Domain(key, entry["en"], entry["zh"])
        for word in entry["words"]:
            if _CJK.search(word):
                chinese.setdefault(word, domain)
                continue
            lowered = word.lower()
            for form in (normalise(lowered), normalise(lowered + "s"), normalise(lowered + "es")):
                english.setdefault(form, domain)
            if found := root(lowered):
                english.setdefault(ROOT_PREFIX + found, domain)
    words = sorted(chinese, key=lambda w: (-len(w), w))
    pattern = re.compile("|".join(map(re.escape, words))) if words else re.compile(r"(?!x)x")
    return Lexicon(english, pattern, chinese)


@lru_cache(maxsize=4)
def lexicon(normalise: Callable[[str], str]) -> Lexicon:
    return load(normalise)


def domain_of(term: str, normalise: Callable[[str], str]) -> Domain | None:
    """The domain a topic key (English: itself or its root) or a word (Chinese) belongs to."""
    found = lexicon(normalise)
    if domain := found.english.get(term) or found.chinese_domain.get(term):
        return domain
    stem = root(term)
    return found.english.get(ROOT_PREFIX + stem) if stem else None


def chinese_domains(run: str, normalise: Callable[[str], str]) -> Iterator[Domain]:
    found = lexicon(normalise)
    for match in found.chinese.finditer(run):
        yield found.chinese_domain[match.group()]


ROOT_PREFIX = "~"
_ROOT = re.compile(
    r"^(?P<root>[a-z]{5,}?)(?:ography|ographer|ographic|ations?|ating|ated?|ers?|ing|ists?|ed|ic|al|y|e)$"
)


def root(word: str) -> str | None:
    """A lexicon word's root, for matching its other forms ("renovation", "renovating" -> renov;
    "photography", "photographs" -> photograph; "swimmer", "swimming" -> swimm): at least five letters, so short
    words match only as they are. Only ever compared with the roots of the lexicon's own (unambiguous) words."""
    word = word[:-1] if len(word) > 6 and word.endswith("s") else word
    match = _ROOT.match(word)
    if match is not None:
        return match.group("root")
    return word if len(word) >= 5 else None

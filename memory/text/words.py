"""Text helpers shared by the write-pipeline steps and the keyword (BM25) encoder.

Everything here is pure and deterministic: the same text always gives the same tokens, for documents and queries
alike. Tokens are lowercase NFKC words for alphabetic scripts (English stop words dropped, a light suffix stemmer
applied) and, for CJK runs, overlapping character bigrams plus the single characters that carry meaning.

Every scan is linear in the input (hostile text up to the content limit costs about a millisecond per kilobyte):
the patterns only start at word starts and never backtrack into a word, and a word longer than `MAX_WORD_CHARS`
("a" x 8000, a run of digits) is cut into pieces of that size, the same for documents and queries, before it is
stemmed or joined.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
CJK_RUN = re.compile(f"[{_CJK}]+")
_HAS_CJK = re.compile(f"[{_CJK}]")
_WORD = re.compile(r"[^\W_]+")
_JOINERS = re.compile(r"[-_./:#]")
# Words joined by single `-_./:#` (a code like "ZX-4471"). It starts only at a word start and never gives back a
# word it took (possessive), so a failed attempt never rescans a word: the plain `[^\W_]+(?:[-_./:#][^\W_]+)+`
# retried from every character of a long word (quadratic: 2 s for one 8,000-letter word).
_JOINED = re.compile(r"(?<![^\W_])[^\W_]++(?:[-_./:#][^\W_]++)+")
_HAS_DIGIT = re.compile(r"\d")
_DIGITS = re.compile(r"\d+")
# longer "words" (a hash, a run of digits, one letter repeated) are cut into pieces of this size: no real word is
# this long, and the pieces of a document and of a query cut the same way still meet
MAX_WORD_CHARS = 64
# The text rules read at most this many characters of a text after NFKC (the content limit is 8,000 by default)
MAX_ANALYSED_CHARS = 10_000
# "Speaker: text" (record_turn writes "user: ...", imports write "Caroline: ..."): a short name, then a colon,
# possibly after a bracketed date ("[8 May, 2023] Caroline: ...").
# A full-width colon needs no space after it ("小明：我明天去").
# The name ends in a non-space and the spaces around the colon are taken possessively, so a text of spaces after
# a letter is not retried at every split of the name.
_SPEAKER = re.compile(
    r"^\s*(?:\[[^\]\n]{1,40}\]\s*)?([A-Za-z](?:[\w .'-]{0,38}[\w.'-])?|[" + _CJK + r"]{1,8})\s*+(?::\s++|：\s*+)(?=\S)"
)

_STOPWORD_TEXT = """
    a about above after again against all am an and any are aren't as at be because been before being below
    between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during each few
    for from further had hadn't has hasn't have haven't having he he'd he'll he's her here here's hers herself him
    himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself let's me more most mustn't my
    myself no nor not of off on once only or other ought our ours ourselves out over own same shan't she she'd
    she'll she's should shouldn't so some such than that that's the their theirs them themselves then there
    there's these they they'd they'll they're they've this those through to too under until up very was wasn't we
    we'd we'll we're we've were weren't what what's when when's where where's which while who who's whom why
    why's with won't would wouldn't you you'd you'll you're you've your yours yourself yourselves s t d ll m re ve
    just also really yeah oh ok okay"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
# Single CJK characters too common to mean anything on their own (bigrams that contain them are kept).
CJK_STOP_CHARS = frozenset("的了是我你他她它们在和就都也很吗呢吧啊呀有这那一个不么着过把被给对与及或而")


@lru_cache(maxsize=256)
def nfkc(text: str) -> str:
    """NFKC of `text`, cut at `MAX_ANALYSED_CHARS`: a few characters expand 18-fold ("\ufdfa"), and the text rules
    read only this much. Cached: each step of a write reads the same content (and NFKC of 8,000 expanding
    characters alone costs 16 ms)."""
    return unicodedata.normalize("NFKC", text)[:MAX_ANALYSED_CHARS]


def normalize(text: str) -> str:
    """NFKC (cut at `MAX_ANALYSED_CHARS`), case-folded, whitespace collapsed."""
    return " ".join(nfkc(text).casefold().split())


def has_cjk(text: str) -> bool:
    return _HAS_CJK.search(text) is not None


def split_speaker(text: str) -> tuple[str | None, str]:
    """("caroline", "I moved to Paris") for "Caroline: I moved to Paris"; (None, text) without a prefix."""
    match = _SPEAKER.match(text)
    if match is None:
        return None, text
    return normalize(match.group(1)), text[match.end() :]


@lru_cache(maxsize=65_536)
def stem(word: str) -> str:
    """A light English suffix stemmer (plural -s/-ies, -ing, -ed, final -e), the same for documents and queries.
    Crude on purpose: it only has to map the forms of one word together, not produce dictionary words."""
    if len(word) <= 3 or not word.isascii() or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in ("ing", "ed"):
        base = word[: -len(suffix)]
        if word.endswith(suffix) and len(base) >= 3 and any(c in "aeiouy" for c in base):
            word = base
            if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "lsz":
                word = word[:-1]
            break
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    return word


def pieces(word: str) -> list[str]:
    """`word` cut into pieces of at most `MAX_WORD_CHARS` (a normal word is its own single piece)."""
    if len(word) <= MAX_WORD_CHARS:
        return [word]
    return [word[i : i + MAX_WORD_CHARS] for i in range(0, len(word), MAX_WORD_CHARS)]


def _add_word(word: str, tokens: list[str]) -> None:
    if word in STOPWORDS or (len(word) == 1 and not word.isdigit()):
        return
    if len(word) > MAX_WORD_CHARS:
        tokens.extend(stem(piece) for piece in pieces(word))
    else:
        tokens.append(stem(word))


def _add_words(segment: str, tokens: list[str]) -> None:
    """The tokens of a stretch of text without CJK, appended to `tokens`."""
    single = segment.strip()
    if single.isalnum():  # one word and no joiner (what sits between CJK runs, mostly): no scan needed
        _add_word(single, tokens)
        return
    for word in _WORD.findall(segment):
        _add_word(word, tokens)
    # codes like "ZX-4471" or "v2.3": also the joined form, so "zx4471" and "zx-4471" meet (kept whole: a long
    # one costs only its own length, and URLs keep meeting their own joined form)
    if _JOINERS.search(segment):
        tokens.extend(_JOINERS.sub("", joined) for joined in _JOINED.findall(segment) if _HAS_DIGIT.search(joined))


def _add_cjk(run: str, tokens: list[str]) -> None:
    if len(run) == 1:
        if run not in CJK_STOP_CHARS:
            tokens.append(run)
        return
    tokens.extend([c for c in run if c not in CJK_STOP_CHARS])
    tokens.extend([run[i : i + 2] for i in range(len(run) - 1)])


def tokenize(text: str) -> list[str]:
    """Keyword tokens of `text`, in order, with repeats (a document's term frequencies)."""
    text = normalize(text).replace("’", "'")
    tokens: list[str] = []
    position = 0
    for match in CJK_RUN.finditer(text):
        start = match.start()
        if start > position:
            _add_words(text[position:start], tokens)
        _add_cjk(match.group(), tokens)
        position = match.end()
    if position < len(text):
        _add_words(text[position:], tokens)
    return tokens


def content_words(text: str) -> set[str]:
    """The distinct informative units of a text: stemmed non-stop words and single meaningful CJK characters
    (what two statements must share to be "about the same thing")."""
    return {t for t in tokenize(text) if not (has_cjk(t) and len(t) > 1)}


def numbers(text: str) -> set[str]:
    """The digit groups of a text ("555-1234" gives {"555", "1234"})."""
    return set(_DIGITS.findall(nfkc(text)))

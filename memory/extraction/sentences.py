"""The text layer of the rule-based extractor: a message cut into sentences, a sentence cut into clauses, and
whether a sentence is a question. English, Chinese and mixed text.

Sentences end at a newline, at Chinese and full-width punctuation ("。！？；", always), and at an English ".", "!",
"?" or "…" that is followed by a space, a CJK character or the end. A "." does not end a sentence after a known
abbreviation ("Mr.", "e.g.", "a.m."), after a single capital ("J. K. Rowling"), or when the next word starts
lowercase or with a digit; a "." inside a word ("3.14", "example.com", "https://a.b/c?d=1") is never followed by a
space, so decimals, URLs and e-mail addresses stay whole. Closing quotes and brackets stay with their sentence.
A sentence longer than `MAX_SENTENCE_CHARS` is cut at a space or a comma near the limit (hard, if it has none).

Linear in the text, whatever it holds: one pass over the characters, with a look-back of at most
`_ABBREVIATION_CHARS` and a look-ahead of at most `_LOOKAHEAD` characters per terminator; no regular expression.
"""

from __future__ import annotations


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


MAX_SENTENCE_CHARS = 400

_CJK_END = frozenset("。！？；｡")  # always end a sentence
_LATIN_END = frozenset(".!?…")
_ENDERS = _CJK_END | _LATIN_END | frozenset("！？")
_CLOSERS = frozenset("\"'”’)]}」』）】》")
_QUOTES = frozenset("\"'”’」』")
_ABBREVIATIONS = _words(
    "mr mrs ms dr prof sr jr st mt vs etc e.g i.e a.m p.m u.s u.k u.n no nos approx dept est fig inc ltd co corp "
    "jan feb mar apr jun jul aug sep sept oct nov dec mon tue tues wed thu thur thurs fri sat sun gen col lt sgt "
    "rev hon ph.d b.a m.a d.c n.y l.a"
)
_ABBREVIATION_CHARS = 8
_LOOKAHEAD = 4
_CLAUSE_MARKS = frozenset("，,;；")
_ZH_QUESTION_ENDS = ("吗", "呢", "嘛")
_NOT_QUESTION_MA = ("什么", "这么", "那么", "怎么", "多么", "要么")


def is_cjk(char: str) -> bool:
    code = ord(char)
    return 0x3400 <= code <= 0x9FFF or 0xF900 <= code <= 0xFAFF or 0x3040 <= code <= 0x30FF


def _previous_word(text: str, end: int) -> str:
    """The letters and dots just before `end`, at most `_ABBREVIATION_CHARS` of them, lowercased."""
    start = end
    while start > 0 and end - start < _ABBREVIATION_CHARS and (text[start - 1].isalpha() or text[start - 1] == "."):
        start -= 1
    return text[start:end].strip(".").lower() if start == 0 or not text[start - 1].isalnum() else ""


def _next_visible(text: str, index: int) -> str | None:
    """The first non-space character at or after `index` within `_LOOKAHEAD` characters ("" at the end)."""
    for offset in range(_LOOKAHEAD):
        if index + offset >= len(text):
            return ""
        if not text[index + offset].isspace():
            return text[index + offset]
    return None  # a long run of spaces: a boundary


def _ends_here(text: str, start: int, end: int) -> bool:
    """Whether the run of terminators text[start:end] (closers included) ends a sentence."""
    run = text[start:end]
    if any(c in _CJK_END or c in "！？" for c in run):
        return True
    following = text[end] if end < len(text) else ""
    if following and not following.isspace() and not is_cjk(following):
        return False  # "3.14", "example.com", "?q=1", "...and"
    if "!" in run or "?" in run:
        return True
    after = _next_visible(text, end)
    if after is None or after == "" or is_cjk(after):
        return True
    if after.islower() or after.isdigit():
        return False  # "etc. and so on", "No. 5", "... and then"
    if run.startswith(".") and not run.startswith(".."):
        word = _previous_word(text, start)
        if word in _ABBREVIATIONS or (len(word) == 1 and text[start - 1].isupper()):
            return False
    return True


def _cut(sentence: str) -> list[str]:
    """`sentence` in pieces of at most MAX_SENTENCE_CHARS, cut after a space or comma in the second half of each."""
    pieces: list[str] = []
    while len(sentence) > MAX_SENTENCE_CHARS:
        cut = MAX_SENTENCE_CHARS
        for index in range(MAX_SENTENCE_CHARS - 1, MAX_SENTENCE_CHARS // 2, -1):
            if sentence[index].isspace() or sentence[index] in "，,、":
                cut = index + 1
                break
        pieces.append(sentence[:cut])
        sentence = sentence[cut:]
    pieces.append(sentence)
    return pieces


def split_sentences(text: str) -> list[str]:
    """The sentences of `text`, stripped, in order; pieces without a letter, digit or CJK character are left out."""
    sentences: list[str] = []
    start = index = 0
    length = len(text)

    def close(end: int) -> None:
        for piece in _cut(text[start:end].strip()):
            if any(c.isalnum() for c in piece):
                sentences.append(piece.strip())

    while index < length:
        char = text[index]
        if char == "\n":
            close(index)
            start = index = index + 1
        elif char in _ENDERS:
            end = index
            while end < length and text[end] in _ENDERS:
                end += 1
            while end < length and text[end] in _CLOSERS:
                end += 1
            if _ends_here(text, index, end):
                close(end)
                start = end
            index = end
        else:
            index += 1
    close(length)
    return sentences


def clause_spans(sentence: str) -> list[tuple[int, int]]:
    """The (start, end) of each clause of a sentence, cut at commas and semicolons (an ASCII comma or semicolon
    only before a space or the end, so "1,000" stays whole), without the marks and surrounding spaces."""
    raw: list[tuple[int, int]] = []
    start = 0
    for index, char in enumerate(sentence):
        if char in _CLAUSE_MARKS and (char not in ",;" or index + 1 == len(sentence) or sentence[index + 1] == " "):
            raw.append((start, index))
            start = index + 1
    raw.append((start, len(sentence)))
    spans: list[tuple[int, int]] = []
    for begin, end in raw:
        while begin < end and sentence[begin].isspace():
            begin += 1
        while end > begin and sentence[end - 1].isspace():
            end -= 1
        if begin < end:
            spans.append((begin, end))
    return spans


def strip_end(sentence: str) -> str:
    """`sentence` without its closing punctuation and quotes (a closing bracket stays: it closes a date)."""
    end = len(sentence)
    while end > 0 and (sentence[end - 1] in _ENDERS or sentence[end - 1] in _QUOTES or sentence[end - 1].isspace()):
        end -= 1
    return sentence[:end]


def is_question(sentence: str) -> bool:
    """A sentence that ends with a question mark, or a Chinese one that ends with a question particle."""
    end = len(sentence)
    while end > 0 and (sentence[end - 1] in _CLOSERS or sentence[end - 1].isspace()):
        end -= 1
    if end > 0 and sentence[end - 1] in "?？":
        return True
    body = strip_end(sentence)
    return body.endswith(_ZH_QUESTION_ENDS) or (body.endswith("么") and not body.endswith(_NOT_QUESTION_MA))


def cjk_count(text: str) -> int:
    return sum(1 for c in text if is_cjk(c))

"""Step 1 of the write pipeline (docs/DESIGN.md § "The write path"): the density filter.

Content that is nothing but acknowledgements, greetings, laughter or filler ("ok", "thanks!", "got it", "lol",
"好的", "明白了", "谢谢", an emoji) carries no fact worth recalling and is skipped with a reason, unless the
caller forces the write. A leading "Speaker:" label (turns extracted from working memory) is ignored. Anything
with one word outside those phrases is kept: the filter must never drop a fact.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from memory.text.budget import CpuBudget, check
from memory.text.words import normalize, split_speaker

# Whole phrases, by category; the content is low-information when it is a sequence of these and nothing else.
_PHRASES: dict[str, tuple[str, ...]] = {
    "acknowledgement": (
        r"ok(?:ay|ey)?",
        r"o?k+",
        r"kk+",
        r"okie(?:\s+dokie)?",
        r"alright",
        r"all\s+right",
        r"got\s+it",
        r"gotcha",
        r"i\s+see",
        r"understood",
        r"understand",
        r"noted",
        r"roger(?:\s+that)?",
        r"copy(?:\s+that)?",
        r"will\s+do",
        r"sure(?:\s+thing)?",
        r"of\s+course",
        r"yes+",
        r"ye+a+h*",
        r"yep",
        r"yup",
        r"ya",
        r"no+",
        r"nope",
        r"nah",
        r"right",
        r"fine",
        r"cool",
        r"nice",
        r"great",
        r"good",
        r"awesome",
        r"perfect",
        r"excellent",
        r"wonderful",
        r"amazing",
        r"(?:that\s+|it\s+)?sounds\s+(?:good|great|fine|cool|perfect|awesome|amazing|fun|nice|lovely)",
        r"makes\s+sense",
        r"that\s+makes\s+sense",
        r"(?:that's|that\s+is|thats|it's|it\s+is|how|so|so\s+so)\s+(?:fine|ok|okay|good|great|cool|nice|awesome|"
        r"right|true|amazing|wonderful|lovely|sweet|fun|funny)",
        r"fair\s+enough",
        r"agreed",
        r"me\s+too",
        r"same(?:\s+here)?",
        r"true",
        r"indeed",
        r"exactly",
        r"absolutely",
        r"definitely",
        r"totally",
        r"np",
        r"no\s+(?:problem|worries)",
        r"you'?re\s+welcome",
        r"welcome",
        r"thanks?",
        r"thx",
        r"ty",
        r"tysm",
        r"thank\s+(?:you|u)",
        r"many\s+thanks",
        r"cheers",
        r"much\s+appreciated",
        r"appreciate\s+it",
        r"好的?",
        r"好吧",
        r"好滴",
        r"好嘞",
        r"行",
        r"可以",
        r"没问题",
        r"对",
        r"对的",
        r"是的?",
        r"嗯+",
        r"哦+",
        r"噢+",
        r"喔+",
        r"啊+",
        r"明白了?",
        r"知道了?",
        r"了解了?",
        r"懂了?",
        r"收到了?",
        r"谢谢(?:你|您|啦)?",
        r"多谢",
        r"感谢",
        r"不客气",
        r"没事",
        r"没关系",
        r"不错",
        r"太好了",
        r"棒",
        r"真棒",
    ),
    "greeting": (
        r"h(?:i+|ello|ey+|owdy)(?:\s+there)?",
        r"yo",
        r"good\s+(?:morning|afternoon|evening|night)",
        r"morning",
        r"gn",
        r"bye+",
        r"good\s*bye",
        r"see\s+(?:you|ya)(?:\s+(?:later|soon|tomorrow))?",
        r"take\s+care",
        r"cya",
        r"ttyl",
        r"你好",
        r"您好",
        r"嗨",
        r"哈喽",
        r"早(?:上好|安)?",
        r"晚上好",
        r"晚安",
        r"再见",
        r"拜拜?",
        r"回头见",
    ),
    "laughter": (
        r"(?:ha)+h?",
        r"(?:he)+h?",
        r"(?:hi){2,}",
        r"lo+l",
        r"lmao",
        r"lmfao",
        r"rofl",
        r"xd+",
        r"哈+",
        r"呵+",
        r"嘿+",
        r"嘻+",
    ),
    "filler": (
        r"oh+",
        r"ah+",
        r"uh+",
        r"um+",
        r"hm+",
        r"wow",
        r"so",
        r"well",
        r"and",
        r"very",
        r"much",
        r"so\s+much",
        r"a\s+lot",
        r"really",
        r"again",
        r"too",
        r"then",
        r"guys?",
        r"man",
        r"dude",
        r"buddy",
        r"mate",
        r"everyone",
        r"呀",
        r"啦",
        r"呢",
        r"吧",
        r"哇",
        r"非常",
        r"很",
        r"太",
        r"了",
    ),
}
_COMPILED = [(category, re.compile(p)) for category, patterns in _PHRASES.items() for p in patterns]
_WORDS = re.compile(r"[^\W_]+(?:'[^\W_]+)?")
_CALENDAR = re.compile(
    r"(?:mon|tues|wednes|thurs|fri|satur|sun)day|jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|"
    r"july?|aug(?:ust)?|sep(?:t|tember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?|today|tomorrow|tonight",
    re.IGNORECASE,
)
_MAX_CHARS = 120  # longer content always says something


@dataclass(frozen=True, slots=True)
class DensityVerdict:
    low_information: bool
    reason: str | None = None  # "low_information: ..." when skipped


def _is_symbol(char: str) -> bool:
    # punctuation, symbols (emoji are "So"), marks, separators, and the emoji joiner / variation selectors
    return unicodedata.category(char)[0] in "PSZMC"


def _decompose(text: str) -> set[str] | None:
    """The categories of a split of `text` (words separated by single spaces) into known phrases, or None."""
    reachable: dict[int, set[str]] = {0: set()}
    for start in range(len(text) + 1):
        if start not in reachable or (start > 0 and text[start - 1] != " " and not _cjk_boundary(text, start)):
            continue
        if start == len(text):
            return reachable[start]
        for category, pattern in _COMPILED:
            match = pattern.match(text, start)
            if match is None or match.end() == start:
                continue
            end = match.end()
            if end < len(text) and text[end] != " " and not _cjk_boundary(text, end):
                continue
            stop = end + 1 if end < len(text) and text[end] == " " else end
            reachable.setdefault(stop, set()).update(reachable[start] | {category})
    return reachable.get(len(text))


def _cjk_boundary(text: str, index: int) -> bool:
    """Phrases of CJK text follow each other without spaces."""
    return 0 < index < len(text) and ord(text[index - 1]) > 0x2E80 and ord(text[index]) > 0x2E80


def _verdict(body: str) -> set[str] | None:
    text = " ".join(_WORDS.findall(normalize(body).replace("’", "'")))
    return _decompose(text) if text else None


def assess(content: str, budget: CpuBudget | None = None) -> DensityVerdict:
    """Whether `content` is only chit-chat, and why. Linear in the text (only a short one is split into
    phrases); with a `budget`, raises `BudgetExhausted` when it runs out."""
    _, body = split_speaker(content)
    if all(_is_symbol(c) for c in body):
        return DensityVerdict(True, "low_information: only emoji, punctuation or symbols")
    if len(body) > _MAX_CHARS:
        return DensityVerdict(False)
    check(budget)
    categories = _verdict(body)
    if categories is None:
        # "Thanks, Mel!" / "Hey Caroline": one capitalised name addressed beside the chit-chat
        words = _WORDS.findall(body)
        names = [w for w in words[1:] if w[:1].isupper() and w.isalpha() and not _CALENDAR.fullmatch(w)]
        if len(words) <= 6 and len(names) == 1:
            categories = _verdict(" ".join(w for w in words if w != names[0]))
    if categories is None:
        return DensityVerdict(False)
    kinds = "/".join(sorted(categories - {"filler"})) or "filler"
    return DensityVerdict(True, f"low_information: only {kinds} ({body.strip()[:40]!r})")

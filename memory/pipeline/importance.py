"""Step 3 of the write pipeline (docs/DESIGN.md § "The write path"): importance by rules, when the caller gives none.

Start from 0.5 and apply every rule that fires, English and Chinese:
- `explicit`: the writer asks for it to be kept ("remember", "don't forget", "important", "记住", "重要") -> at
  least 0.9;
- `deadline`: a deadline, due date or appointment ("due", "deadline", "by Friday", "截止", "预约") -> +0.15;
- `preference`: a stated taste or need ("I prefer", "I like", "I hate", "my favourite", "allergic", "我喜欢",
  "我不喜欢") -> +0.15;
- `personal`: who the user is (name, home, work, family, contact details; "我叫", "我住在") -> +0.1;
- `specifics`: numbers, dates, times or money -> +0.1;
- `time_bound`: the text names a coming day (step 2 found an expiry) -> +0.05;
- `small_talk`: pleasantries and little else, with none of the above ("how are you?", "haha that's funny",
  "哈哈") -> 0.2.
The result is clamped to 0..1 and the rules that fired are recorded on the memory. Linear in the text: a rule
scans only a text that holds one of its words, and no pattern rescans a run of numerals. With an LLM configured for
importance (`memory.pipeline.rating`), these rules are its fallback.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory.text.budget import CpuBudget, check
from memory.text.patterns import bilingual
from memory.text.words import content_words, has_cjk

BASE = 0.5
EXPLICIT_FLOOR = 0.9
SMALL_TALK = 0.2

_FLAGS = re.IGNORECASE
_EXPLICIT = bilingual(
    r"remember|don'?t\s+forget|do\s+not\s+forget|never\s+forget|important(?:ly)?|crucial|critical|make\s+sure|"
    r"keep\s+in\s+mind|note\s+that",
    r"记住|记得|别忘|不要忘|重要|务必|千万|一定要|切记",
)
_DEADLINE = bilingual(
    r"deadline|due|overdue|expires?|expiring|appointment|meeting|interview|flight|exam|submit|(?:by|before|"
    r"until)\s+(?:tomorrow|tonight|(?:next\s+)?(?:mon|tues|wednes|thurs|fri|satur|sun)day|\d{1,2}(?::\d{2})?\s*(?:am|"
    r"pm)|end\s+of)",
    r"截止|到期|期限|(?:之|以)?前(?:交|完成|提交|截止)|预约|会议|开会|面试|考试|航班",
)
_PREFERENCE = re.compile(
    r"\b(?:i|we|user|the\s+user|they|he|she)\s+(?:really\s+|also\s+|still\s+|now\s+|usually\s+|always\s+)?"
    r"(?:prefers?|like[sd]?|loves?|hates?|dislikes?|enjoys?|can'?t\s+stand|(?:do|does|did)\s*n[o']t\s+(?:like|want|"
    r"enjoy)|want|wants|need|needs)\b|\bfavou?rite\b|\ballergic\b|\bvegan\b|\bvegetarian\b|"
    r"我(?:很|也|还|最|不太|不)?(?:喜欢|爱|讨厌|偏好|想要|需要)|最喜欢|不喜欢|过敏|吃素|偏爱",
    _FLAGS,
)
_PERSONAL = bilingual(
    r"my\s+name|i'?m\s+called|call\s+me|i\s+(?:live|work|study)|i'?m\s+(?:from|based\s+in|a|an)\s|(?:my|our|"
    r"the\s+user'?s)\s+(?:wife|husband|partner|son|daughter|kids?|children|mother|mom|father|dad|sister|brother|"
    r"family|boss|manager|phone|email|address|birthday|job|company|team|dog|cat)|(?:user|the\s+user)\s+(?:lives|works|"
    r"is\s+called|is\s+from)",
    r"我叫|我的名字|我住在|我在.{1,10}(?:工作|上班|上学)|我是|我的(?:妻子|老婆|丈夫|老公|孩子|儿子|女儿|妈妈|爸爸|"
    r"电话|邮箱|地址|生日|工作|公司)",
)
_SPECIFICS = re.compile(
    r"\d|[$€£¥₩]|\b(?:dollars?|euros?|pounds?|yuan|usd|eur|rmb|percent)\b|[元块万亿]钱?|"
    # a run of numerals is tried from its first one only, never given back: it was retried from each (quadratic)
    r"(?<![一二三四五六七八九十百千两])[一二三四五六七八九十百千两]++[元块点号月日岁]",
    _FLAGS,
)
_SMALL_TALK = bilingual(
    r"how\s+are\s+you|how'?s\s+it\s+going|what'?s\s+up|nice\s+to\s+(?:meet|see|hear)|good\s+to\s+(?:see|hear)|"
    r"long\s+time\s+no\s+see|have\s+a\s+(?:nice|good|great)\s+(?:day|one|weekend)|haha|lol|"
    r"that'?s\s+(?:so\s+)?(?:great|cool|awesome|funny|nice|amazing|wonderful)|sounds\s+(?:great|fun|good|awesome)|"
    r"thanks?|thank\s+you|hello|hey|hi",
    r"你好吗|最近怎么样|哈哈|呵呵|谢谢|不客气|好久不见|吃了吗",
)


# For each rule, words one of which its every match contains (lowercase): a text without any of them is not
# scanned by the rule. `None`: always scanned (a digit or a currency sign is a single character anyway).
_NEEDLES: dict[str, tuple[str, ...] | None] = {
    "deadline": (
        *("deadline", "due", "expir", "appointment", "meeting", "interview", "flight", "exam", "submit", "by"),
        *("before", "until", "截止", "到期", "期限", "前", "预约", "会议", "开会", "面试", "考试", "航班"),
    ),
    "preference": (
        *("prefer", "like", "love", "hate", "enjoy", "stand", "want", "need", "favo", "allergic", "vegan"),
        *("vegetarian", "喜欢", "爱", "讨厌", "偏好", "想要", "需要", "过敏", "吃素", "偏爱"),
    ),
    "personal": ("name", "call", "live", "work", "study", "im", "i'm", "my", "our", "user", "我"),
    "specifics": None,
    "explicit": (
        *("remember", "forget", "important", "crucial", "critical", "make", "keep", "note", "记", "别忘"),
        *("不要忘", "重要", "务必", "千万", "一定要", "切记"),
    ),
    "small_talk": (
        *("how", "what", "nice", "good", "long", "have", "haha", "lol", "that", "sound", "thank", "hello", "hey"),
        *("hi", "你好吗", "最近怎么样", "哈哈", "呵呵", "谢谢", "不客气", "好久不见", "吃了吗"),
    ),
}


def _may_match(rule: str, lowered: str) -> bool:
    needles = _NEEDLES[rule]
    return needles is None or any(needle in lowered for needle in needles)


def _words_left(text: str) -> float:
    """Informative words in `text`, counting two Chinese characters as one word."""
    words = content_words(text)
    return sum(0.5 if has_cjk(w) else 1.0 for w in words)


@dataclass(frozen=True, slots=True)
class ImportanceVerdict:
    value: float
    rules: tuple[str, ...]


def rate(content: str, *, time_bound: bool = False, budget: CpuBudget | None = None) -> ImportanceVerdict:
    """The rule-based importance of `content` (0..1) and the names of the rules that fired. Linear in the text;
    with a `budget`, raises `BudgetExhausted` between rules when it runs out."""
    rules: list[str] = []
    value = BASE
    # what `re.IGNORECASE` matches, in lowercase ("ı" and "ſ" match "i" and "s" too)
    lowered = content.lower().replace("ı", "i").replace("ſ", "s")
    for name, pattern, boost in (
        ("deadline", _DEADLINE, 0.15),
        ("preference", _PREFERENCE, 0.15),
        ("personal", _PERSONAL, 0.1),
        ("specifics", _SPECIFICS, 0.1),
    ):
        check(budget)
        if _may_match(name, lowered) and pattern.search(content):
            rules.append(name)
            value += boost
    if time_bound:
        rules.append("time_bound")
        value += 0.05
    check(budget)
    if _may_match("explicit", lowered) and _EXPLICIT.search(content):
        rules.append("explicit")
        value = max(value, EXPLICIT_FLOOR)
    check(budget)
    small_talk = not rules and _may_match("small_talk", lowered) and _SMALL_TALK.search(content) is not None
    if small_talk and _words_left(_SMALL_TALK.sub(" ", content)) <= 2:
        rules.append("small_talk")
        value = SMALL_TALK
    return ImportanceVerdict(round(min(1.0, max(0.0, value)), 4), tuple(rules))

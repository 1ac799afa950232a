"""The generalised statement of a cluster, without an LLM: a rule per common shape, in English and Chinese, with
its evidence (how many memories say it, over which months).

Shapes, tried in order (the first that fits writes the statement):

- answer style: the cluster is about the length of the assistant's answers -> "The user prefers short, concise
  answers";
- pets: a pet word and a shared name -> "The user has a dog named Pepper, mentioned with beagle, walk and vet";
- tools: software the user builds or runs -> "The user works with FastAPI, Python 3.11 and uvicorn";
- likes and dislikes: most members say they like (or dislike) something -> "The user enjoys painting and piano";
- habits: most members say it happens regularly -> "The user has a regular habit involving espresso and morning";
- places: a shared place name with a travel or home cue -> "The user mentions Lisbon: moved, apartment";
- otherwise the topics most of the cluster shares, named: "The user often talks about yoga and classes" (specific,
  never a generic "the user often says", never a quote that would only repeat one episode); a cluster without
  such topics writes nothing.

Each statement ends with its evidence: "(3 mentions, Jan-Mar 2026)", "（3 次提及，2026年1月至3月）".
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from memory.consolidation.domains import DOMAIN_PREFIX
from memory.consolidation.topics import Topics, domain_term, own_lines
from memory.text.patterns import bilingual
from memory.text.words import has_cjk, split_speaker

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_PETS_EN = {"dog", "cat", "puppy", "kitten", "parrot", "hamster", "rabbit", "bunny", "horse", "turtle", "pet"}
_PETS_ZH = {"狗": "狗", "猫": "猫", "犬": "狗", "鹦鹉": "鹦鹉", "仓鼠": "仓鼠", "兔": "兔子", "宠物": "宠物"}
_LIKE = bilingual(
    r"like[sd]?|lov(?:e|es|ed|ing)|enjoy(?:s|ed|ing)?|prefer(?:s|red)?|fond of|fan of|into|passion|hobby|hobbies|"
    r"favou?rite",
    r"喜欢|爱好|热爱|喜爱|享受|迷上|偏好|最爱|兴趣",
)
_DISLIKE = bilingual(
    r"dislike[sd]?|hate[sd]?|can't stand|annoy(?:s|ed|ing)?|don't like|doesn't like",
    r"不喜欢|讨厌|反感|受不了",
)
_TOOL = bilingual(
    r"build(?:s|ing)?|built|deploy(?:s|ed|ing)?|runs? on|running on|uses?|using|written in|develop(?:s|ing)?|"
    r"code[sd]?|coding|framework|library|server|service|app|api|stack",
    r"开发|部署|运行|使用|框架|服务|代码",
)
_PLACE = bilingual(
    r"live[sd]?|living|moved|move|moving|trip|travel(?:s|led|ling)?|visit(?:s|ed|ing)?|city|town|country|flew|flight",
    r"住在|搬到|旅行|旅游|去了|城市",
)
_HABIT = bilingual(
    r"every (?:morning|day|night|evening|week|weekend|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|daily|"
    r"weekly|usually|regularly|always|each (?:morning|day|week)|routine|habit",
    r"每天|每周|每晚|每早|经常|总是|习惯|常常",
)
_TECH = {"python", "javascript", "java", "rust", "go", "typescript", "sql", "docker", "kubernetes", "linux"}


@dataclass(frozen=True, slots=True)
class Member:
    """What a statement rule reads of one source memory."""

    content: str
    at: datetime
    topics: Topics
    speaker: str | None = None


def chinese(members: Sequence[Member]) -> bool:
    return sum(1 for m in members if has_cjk(m.content)) * 2 > len(members)


# How a span of months is written (one month, months of one year, months of two years), in English and Chinese:
# {a} and {b} are the first and last month's names, {m} and {n} their numbers, {y} and {z} their years.
_SPANS = {
    False: ("{a} {y}", "{a}-{b} {y}", "{a} {y}-{b} {z}"),
    True: ("{y}年{m}月", "{y}年{m}月至{n}月", "{y}年{m}月至{z}年{n}月"),
}


def evidence(members: Sequence[Member], zh: bool) -> str:
    """ "(3 mentions, Jan-Mar 2026)" / "（3 次提及，2026年1月至3月）"."""
    first, last = min(m.at for m in members), max(m.at for m in members)
    n = len(members)
    shape = 0 if (first.year, first.month) == (last.year, last.month) else 1 if first.year == last.year else 2
    span = _SPANS[zh][shape].format(
        a=_MONTHS[first.month - 1], b=_MONTHS[last.month - 1], m=first.month, n=last.month, y=first.year, z=last.year
    )
    return f"（{n} 次提及，{span}）" if zh else f"({n} mention{'' if n == 1 else 's'}, {span})"


def _listing(words: Sequence[str], zh: bool) -> str:
    if zh:
        return "、".join(words)
    if len(words) <= 1:
        return "".join(words)
    return ", ".join(words[:-1]) + " and " + words[-1]


def _shared(members: Sequence[Member], surface: dict[str, str], skip: set[str], limit: int = 4) -> list[str]:
    """The terms at least two members share (most shared first), as written, joining a version to its tool."""
    counts: Counter[str] = Counter(t for m in members for t in m.topics.terms if t not in skip)
    terms = [t for t, c in counts.most_common() if c >= 2][:limit]
    shown: list[str] = []
    text = " ".join(m.content for m in members)
    for term in terms:
        word = surface.get(term, term)
        version = re.search(re.escape(word) + r"\s+(\d+(?:\.\d+)+)", text, re.IGNORECASE)
        shown.append(f"{word} {version.group(1)}" if version else word)
    return shown


def _versions(members: Sequence[Member], surface: dict[str, str], limit: int = 4) -> list[str]:
    """Tools and languages named in the cluster (with their versions), most mentioned first."""
    counts: Counter[str] = Counter(t for m in members for t in m.topics.terms)
    text = " ".join(m.content for m in members)
    named: list[str] = []
    for term, _ in counts.most_common():
        word = surface.get(term, term)
        written = re.search(r"(?<![\w.])" + re.escape(word) + r"(?![\w])(\s+\d+(?:\.\d+)+)?", text, re.IGNORECASE)
        if written is None or not (term in _TECH or word[:1].isupper() or any(c.isdigit() for c in word)):
            continue
        if re.fullmatch(r"\d+(?:\.\d+)+", word):
            continue  # a version, shown beside its tool
        named.append(written.group(0).strip() if written.group(1) else word)
    return named[:limit]


QUESTION = re.compile(r"[?？]|吗|呢")


def statements_of(member: Member) -> list[str]:
    """The sentences the person said in a memory, without questions (to the companion or anyone)."""
    found: list[str] = []
    for line in own_lines(member.content):
        for sentence in re.split(r"(?<=[.!?。！？])\s*", split_speaker(line)[1]):
            if sentence.strip() and not QUESTION.search(sentence):
                found.append(sentence.strip())
    return found


def _majority(members: Sequence[Member], pattern: re.Pattern[str]) -> bool:
    said = sum(1 for m in members if any(pattern.search(s) for s in statements_of(m)))
    return said * 2 > len(members)


def _verb(who: str, one: str, two: str) -> str:
    return two if " and " in who else one


def _person(members: Sequence[Member], zh: bool) -> str:
    """Who the statements are about: the speaker (or both speakers of a dialogue), else the user."""
    speakers = sorted({m.speaker or split_speaker(m.content)[0] or "" for m in members})
    if "" in speakers or len(speakers) > 2 or any(s.casefold() in {"user", "用户", "assistant"} for s in speakers):
        return "用户" if zh else "The user"
    names = [s if zh else s[:1].upper() + s[1:] for s in speakers]
    return ("和" if zh else " and ").join(names)


def statement(members: Sequence[Member], core: Sequence[str], surface: dict[str, str]) -> str | None:
    """The generalised statement of a cluster with its evidence, or None when no rule can say it specifically."""
    zh = chinese(members)
    who = _person(members, zh)
    said = evidence(members, zh)
    core_set = set(core)
    if "brevity" in core_set or ("answer" in core_set and any("brevity" in m.topics.terms for m in members)):
        if zh:
            return f"{who}偏好简短、直接的回答，不要铺垫：回答时请简明扼要{said}"
        return f"{who} {_verb(who, 'prefers', 'prefer')} short, concise answers without preamble: answer briefly {said}"
    names = [surface.get(t, t) for t in core if surface.get(t, t)[:1].isupper() and not has_cjk(surface.get(t, t))]
    pets_en = [t for t in _PETS_EN if any(t in m.topics.terms for m in members)]
    pets_zh = [z for c, z in _PETS_ZH.items() if any(c in m.content for m in members)]
    pet = (pets_zh[0] if zh and pets_zh else None) if zh else (pets_en[0] if pets_en else None)
    if pet and names:
        details = _shared(members, surface, skip={t.lower() for t in names} | set(_PETS_EN), limit=3)
        details = (
            details
            or sorted({surface.get(t, t) for m in members for t in m.topics.terms} - set(names) - set(_PETS_EN))[:3]
        )
        if zh:
            extra = f"，常提到{_listing(details, zh)}" if details else ""
            return f"{who}养了一只{pet}，名叫{names[0]}{extra}{said}"
        extra = f", mentioned with {_listing(details, zh)}" if details else ""
        return f"{who} {_verb(who, 'has', 'have')} a {pet} named {names[0]}{extra} {said}"
    if _majority(members, _TOOL):
        tools = _versions(members, surface)
        if len(tools) >= 2:
            return (
                f"{who}使用{_listing(tools, zh)}{said}"
                if zh
                else f"{who} {_verb(who, 'works', 'work')} with {_listing(tools, zh)} {said}"
            )
    topics = _shared(members, surface, skip={"answer"})
    if topics and _majority(members, _DISLIKE):
        return (
            f"{who}不喜欢{_listing(topics, zh)}{said}"
            if zh
            else f"{who} {_verb(who, 'dislikes', 'dislike')} {_listing(topics, zh)} {said}"
        )
    if topics and _majority(members, _LIKE):
        return (
            f"{who}喜欢{_listing(topics, zh)}{said}"
            if zh
            else f"{who} {_verb(who, 'enjoys', 'enjoy')} {_listing(topics, zh)} {said}"
        )
    if topics and _majority(members, _HABIT):
        if zh:
            return f"{who}有固定的习惯：{_listing(topics, zh)}{said}"
        return f"{who} {_verb(who, 'has', 'have')} a regular habit involving {_listing(topics, zh)} {said}"
    places = [n for n in names if n.lower() not in _TECH]
    if places and _majority(members, _PLACE):
        rest = [t for t in topics if t not in places][:3]
        if zh:
            return f"{who}多次提到{places[0]}：{_listing(rest, zh)}{said}"
        about = f": {_listing(rest, zh)}" if rest else ""
        return f"{who} {_verb(who, 'keeps', 'keep')} mentioning {places[0]}{about} {said}"
    return _recurring(members, who, core, surface, said, zh)


RECURRING_TERMS = 1  # a recurring topic is named by at least this many words most of its cluster shares


def _recurring(
    members: Sequence[Member], who: str, core: Sequence[str], surface: dict[str, str], said: str, zh: bool
) -> str | None:
    """No shape fits: the topics most of the cluster shares, named ("The user often talks about yoga and
    classes"), never a quote of one memory (it would only repeat that episode); a cluster without a shared topic
    writes nothing. A shared domain is named with the words that put each member in it ("The user often talks
    about swimming: goggles, freestyle and laps")."""
    named = [surface.get(t, t) for t in core if t not in {"answer", "brevity"}][:3]
    if len(named) < RECURRING_TERMS:
        return None
    domain = next((t for t in core if t.startswith(DOMAIN_PREFIX)), None)
    details = _domain_words(members, domain, surface) if domain else []
    if zh:
        return f"{who}经常谈到{_listing(named, zh)}{'：' + _listing(details, zh) if details else ''}{said}"
    about = f": {_listing(details, zh)}" if details else ""
    return f"{who} often {_verb(who, 'talks', 'talk')} about {_listing(named, zh)}{about} {said}"


def _domain_words(members: Sequence[Member], domain: str, surface: dict[str, str], limit: int = 4) -> list[str]:
    """The words of the members that put them in `domain`, as written, one per member first."""
    shown: list[str] = []
    for member in members:
        for term in sorted(member.topics.terms):
            word = surface.get(term, term)
            if word not in shown and domain_term(term) == domain:
                shown.append(word)
                break
    return shown[:limit]

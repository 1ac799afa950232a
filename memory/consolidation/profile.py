"""What a person says they enjoy, gathered over many memories into one statement: "Emily enjoys painting, piano,
tea tasting and hiking (5 mentions, Apr-May 2023)".

A person often names a hobby once ("I really enjoy painting, playing piano and tea tasting"), so topic clusters
(which need several memories about one thing) miss most of them. This is the preferences shape gathered by the
person instead of by topic: the objects of their own explicit statements of liking ("I love X", "I enjoy X", "my
hobby is X", "I went hiking", "我喜欢X", "我的爱好是X", "我对X很感兴趣"), and of "<name>/the user likes X". Only lines
the person said count (a companion's "AI: ..." reply never does); objects are kept only if they carry a topic term;
a profile needs `min_mentions` such statements, or one self-description naming `SELF_DESCRIPTION` liked things
("I enjoy classical music, art films and tea"), so a single remark never becomes one.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from memory.consolidation.statements import Member, evidence
from memory.consolidation.topics import own_lines, topics_of
from memory.text.words import has_cjk, split_speaker

_ADVERBS = r"(?:'ve|'m|\s+(?:\w+ly|also|quite|just|do|still|always|even|too|have|am|especially|particularly))*"
_EN_LIKE = re.compile(
    r"\bI" + _ADVERBS + r"\s+(?:like[sd]?|love[sd]?|enjoy(?:ed)?|adore[sd]?|into|a fan of|passionate about|fond of)\s+"
    r"(?P<object>[^.!?;\n]{3,90})",
)
_EN_THIRD = re.compile(
    r"\b(?:[Tt]he user|[A-Z][a-z]+)\s+(?:really\s+|also\s+)?(?:likes|loves|enjoys|adores)\s+(?P<object>[^.!?;\n]{3,90})"
)
_EN_HOBBY = re.compile(
    r"\b(?:my (?:hobby|hobbies|passion|favou?rite (?:activity|activities|pastime|hobby))(?: is| are| include)|"
    r"I(?:'m| am) (?:really )?interested in)\s+(?P<object>[^.!?;\n]{3,90})",
    re.IGNORECASE,
)
# what the person does: "I went hiking", "I've been collecting tea", "I also practice yoga, writing and travel"
_EN_ACTIVITY = re.compile(
    r"\bI" + _ADVERBS + r"\s+(?:go|went|do|did|took up|take up|started|tried|been)\s+"
    r"(?P<object>[a-z]+ing\b(?:\s+(?!and\b|or\b|to\b|with\b|for\b|at\b|in\b|on\b)[a-z]+){0,2}"
    r"(?:\s+(?:and|or)\s+[a-z]+ing\b)*)"
    r"|\bI" + _ADVERBS + r"\s+(?:practi[cs]e|play)\s+(?P<object2>[^.!?;\n]{3,60})"
)
_EN_LEARN = re.compile(
    r"\bI" + _ADVERBS + r"\s+(?:learned|learning|learn|started learning|began learning)\s+(?:some |to |how to )?"
    r"(?P<object>[a-z]+(?: [a-z]+)?)"
)
_ZH_LIKE = re.compile(
    r"(?:我|(?<=[，,])(?=也|还))(?:也|很|特别|非常|真的|一直|还|最|比较|挺|尤其|平时)*(?:喜欢|爱好是|热爱|喜爱|爱上了|迷上了|享受)"
    r"(?P<object>[^，。！？,.!?；;\n]{1,24})|我的(?:爱好|兴趣爱好|兴趣)(?:是|有|包括)(?P<object2>[^。！？.!?；;\n]{1,40})|"
    r"我对(?P<object3>[^，。！？,.!?；;\n]{1,16})(?:很|特别|非常|比较)?感兴趣|"
    r"我(?:最近|也|还|平时|经常|常常|一直|每周|周末)*在?(?:学习|练习|学会了|开始学习|开始学|在学|收藏|练)"
    r"(?P<object4>[^，。！？,.!?；;\n]{1,12})"
)
# "我会听古典音乐、阅读、旅行和做饭来放松", "我还会瑜伽，写作，旅游和摄影": what the person does, when it is a list
_ZH_DOES = re.compile(r"我(?:也|还|平时|经常|常常)*会(?P<object>[^。！？.!?；;\n]{4,40})")
_LIST_OF = 3
# a clause that goes on listing what was liked: "我喜欢户外活动，像滑板、攀岩", "outdoor sports, such as climbing"
_MORE = re.compile(
    r"^\s*(?:像|比如|例如|包括|尤其是|特别是|such as|like|including|especially)\s*(?P<more>[^，。！？,.!?；;\n]{1,40})"
)
_SPLIT = re.compile(r",|，|、|\band\b|\bor\b|和|以及|还有|或者|跟|与|等等|等")
_LEAD = re.compile(
    r"^(?:to |the |a |an |my |some |doing |going |playing |watching |listening to |such as |including |especially "
    r"|like |去|看|听|玩|一些|各种|新的)+"
)
_TAIL = re.compile(r"\b(?:very much|so much|a lot|too|as well|with you|these days|now)\b.*$")
_ASKED = re.compile(r"你|您|吗|呢|\byou\b", re.IGNORECASE)  # a question to the companion says nothing of the person


SELF_DESCRIPTION = 3  # one statement naming this many liked things is a profile too ("I enjoy A, B and C")


@dataclass(frozen=True, slots=True)
class Profile:
    members: list[int]  # indices of the memories that state a liking
    statement: str


def _objects(line: str) -> list[str]:
    found: list[str] = []
    for pattern in (_EN_LIKE, _EN_THIRD, _EN_HOBBY, _EN_ACTIVITY, _EN_LEARN, _ZH_LIKE):
        for match in pattern.finditer(line):
            text = next(g for g in match.groups() if g)
            rest = line[match.end() :]
            while rest[:1] in ",，" and (more := _MORE.match(rest[1:])) is not None:
                text += "、" + more.group("more")
                rest = rest[1 + more.end() :]
            for part in _SPLIT.split(text):
                item = _LEAD.sub("", _TAIL.sub("", part.strip().lower())).strip(" 的了")
                if len(item.split()) > 4:
                    break  # a clause, not a list item: what follows is not a list of likes either
                if item and not _ASKED.search(item):
                    found.append(item)
    for match in _ZH_DOES.finditer(line):
        items = [_LEAD.sub("", p.strip()).strip(" 的了") for p in _SPLIT.split(match.group("object"))]
        items = [i.removesuffix("来放松") for i in items if i and len(i) <= 8 and not _ASKED.search(i)]
        if len(items) >= _LIST_OF:
            found += items
    return found


_VAGUE = re.compile(
    r"^(?:that|it|both|this|these|those|how|what|when|which|who|where|why|there|ton|lots?|all|everything)\b|"
    r"^(?:thinking|feeling|considering|wanting|spending|having|being|getting|making|facing|trying|doing|going)\b|\bbut\b|"
    r"^(?:这种|那种|一种|是|一门|如何|让|怎么|什么)|[很时的]$"
)


def _phrase(obj: str) -> str | None:
    """The object shortened to its first words (English: four, Chinese: eight characters), if it names a topic
    and is not vague ("thinking about work", "这种气质")."""
    if not topics_of(obj).terms or _VAGUE.search(obj):
        return None
    if has_cjk(obj):
        return obj[:8]
    words = obj.split()
    while words and not topics_of(words[-1]).terms:  # "art style of the" -> "art style"
        words.pop()
    return " ".join(words) or None


def profiles(members: Sequence[Member], min_mentions: int = 2, limit: int = 8) -> list[Profile]:
    """One profile per speaker of `members` (a dialogue between two people gives two), most mentions first."""
    by_speaker: dict[str | None, list[int]] = {}
    for index, member in enumerate(members):
        by_speaker.setdefault(member.speaker.casefold() if member.speaker else None, []).append(index)
    found: list[Profile] = []
    for indices in by_speaker.values():
        mine = profile([members[i] for i in indices], min_mentions, limit)
        if mine is not None:
            found.append(Profile([indices[i] for i in mine.members], mine.statement))
    return sorted(found, key=lambda p: -len(p.members))


def profile(members: Sequence[Member], min_mentions: int = 2, limit: int = 8) -> Profile | None:
    """One person's likes over `members` (whether or not they also belong to a topic cluster), or None."""
    phrases: Counter[str] = Counter()
    first_seen: dict[str, int] = {}
    keys: dict[frozenset[str], str] = {}
    sources: list[int] = []
    speakers: Counter[str] = Counter()
    for index, member in enumerate(members):
        said = False
        for line in own_lines(member.content):
            for obj in _objects(split_speaker(line)[1]):
                phrase = _phrase(obj)
                if phrase is None:
                    continue
                key = frozenset(topics_of(phrase).terms)
                phrase = keys.setdefault(key, phrase)  # one wording per set of topic terms
                phrases[phrase] += 1
                first_seen.setdefault(phrase, index)
                said = True
        if said:
            sources.append(index)
            if member.speaker:
                speakers[member.speaker] += 1
    if len(sources) < min_mentions and len(phrases) < SELF_DESCRIPTION:
        return None
    chosen = sorted(phrases, key=lambda p: (-phrases[p], first_seen[p]))[:limit]
    group = [members[i] for i in sources]
    zh = sum(1 for m in group if has_cjk(m.content)) * 2 > len(group)
    name = speakers.most_common(1)[0][0] if len(speakers) == 1 else None
    if zh:
        who = name or "用户"
        return Profile(sources, f"{who}喜欢{'、'.join(chosen)}{evidence(group, zh)}")
    who = (name[:1].upper() + name[1:]) if name else "The user"
    listed = ", ".join(chosen[:-1]) + " and " + chosen[-1] if len(chosen) > 1 else chosen[0]
    return Profile(sources, f"{who} enjoys {listed} {evidence(group, zh)}")

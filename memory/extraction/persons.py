"""Who "I" and "you" are, written out, so a statement stands on its own: in a user's message the first person
becomes the speaker's name, or "the user"; in an assistant's message it becomes "the assistant", and the second
person becomes the user (by name when the caller knows it). English and Chinese, grammar kept.

English, first person: "I am" / "I'm" -> "The user is", "I have" / "I've" -> "has", "I was" -> "was", "I don't"
-> "doesn't", "I'll" -> "will", "I'd" -> "would" (or "had" before a participle: "I'd been"), a verb in the simple
present gets its -s after any adverbs ("I really like" -> "really likes", "I go" -> "goes", "I study" ->
"studies"; a small table covers "have", "do", "wanna", "gotta"), a past or modal verb stays ("I went", "I can");
"me" -> the name, "my" / "mine" -> "the user's", "myself" -> "themself". "We" / "us" -> "the user and others",
"our" -> "the user's" (an assistant's "we": "the assistant and the user"). Second person (assistant messages only:
in a user's message "you" may be the assistant or another person, and stays): "you" -> "the user", "your" /
"yours" -> "the user's", "you are" / "you're" -> "the user is", and a present verb after a "you" that opens a
clause gets its -s. A replacement that opens the sentence is capitalised ("The user's").

Chinese: "我" -> the name or "用户" ("我的" -> "用户的"; "自我" stays); "我们" / "咱们" -> "用户等人" (the user and
others: in a user's message it can be the user's family or team as well as the user and the assistant), but
before a group noun ("我们家", "我们公司") -> "用户的家", "用户的公司". In an assistant's message "我" -> "助手",
"我们" -> "助手和用户", "你" / "您" -> "用户" ("迷你" stays), "你们" -> "用户等人".

Linear: one pass over the words (English) or the characters (Chinese), each looking at most a few words ahead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


Role = Literal["user", "assistant"]

_WORD = re.compile(r"[A-Za-z]++(?:'[A-Za-z]++)?")
_ADVERBS = _words(
    "also really just always usually never often sometimes still actually totally definitely even only recently "
    "finally already absolutely kinda sorta mostly truly rarely seldom personally generally normally typically "
    "probably certainly honestly literally seriously currently now too sure def"
)
_KEEP = _words(
    "can could will would shall should may might must did didn't can't couldn't won't wouldn't shouldn't had "
    "hadn't used ought was wasn't mustn't put cut set let hit quit read bet cost hurt shut spread gonna "
    "and or but not to a an the of in on at for with"
)
_IRREGULAR_PAST = _words(
    "went saw got made took came bought ate drank thought felt found gave told said knew left met ran began "
    "brought built caught chose drove fell flew forgot grew heard held kept lost meant paid sat sent slept spent "
    "spoke stood swam taught understood woke won wore wrote became broke did had was were sang sold lent lay led "
    "fought fed dug drew rode rose shook stole stuck struck swung threw tore"
)
_PRESENT_TABLE = {"have": "has", "do": "does", "don't": "doesn't", "haven't": "hasn't", "be": "is", "wanna": "wants to"}
_PRESENT_TABLE |= {"gotta": "has got to", "am": "is", "ain't": "isn't", "'m": "is"}
_YOU_TABLE = {"are": "is", "were": "was", "aren't": "isn't", "weren't": "wasn't", "have": "has", "haven't": "hasn't"}
_YOU_TABLE |= {"do": "does", "don't": "doesn't", "wanna": "wants to", "gotta": "has got to"}
_PARTICIPLES = _words("been gone done seen had got taken made known never already just")
_CLAUSE_OPENERS = _words(
    "and but so because if when that then since as while once unless until or where whether though "
    "said mentioned told noted explained think thought know knew guess hope believe"
)
_NOT_VERBS = _words("guys all both two three alone too")
_GROUP_NOUNS = ("家", "公司", "学校", "班", "团队", "部门", "小组", "国家", "城市", "小区", "单位", "宿舍", "村", "店")


@dataclass(frozen=True, slots=True)
class Voice:
    """Who speaks (`role`, `speaker`) and, for an assistant, to whom (`addressee`, the user's name if known)."""

    role: Role
    speaker: str | None = None
    addressee: str | None = None

    @property
    def subject(self) -> str:
        return self.speaker or ("the user" if self.role == "user" else "the assistant")

    @property
    def subject_zh(self) -> str:
        return self.speaker or ("用户" if self.role == "user" else "助手")

    @property
    def user(self) -> str:
        return self.addressee or "the user"

    @property
    def user_zh(self) -> str:
        return self.addressee or "用户"


def possessive(name: str) -> str:
    return f"{name}'s"


def third_person(verb: str) -> str:
    """The simple-present third person of a verb in its base form: like -> likes, go -> goes, study -> studies."""
    if verb in _PRESENT_TABLE:
        return _PRESENT_TABLE[verb]
    if verb.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if verb.endswith("y") and len(verb) > 1 and verb[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def _conjugated(word: str, table: dict[str, str]) -> str | None:
    """The verb `word` after a singular third-person subject, or None when it stays as it is."""
    low = word.lower()
    if low in table:
        return table[low]
    if (
        low in _KEEP
        or low in _IRREGULAR_PAST
        or low.endswith("ed")
        or not low.isalpha()
        or not word.islower()
        or low in _NOT_VERBS
    ):
        return None
    return third_person(low)


def _opens_sentence(text: str, start: int) -> bool:
    """Whether only spaces and opening quotes stand between `start` and the start of a sentence."""
    index = start - 1
    while index >= 0 and text[index] in " \t\"“'(（「『":
        index -= 1
    return index < 0 or text[index] in ".!?。！？"


def _capitalised(text: str) -> str:
    return text[:1].upper() + text[1:]


class _English:
    def __init__(self, text: str, voice: Voice) -> None:
        self.text = text
        self.voice = voice
        self.words = list(_WORD.finditer(text))

    def _adjacent(self, index: int) -> bool:
        """Whether word `index` follows word `index - 1` after nothing but spaces."""
        before, after = self.words[index - 1], self.words[index]
        return self.text[before.end() : after.start()].isspace()

    def _with_verb(self, index: int, subject: str, table: dict[str, str]) -> tuple[str, int]:
        """`subject` standing for word `index`, with the verb after it (past any adverbs) agreeing; and how many
        words that replaced."""
        verb = index + 1
        while verb < len(self.words) and verb - index <= 3 and self._adjacent(verb):
            word = self.words[verb].group(0).lower()
            if word in _ADVERBS or (word.endswith("ly") and len(word) > 4):
                verb += 1
                continue
            conjugated = _conjugated(self.words[verb].group(0), table)
            if conjugated is None:
                break
            middle = self.text[self.words[index].end() : self.words[verb].start()]
            return subject + middle + conjugated, verb - index + 1
        return subject, 1

    def _subject_position(self, index: int) -> bool:
        if index == 0:
            return True
        between = self.text[self.words[index - 1].end() : self.words[index].start()]
        return any(c in ",;:.!?—–-" for c in between) or self.words[index - 1].group(0).lower() in _CLAUSE_OPENERS

    def _replacement(self, index: int) -> tuple[str, int] | None:
        word = self.words[index].group(0)
        low = word.lower()
        voice, me = self.voice, self.voice.subject
        follows = self.words[index + 1].group(0).lower() if index + 1 < len(self.words) else ""
        if low == "i" and word in ("I", "i"):
            return self._with_verb(index, me, _PRESENT_TABLE)
        first = {"i'm": f"{me} is", "i've": f"{me} has", "i'll": f"{me} will", "me": me, "my": possessive(me)}
        first |= {"mine": possessive(me), "myself": "itself" if voice.role == "assistant" else "themself"}
        first["i'd"] = f"{me} had" if follows in _PARTICIPLES or follows.endswith("ed") else f"{me} would"
        if low in first:
            return first[low], 1
        group = f"{me} and others" if voice.role == "user" else f"{me} and {voice.user}"
        plural = {"we": group, "us": group, "we're": f"{group} are", "we've": f"{group} have"}
        plural |= {"we'll": f"{group} will", "we'd": f"{group} would", "our": possessive(me), "ours": possessive(me)}
        plural["ourselves"] = "themselves"
        if low in plural and word != "US":
            return plural[low], 1
        if voice.role != "assistant":
            return None
        you = voice.user
        second = {"your": possessive(you), "yours": possessive(you), "yourself": "themself"}
        second |= {"you're": f"{you} is", "you've": f"{you} has", "you'll": f"{you} will", "you'd": f"{you} would"}
        second |= {"yourselves": "themselves"}
        if low in second:
            return second[low], 1
        if low == "you":
            if follows in _YOU_TABLE or self._subject_position(index):
                return self._with_verb(index, you, _YOU_TABLE if follows in _YOU_TABLE else _PRESENT_TABLE)
            return you, 1
        return None

    def resolved(self) -> str:
        pieces: list[str] = []
        cursor = index = 0
        while index < len(self.words):
            match = self.words[index]
            if self.text[match.end() : match.end() + 1] == "-" or self.text[match.start() - 1 : match.start()] == "-":
                index += 1  # "me-time"
                continue
            found = self._replacement(index)
            if found is None:
                index += 1
                continue
            replacement, taken = found
            pieces.append(self.text[cursor : match.start()])
            pieces.append(_capitalised(replacement) if _opens_sentence(self.text, match.start()) else replacement)
            cursor = self.words[index + taken - 1].end()
            index += taken
        pieces.append(self.text[cursor:])
        return "".join(pieces)


def _chinese(text: str, voice: Voice) -> str:
    pieces: list[str] = []
    index = 0
    length = len(text)
    while index < length:
        char = text[index]
        if char in "我咱" and text.startswith(("我们", "咱们"), index):
            if voice.role == "assistant":
                pieces.append(f"{voice.subject_zh}和{voice.user_zh}")
            elif text.startswith(_GROUP_NOUNS, index + 2):
                pieces.append(f"{voice.subject_zh}的")
            else:
                pieces.append(f"{voice.subject_zh}等人")
            index += 2
        elif char == "我" and not (index > 0 and text[index - 1] == "自"):
            pieces.append(voice.subject_zh)
            index += 1
        elif voice.role == "assistant" and char in "你您" and not (index > 0 and text[index - 1] == "迷"):
            plural = text.startswith(("你们", "您们"), index)
            pieces.append(f"{voice.user_zh}等人" if plural else voice.user_zh)
            index += 2 if plural else 1
        else:
            pieces.append(char)
            index += 1
    return "".join(pieces)


def resolve(text: str, voice: Voice) -> str:
    """`text` with its first person (and, from an assistant, its second person) written out."""
    text = text.replace("’", "'")
    if "我" in text or "咱" in text or (voice.role == "assistant" and ("你" in text or "您" in text)):
        text = _chinese(text, voice)
    return _English(text, voice).resolved()

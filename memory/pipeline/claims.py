"""What a statement claims about its speaker, for conflict detection (step 4 of the write pipeline).

A `Claim` names an attribute of someone ("user|lives_in", "user|fav:color", "caroline|pref:tea"), the value the
text gives it, and whether the text presents it as a change ("I moved to Paris", "we switched to PostgreSQL",
"现在", "换成"). Only a few sentence shapes count, in English and Chinese, so that a claim is reliable:

- single-valued attributes: "my favourite X is Y", "my <name/phone/email/address/job/...> is Y", "my name is",
  "I live in", "I moved to", "I work at/for", "I am N years old", "我最喜欢的X是Y", "我的<名字/电话/...>是Y",
  "我叫", "我住在", "我搬到", "我在X工作";
- what someone uses: "I/we use Y", "we switched/migrated (the X) to Y", "我们用Y", "我们换成/改用/迁移到Y";
- preferences, with a polarity: "I like/love/enjoy/prefer Y", "I don't like / hate Y", "我喜欢Y", "我不喜欢Y".

First-person claims belong to the speaker of a "Speaker: text" memory (record_turn writes "user: ...") or the
speaker `extract` is given (a write's `metadata.speaker`), else to "user"; "the user ..." belongs to "user". So
one person's "my name is" never conflicts with another's.

Linear in the text: at most `MAX_MATCHES_PER_SHAPE` matches of each shape are examined, and the change markers
are searched once per text (a text repeating "I live in " cost 0.3 s before).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import islice

from memory.text.budget import CpuBudget, check
from memory.text.patterns import bilingual
from memory.text.words import nfkc, split_speaker, stem

SINGLE = "single"  # one value at a time: a new value replaces the old one
USES = "uses"  # several can hold at once: replaced only when the new one says it is a change
PREFERENCE = "preference"  # replaced when the same thing is liked and then disliked (or back)


@dataclass(frozen=True, slots=True)
class Claim:
    attribute: str  # "<owner>|<attribute>", e.g. "user|lives_in"
    value: str
    kind: str
    positive: bool = True
    changed: bool = False
    # said in the first person with no speaker prefix: it belongs to whoever wrote it (conflict.decide puts the
    # writer's subject in place of "user", so two writers' "I live in X" never meet)
    first_person: bool = False
    # what a change names as changed ("billing" in "we migrated billing to PostgreSQL", "账单系统" in
    # "我们把账单系统迁移到了PostgreSQL"): only a memory about it is replaced
    target: str = ""


# a named third person ("Lisa lives in Paris") is that person: capitalised, and not a pronoun or a sentence word
_PERSON = r"(?-i:(?!(?:They|The|People|He|She|It|This|That|There|Then|Now|You|Everyone|Someone)\b)[A-Z][a-z]{1,20})"
_I = rf"(?P<subj>i|we|the user|user|{_PERSON})"
_MY = r"(?P<subj>my|our|the user's|user's)"
_VALUE = r"(?P<val>[^.,;!?()\n]{1,60})"
# a proper name (a place, an employer): capitalised in the text, "the" allowed ("the Netherlands")
_NAME_VALUE = r"(?P<val>(?-i:(?:the\s+)?[A-Z0-9])[^.,;!?()\n]{0,59})"
# attributes a person has one value of at a time, whose value is a name, a number or "a/an/the ..." (so "my job
# is stressful" or "my rent is too high" state nothing); people ("my wife") have many attributes and are left out
_NOUNS = (
    "full name|name|nickname|phone number|mobile number|phone|email address|email|home address|address|"
    "birthday|job title|job|title|role|position|employer|company|age|time zone|timezone|home town|hometown|city|"
    "username|handle|budget|salary|rent|native language|first language|editor|ide|operating system|os|major|"
    "school|university"
)
_SHAPED_VALUE = r"(?P<val>(?-i:[A-Z0-9+]|(?:a|an|the)\s|[^\s@]+@)[^,;!?()\n]{0,59})"
_FLAGS = re.IGNORECASE
_ENGLISH: list[tuple[str, str, re.Pattern[str]]] = [
    (
        SINGLE,
        "fav:{attr}",
        re.compile(
            rf"\b{_MY}\s+(?:all[- ]time\s+)?(?:favou?rite|fav)\s+(?P<attr>[a-z][a-z ]{{1,30}}?)\s+"
            rf"(?:is|are|has\s+become|became)\s+(?:now\s+|still\s+|actually\s+)?{_VALUE}",
            _FLAGS,
        ),
    ),
    (
        SINGLE,
        "{attr}",
        re.compile(
            rf"\b{_MY}\s+(?:new\s+|current\s+)?(?P<attr>{_NOUNS})\s+(?:is|are)\s+(?:now\s+|still\s+|actually\s+)?"
            rf"(?:changed\s+to\s+)?{_SHAPED_VALUE}",
            _FLAGS,
        ),
    ),
    (SINGLE, "name", re.compile(rf"\b(?:(?P<subj>i)(?:'m|\s+am)\s+called|call\s+me)\s+{_NAME_VALUE}", _FLAGS)),
    (
        SINGLE,
        "lives_in",
        re.compile(
            rf"\b{_I}(?:'m|'re|\s+am|\s+are|\s+is)?\s+(?:now\s+|currently\s+|still\s+)?(?:live|lives|living|reside|"
            rf"resides|residing|based)\s+in\s+{_NAME_VALUE}",
            _FLAGS,
        ),
    ),
    (
        SINGLE,
        "lives_in*",
        re.compile(
            rf"\b{_I}(?:'ve|\s+have|\s+has)?\s+(?:just\s+|recently\s+|finally\s+|now\s+)*(?:moved|relocated)\s+"
            rf"(?:to|into)\s+{_NAME_VALUE}",
            _FLAGS,
        ),
    ),
    (
        SINGLE,
        "works_at",
        re.compile(
            rf"\b{_I}(?:'m|'re|\s+am|\s+are|\s+is)?\s+(?:now\s+|currently\s+|still\s+)?(?:work|works|working)\s+"
            rf"(?:at|for)\s+{_NAME_VALUE}",
            _FLAGS,
        ),
    ),
    (SINGLE, "age", re.compile(rf"\b{_I}(?:'m|\s+am|\s+is)\s+(?P<val>\d{{1,3}})\s+years?\s+old", _FLAGS)),
    (
        USES,
        "uses",
        re.compile(
            rf"\b{_I}(?:'m|'re|\s+am|\s+are|\s+is)?\s+(?:now\s+|currently\s+|mainly\s+|mostly\s+|still\s+|also\s+)?"
            rf"(?:use|uses|using|run\s+on|runs\s+on)\s+{_VALUE}",
            _FLAGS,
        ),
    ),
    (
        USES,
        "uses*",
        re.compile(
            rf"\b{_I}(?:'ve|\s+have|\s+has)?\s+(?:just\s+|recently\s+|finally\s+|now\s+)*(?:(?:switched|migrated|"
            rf"upgraded|converted|transitioned|changed)\s+(?P<obj>(?:(?!to\b)[\w'-]+\s+){{0,4}})|moved\s+"
            rf"(?P<obj2>(?:(?!to\b)[\w'-]+\s+){{1,4}}))(?:over\s+)?to\s+{_VALUE}",
            _FLAGS,
        ),
    ),
    (
        PREFERENCE,
        "pref:{value}",
        re.compile(
            rf"\b{_I}\s+(?:really\s+|also\s+|still\s+|now\s+|do\s+|does\s+|absolutely\s+)?(?P<neg>don't\s+|do\s+not\s+|"
            rf"doesn't\s+|does\s+not\s+|no\s+longer\s+|never\s+|can't\s+|cannot\s+)?(?P<verb>like|likes|love|loves|"
            rf"enjoy|enjoys|prefer|prefers|hate|hates|dislike|dislikes|stand)\s+{_VALUE}",
            _FLAGS,
        ),
    ),
]
_ZH_I = r"(?P<subj>我们|我|用户)"
_ZH_VALUE = r"(?P<val>[^，。！？；、,.!?;\s]{1,30})"
_ZH_NOUNS = "名字|电话号码|电话|手机号码|手机号|手机|邮箱|地址|生日|职位|公司|城市|家乡|年龄|专业|学校|预算"
# not a value but a description ("my favourite colour is too hard to pick", "我的公司很大", "我的城市在南方")
_DESCRIPTION = re.compile(
    r"^(?:too|very|so|really|not|in|at|on|still|being|quite|pretty|kind\s+of|hard|difficult)\b|"
    r"^(?:很|太|非常|真|挺|比较|不|有点|在|也|还|都|考虑|思考|想|琢磨|犹豫|纠结|打算|准备|找|换|辞|努力|要不要)",
    _FLAGS,
)
_CHINESE: list[tuple[str, str, re.Pattern[str]]] = [
    (
        SINGLE,
        "fav:{attr}",
        re.compile(
            rf"{_ZH_I}(?:现在|目前)?最喜欢的(?P<attr>[\u4e00-\u9fff]{{1,6}}?)(?:现在|目前|一直)?(?:是|为){_ZH_VALUE}"
        ),
    ),
    (SINGLE, "{attr}", re.compile(rf"{_ZH_I}的(?P<attr>{_ZH_NOUNS})(?:现在|目前)?(?:是|为|叫|改成了?){_ZH_VALUE}")),
    (SINGLE, "name", re.compile(rf"(?P<subj>我)叫{_ZH_VALUE}")),
    (SINGLE, "lives_in", re.compile(rf"{_ZH_I}(?:现在|目前|一直|还)?住在{_ZH_VALUE}")),
    (SINGLE, "lives_in*", re.compile(rf"{_ZH_I}(?:已经|最近|刚刚|刚|现在)?(?:搬到|搬去|搬家到|搬回)了?{_ZH_VALUE}")),
    (
        SINGLE,
        "works_at",
        re.compile(rf"{_ZH_I}(?:现在|目前|一直)?在(?P<val>[^，。！？,.!?\s]{{1,15}}?)(?:工作|上班)"),
    ),
    (USES, "uses", re.compile(rf"{_ZH_I}(?:现在|目前|一直|还|主要)?(?:用|使用|在用){_ZH_VALUE}")),
    (
        USES,
        "uses*",
        re.compile(
            rf"{_ZH_I}(?:已经|最近|刚刚|刚|现在)?(?:把(?P<obj>[^，。！？,.!?\s]{{1,8}}?)|[^，。！？,.!?\s]{{0,8}}?)(?:换成|改成|改用|换到|迁移到|切换到|改为|转到)"
            rf"了?{_ZH_VALUE}"
        ),
    ),
    (
        PREFERENCE,
        "pref:{value}",
        re.compile(
            rf"{_ZH_I}(?P<neg>不再|再也不|不太|没那么|不)?(?:很|也|还|真|非常|最|特别)?(?P<verb>喜欢|爱|讨厌|偏好)(?!的){_ZH_VALUE}"
        ),
    ),
]

STRONG_CHANGE = re.compile(
    r"\b(?:switched|migrated|moved|changed|relocated|transitioned)\s+(?:[\w'-]+\s+){0,4}?(?:over\s+)?to\b|"
    r"\bno\s+longer\b|\b(?:not|no|n't)\b[^.!?]{0,40}\banymore\b|\breplaced\s+(?:[\w'-]+\s+){0,4}?(?:with|by)\b|"
    r"换成|改成|改为|改用|换到|搬到|搬去|不再|已经不|迁移到|切换到|改到|挪到",
    _FLAGS,
)
WEAK_CHANGE = bilingual(r"now|currently|these\s+days|nowadays", r"现在|目前|如今")
_NEGATIVE_VERBS = ("hate", "hates", "dislike", "dislikes", "stand", "讨厌")
# A value is at most 60 characters, but a run of spaces is still tried from its first one only, never given back
# (retried from each space, these patterns were quadratic in the run).
_VALUE_TAIL = re.compile(
    r"(?<!\s)\s++(?:now|anymore|any more|these days|nowadays|too|as well|either|at all|instead|again|actually)$|"
    r"(?:了|啦|呢|吧|啊|现在|了吧)$",
    _FLAGS,
)
_VALUE_CUT = re.compile(
    r"(?<!\s)\s++(?:and|but|because|so|since|when|while|if|though|although|which|who)\s.*$|\.\s.*$|\.$", _FLAGS
)
_PRONOUN_TEXT = "it that this them these those you him her one something anything everything"
_PRONOUNS = frozenset(_PRONOUN_TEXT.split())
_ARTICLE = re.compile(r"^(?:a|an|the|my|our|some)\s+", _FLAGS)
_PREF_CUT = re.compile(r"(?<!\s)\s++(?:with|in|at|on|for|from|by|during|after|before|to|about|of)\s.*$", _FLAGS)
_ZH_PREF_VERB = re.compile(r"^(?:喝|吃|玩|看|听|打|去|做|用|穿)")


_FIRST_PERSON = frozenset(["i", "we", "my", "our", "我", "我们"])


def _owner(subject: str, speaker: str | None) -> str:
    if subject.lower() in ("the user", "user", "the user's", "user's", "用户"):
        return "user"
    if subject.lower() not in _FIRST_PERSON:  # a named person: "Lisa lives in Paris"
        return subject.lower()
    return speaker or "user"


def _clean_value(value: str) -> str:
    value = _VALUE_CUT.sub("", value.strip().lower())
    for _ in range(3):
        value = _VALUE_TAIL.sub("", value).strip()
    return _ARTICLE.sub("", value).strip()


_TARGET_FILLER = bilingual(r"the|a|an|my|our|its|their|over|all|from", r"我们的|我的|从")


def _clean_target(target: str) -> str:
    """What a change is about, without articles and possessives ("our billing" -> "billing")."""
    return " ".join(_TARGET_FILLER.sub(" ", target.lower()).split())


_NOT_A_HEAD = frozenset(
    ["lately", "recently", "together", "too", "much", "lot", "really", "so", "very", "always", "often", "sometimes"]
)


def _preference_key(value: str) -> str | None:
    """The thing a preference is about: the head word of "green tea with milk" is "tea"; "喝咖啡" is "咖啡".
    None for clauses ("how it turned out", "the way ...") and long phrases, which are not one thing."""
    value = _PREF_CUT.sub("", value)
    if re.search(r"[\u4e00-\u9fff]", value):
        return _ZH_PREF_VERB.sub("", value) or None
    words = [w for w in re.findall(r"[\w'-]+", value) if w not in _NOT_A_HEAD]
    if not words or len(words) > 4 or words[0] in _PRONOUNS or words[0] in ("how", "what", "when", "way", "seeing"):
        return None
    return stem(words[-1])


def purpose(value: str) -> str | None:
    """What a used thing is used for: "slack for chat" -> "chat", "slack聊天" -> "聊天" (None if not said)."""
    english = re.search(r"\s(?:for|to|as)\s+(.+)$", value)
    if english:
        return english.group(1)
    chinese = re.match(r"^[a-z0-9 ._+#-]+([\u4e00-\u9fff].*)$", value)
    return chinese.group(1) if chinese else None


# At most this many matches of each shape are examined: the first statement of an attribute wins anyway, and a
# text repeating a shape ("I live in I live in ...") otherwise paid for each repeat.
MAX_MATCHES_PER_SHAPE = 16


def extract(content: str, budget: CpuBudget | None = None, speaker: str | None = None) -> list[Claim]:
    """The claims of `content`, at most one per attribute (the first statement of it wins). `speaker` (normalised)
    says who said a content without a "Name: " prefix (`memory.recall.cues.speaker_of`: the write's `metadata.speaker`);
    its first person is then that speaker's, as in a prefixed turn. Linear in the text; with a `budget`, raises
    `BudgetExhausted` when it runs out."""
    prefixed, body = split_speaker(content)
    speaker = prefixed or speaker
    text = " ".join(nfkc(body).replace("’", "'").split())
    claims: dict[str, Claim] = {}
    strong_change: bool | None = None  # whether the text marks a change: searched once, when first needed
    for kind, template, pattern in (*_ENGLISH, *_CHINESE):
        check(budget)
        for match in islice(pattern.finditer(text), MAX_MATCHES_PER_SHAPE):
            check(budget)
            groups = match.groupdict()
            value = _clean_value(groups.get("val") or "")
            if not value or value in _PRONOUNS or _DESCRIPTION.match(value):
                continue
            positive = True
            name = template.rstrip("*")
            if kind == PREFERENCE:
                key = _preference_key(value)
                if key is None:
                    continue
                name = f"pref:{key}"
                positive = not groups.get("neg") and (groups.get("verb") or "").lower() not in _NEGATIVE_VERBS
            elif "{attr}" in template:
                attr = " ".join(groups["attr"].lower().replace("colour", "color").split())
                name = template.replace("{attr}", attr)
            subject = groups.get("subj") or "i"
            attribute = f"{_owner(subject, speaker)}|{name}"
            if attribute in claims:
                continue
            if strong_change is None:
                strong_change = STRONG_CHANGE.search(text) is not None
            changed = template.endswith("*") or strong_change
            first_person = speaker is None and subject.lower() in _FIRST_PERSON
            target = _clean_target(groups.get("obj") or groups.get("obj2") or "")
            claims[attribute] = Claim(attribute, value, kind, positive, changed, first_person, target)
    return list(claims.values())

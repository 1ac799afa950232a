"""What a statement is about: its topic terms, the words two memories must share to be about the same thing.

A topic term is a content word (English: lowercase, lightly stemmed, stop words dropped; Chinese: jieba words of
two or more characters), with every word that names the person
left out: "the user", "用户", pronouns, the speaker of a dialogue turn. Words that only say how something is said
("prefers", "asked again", "喜欢", "再次") are cues for the statement's shape (`memory.consolidation.statements`),
never topics, so "The user prefers tea" and "The user prefers short answers" share nothing.

A few concepts are canonicalised because people keep saying them in other words: answers/replies/responses,
short/concise/verbose (the style of the assistant's answers). The surface form seen most is kept for display.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache

from memory.consolidation.domains import chinese_domains, domain_of
from memory.text.words import CJK_RUN, STOPWORDS, has_cjk, nfkc, split_speaker

_ENGLISH_WORD = re.compile(r"[A-Za-z][A-Za-z0-9+#]*(?:[.'’-][A-Za-z0-9+#]+)*|\d+(?:\.\d+)+")

# the person a memory is about, and words that say nothing about a topic in a chat
_PERSON = """user users person people someone somebody everyone assistant ai bot speaker i me my mine myself you your
    yours yourself he him his she her hers they them their we us our it its one ones mr mrs ms"""
_GENERIC = """say says said saying tell told telling ask asks asked asking again still ever always often usually
    sometimes never already soon later now today tonight yesterday tomorrow week weeks month months year years day days
    time times thing things stuff lot lots bit kind sort way ways something anything everything nothing really
    very quite pretty so much many more most less least well good great nice cool awesome amazing wow thanks
    thank please sure yes yeah yep no nope okay ok hey hi hello oh ah um uh lol haha glad happy sorry fine right
    new old big little make makes made making get gets got getting go goes went going gone come comes came
    coming take takes took taking give gives gave giving put puts keep keeps kept let lets see sees saw seen
    look looks looked looking think thinks thought know knows knew known feel feels felt mean means meant want
    wants wanted need needs needed try tries tried trying use uses used using seem seems seemed like likes liked
    love loves loved enjoy enjoys enjoyed prefer prefers preferred preference dislike dislikes disliked hate
    hates hated start starts started begin begins began stop stops stopped would could should might must will
    shall can may also even just only though although however because since while every each another other
    others first last next same different definitely probably maybe perhaps actually currently recently finally
    here there then where when what which who whom whose why how this that these those such all any some both
    either neither mention mentions mentioned talk talks talked talking share shares shared sound sounds sounded
    interesting exciting fun welcome free chat chatting help helpful helps suggestion suggestions advice advise
    recommend recommendation recommendations mood mind find found back feeling feelings idea ideas hope hopes
    consider seriously interest interests special beautiful wonderful lovely better understand understanding
    worries worry worried inspired inspire inspiring inspiration safe stay proud supportive excited appreciate
    appreciated tough pushing push care caring congrats congratulations ya wait hear heard around gonna wanna
    gotta goodbye bye late lately besides company wondering wonder etc learn learns learning learned watch
    watching listen listening companion friend friends name names meet together life world moment moments place
    places without within with about into onto upon"""
_EN_DROP = frozenset(_PERSON.split()) | frozenset(_GENERIC.split()) | STOPWORDS

_ZH_TEXT = """用户 我们 你们 他们 她们 它们 自己 大家 别人 人家 这个 那个 这些 那些 一个 一些 一下 一点 一直
    什么 怎么 怎样 如何 为什么 哪里 可以 可能 应该 需要 想要 希望 喜欢 很喜欢 非常 特别 真的 真是
    确实 其实 还是 就是 只是 但是 不过 因为 所以 如果 虽然 而且 然后 已经 正在 开始 继续 再次
    又一次 经常 总是 常常 通常 有时 有时候 每次 今天 明天 昨天 现在 最近 时候 时间 事情 东西 方面
    感觉 觉得 知道 认为 告诉 说过 提到 表示 要求 不要 没有 不是 这样 那样 这么 那么 一样 多少 谢谢
    好的 好吧 是的 不错 当然 一定 一起 或者 还有 以及 比较 有点 有些 很多 许多 所有 任何 可是 只要
    只有 之后 之前 以后 以前 起来 出来 下来 进行 得到 能够 不会 不能 我会 你会 问题 建议 推荐 帮助
    帮忙 试试 尝试 了解 分享 聊聊 朋友 你好 您好 哈哈 嗯嗯 真的吗 很好 太好了 可爱 开心 高兴 重要
    帮你 给你 每天 早上 晚上 上午 下午 中午 每周 一天 一次 两次 几次 随时 找我聊 聊天 不用谢
    非常感谢 感谢 陪伴 心情 生活 愉快 意见 放松 注意 加油 鼓励 支持 理解 地方 有意思 很棒 不用 伴侣
    聊些 怎么样 认识 名字 主意 意义 感到 享受 试试看 看看 收获 有趣 其他 每当 感受 体验 经历 方法
    办法 内容 情况 机会 心里 状态 压力 快乐 美好 值得 努力 坚持 成长 改变 发现 学习 了解到 想法
    心得 话题 一种 这种 那种 哪些 一下子 再聊 再见 看来 有没有 兴趣 遇到 也许 谈谈 不好 相信 决定
    看到 有用 过程 学到 考虑 尤其 更好 好奇 下次 处理 庆祝 相关 思考 表现 参考 出去 不知所措 家里 内心"""
_ZH_DROP = frozenset(_ZH_TEXT.split())
_ZH_STOP_CHARS = frozenset("的了是我你他她它们在和就都也很吗呢吧啊呀有这那一个不么着过把被给对与及或而您")

# concept -> its words (stems for English): what people say of the same thing in other words
_CONCEPTS: dict[str, tuple[str, ...]] = {
    "answer": ("answer", "reply", "response", "respond", "回答", "回复", "答复", "回应", "答案"),
    "brevity": (
        "short",
        "shorter",
        "shortest",
        "concis",
        "concise",
        "brief",
        "briefer",
        "succinct",
        "terse",
        "verbos",
        "verbose",
        "wordy",
        "lengthy",
        "long-winded",
        "preamble",
        "简短",
        "简洁",
        "简练",
        "精简",
        "更短",
        "啰嗦",
        "冗长",
        "长篇大论",
        "开场白",
    ),
}
_CANONICAL = {word: concept for concept, words in _CONCEPTS.items() for word in words}
# Chinese phrases of a concept that word segmentation splits into single characters ("更短一些": 更/短/一些)
_ZH_PHRASES = re.compile("更短|短一些|短一点|短点|简短|简洁|简练|精简|啰嗦|冗长|长篇大论|开场白")
# tools that imply the language they are written in: statements about a FastAPI service and about its Python
# version are about the same stack (a person knows that; the embedder does not)
_IMPLIES: dict[str, str] = {
    word: language
    for language, words in {
        "python": ("fastapi", "django", "flask", "uvicorn", "pytest", "pandas", "numpy", "pydantic", "pip"),
        "javascript": ("node", "nodej", "react", "vue", "npm", "typescript", "next.j", "express"),
        "java": ("spring", "maven", "gradle", "jvm", "kotlin"),
        "rust": ("cargo", "tokio", "rustc"),
    }.items()
    for word in words
}


@dataclass(frozen=True, slots=True)
class Topics:
    """The topic terms of one statement and how each was written (for the generalised statement)."""

    terms: frozenset[str]
    surface: dict[str, str] = field(default_factory=dict)


@lru_cache(maxsize=1)
def _segmenter() -> Callable[[str], list[str]]:
    """jieba's precise mode with part-of-speech tags (a core dependency; its dictionary loads on first use)."""
    import jieba
    import jieba.posseg

    jieba.setLogLevel(logging.WARNING)
    # pronouns, prepositions, conjunctions, particles, numerals, measure and time words, interjections, adjectives
    # and locality words never name a topic
    dropped = ("r", "p", "c", "u", "m", "q", "t", "y", "e", "o", "f", "a", "ad", "z")
    return lambda run: [pair.word for pair in jieba.posseg.lcut(run) if pair.flag not in dropped]


_IE_TEXT = "movie cookie calorie zombie rookie selfie smoothie brownie pie tie "
_IE_TEXT += "lie hippie genie goalie auntie veggie freebie boogie prairie"
_IE_NOUNS = frozenset(_IE_TEXT.split())


def plural_stem(word: str) -> str:
    """The singular of a plural ("replies" -> "reply", "runs" -> "run"); nothing else: "training" and "train",
    "painting" and "paint" are different topics."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-1] if word[:-1] in _IE_NOUNS else word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def english_key(lowered: str) -> str:
    """The topic key of a lowercased English word: its concept, else its singular."""
    return _CANONICAL.get(lowered) or _CANONICAL.get(plural_stem(lowered)) or plural_stem(lowered)


def _english(text: str, drop: frozenset[str], terms: list[tuple[str, str]], after_cjk: bool = False) -> None:
    for found in _ENGLISH_WORD.finditer(text):
        before = text[: found.start()].rstrip()
        # a sentence's first word is capitalised, which does not make it a name
        initial = (not before and not after_cjk) or (bool(before) and before[-1] in '.!?\n"“:')
        word = found.group().replace("’", "'").split("'")[0]
        lowered = word.lower()
        if lowered in drop or len(lowered) < 2 or lowered.isdigit():
            continue
        key = english_key(lowered)
        if key in drop:
            continue
        terms.append((key, word if word[0].isupper() and not word.isupper() and not initial else lowered))
        if key in _IMPLIES:
            terms.append((_IMPLIES[key], _IMPLIES[key].capitalize()))
        if domain := domain_of(key, english_key):
            terms.append((domain.term, domain.en))


def domain_term(term: str) -> str | None:
    """The domain term (`@swimming`) of a topic term ("goggle", "泳镜"), None when it has none."""
    domain = domain_of(term, english_key)
    if domain is None and has_cjk(term):
        domain = next(chinese_domains(term, english_key), None)
    return domain.term if domain else None


def _chinese(run: str, terms: list[tuple[str, str]]) -> None:
    terms.extend((_CANONICAL.get(p, "brevity"), p) for p in _ZH_PHRASES.findall(run))
    terms.extend((domain.term, domain.zh) for domain in chinese_domains(run, english_key))
    for word in _segmenter()(run):
        if (
            len(word) < 2
            or (word[0] == "一" and len(word) == 2)
            or word in _ZH_DROP
            or all(c in _ZH_STOP_CHARS for c in word)
        ):
            continue
        if word[0] in "我你他她它这那" or word[-1] in "了着过吗呢吧":  # 我家, 你的, 去了: person or particle
            continue
        terms.append((_CANONICAL.get(word, word), word))


ASSISTANTS = frozenset({"ai", "assistant", "bot", "companion", "agent", "助手", "机器人"})


def own_lines(text: str) -> list[str]:
    """The lines of `text` that are not an assistant's reply ("AI: ..." in a logged exchange): what a memory says
    about the person is what they said, not what they were told."""
    return [line for line in text.split("\n") if split_speaker(line)[0] not in ASSISTANTS]


def topics_of(text: str, person: Iterable[str] = ()) -> Topics:
    """The topic terms of `text` (without an assistant's lines); the words of `person` (a speaker's name) are left
    out too."""
    drop = _EN_DROP | {w.lower() for name in person for w in name.split()}
    text = nfkc("\n".join(own_lines(text)))
    found: list[tuple[str, str]] = []
    position = 0
    for match in CJK_RUN.finditer(text):
        _english(text[position : match.start()], drop, found, after_cjk=position > 0)
        if match.group() not in person:
            _chinese(match.group(), found)
        position = match.end()
    _english(text[position:], drop, found, after_cjk=position > 0)
    seen: Counter[tuple[str, str]] = Counter(found)
    surface: dict[str, str] = {}
    for (key, shown), _ in seen.most_common():
        surface.setdefault(key, shown)
    return Topics(frozenset(surface), surface)


def surface_forms(topics: Iterable[Topics]) -> dict[str, str]:
    """Each term's most frequent written form over several statements."""
    counts: dict[str, Counter[str]] = {}
    for t in topics:
        for key, shown in t.surface.items():
            counts.setdefault(key, Counter())[shown] += 1
    return {key: forms.most_common(1)[0][0] for key, forms in counts.items()}

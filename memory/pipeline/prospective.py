"""Whether a sentence states a plan about a time after it was said: the reading `memory.pipeline.expiry` asks of
the sentence around each time phrase, in English and Chinese.

A time phrase makes a memory expire only when its sentence looks ahead. This module owns the tests that say no:
  header        a leading timestamp ("[1:10 pm on 27 March, 2023] Andrew: ...", "2023-03-27 13:10 ...") dates the
                statement itself; it is cut off before any rule reads the text
  permanent     a birthday, an anniversary, "born": nothing in the text expires
  recurring     "every Monday", "usually", "每周一", "经常"
  past          past tense ("went", "was", "-ed", "了", "已经"), conditional or ongoing ("if", "would", "still", "还是")
  reported      reported or quoted speech ("he said he'd come tomorrow", "她说明天会来", a phrase inside quotes)
  farewell      chit-chat about the next talk ("see you tomorrow", "talk soon", "明天再聊", "明天见")
  talk          the conversation itself ("today I want to talk to you about...", "明天继续和你聊天", "今天想请教你")
  opinion       advice or an opinion about a plan ("a trip this weekend is a great idea", "周末去旅游是一个很好的方式")
  question      a question ("are you free tomorrow?", "明天有空吗"): an offer or a query, not the writer's plan
  today_is      a weekday that names the statement's own day ("today is Sunday", "今天是星期天")
  holds more    a lasting fact in the plan's own sentence ("our opener is next week in Seattle, a city he loves"),
                an event or a project beside it ("gets accepted to the program and will leave next month",
                "working on opening a studio, opening night tomorrow"), or the plan as one item of several
                ("I'm also hosting a competition next month")
  beside        a lasting fact (a preference, an identity, a job, "I've always") or a past event in any other
                sentence of the memory: the whole memory keeps, since hiding the plan would hide them
and the one that says yes, `cue`: a word of intent, obligation or appointment ("will", "going to", "plan",
"need to", "due", "meeting", "remind", "要", "打算", "准备", "开会", "截止"). Phrases that can only look ahead
("tomorrow", "next week") need no cue; the others ("today", "this week", "on Friday") do (see expiry), and an
offset ("in 3 days") is a duration in a past sentence ("finished it in 3 days", "wasn't built in a day").

Linear in the text: the sentences are found in one pass (`Sentences`, which reads each at most once), every
pattern is a bounded alternation run once per sentence, and quotes are located in one pass and counted by bisection.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from dataclasses import dataclass

from memory.text.patterns import bilingual

# A bracketed prefix of at most 80 characters holding a digit, or a leading ISO date with an optional time.
_HEADER = re.compile(
    r"^\s*(?:[\[(【（][^\]\)】）\n]{0,80}?\d[^\]\)】）\n]{0,80}?[\]\)】）]"
    r"|\d{4}[-/.]\d{1,2}[-/.]\d{1,2}(?:[ T]\d{1,2}:\d{2}(?::\d{2})?)?)\s*[-–:|,]?\s*"
)
_PAST_WORDS = (
    r"was|were|did|had|been|wasn't|weren't|didn't|hadn't|went|got|came|made|took|saw|met|ate|bought|said|told|gave|"
    r"found|left|felt|won|lost|ran|began|brought|caught|thought|wrote|spoke|drove|flew|sent|spent|built|kept|held|"
    r"heard|paid|sold|yesterday|ago|earlier|already|recently|lately"
)
PAST = bilingual(rf"{_PAST_WORDS}|\w{{2,}}[^e\W]ed", r"了|过|昨天|前天|已经|刚才|刚刚|最近")
# PAST for a sentence beside the plan, read with more care: an "-ed" word counts only after its subject ("I
# rehearsed", not "so excited", "Super stoked!"), and "太好了" or "不过" is no past.
PAST_BESIDE = re.compile(
    rf"\b(?:{_PAST_WORDS})\b|\b(?:i|we|he|she|they)\s+(?:\w+\s+)?\w{{2,}}[^e\W]ed\b"
    r"|(?<![好对算行罢])了|(?<![不难])过(?![来去得])|昨天|前天|已经|刚才|刚刚|最近|上周|上个月|去年",
    re.IGNORECASE,
)
NOT_A_PLAN = re.compile(
    r"\b(?:if|would|could|wish|still|nowadays|as\s+of|starting|effective|onwards?|from\s+now\s+on)\b"
    r"|如果|要是|还是|仍然|依然|(?:从|自)[^，。！？,.!?]{1,8}(?:起|开始)|以后都|今后",
    re.IGNORECASE,
)  # conditional or ongoing; or the start of a lasting state ("as of March 1 the tier is $35", "从下周起改到周二")
# A permanent date anywhere in the text ("born on May 5", "我的生日是5月5日"): nothing in it expires.
PERMANENT = bilingual(r"born|birthdays?|anniversary|anniversaries", r"生日|纪念日|出生")
# A lasting fact: a preference, an identity or a job, a habit ("I love hiking", "I'm a nurse", "我一直很喜欢西班牙").
# Another sentence of a time-bound memory saying one keeps the whole memory from expiring: hiding the plan would
# hide the fact with it; so does one in the plan's own sentence ("John's game next month is in Seattle, a city he
# loves"). "like" counts only after its subject ("I like", never "I'd like to go tomorrow", "looks like").
LASTING = re.compile(
    r"\b(?:love|loves|loved|enjoy|enjoys|favou?rites?|prefer|prefers|hate|hates|adore|"
    r"work\s+(?:as|at|for)|works\s+(?:as|at|for)|my\s+(?:job|career|profession))\b|"
    r"\b(?:i|we|he|she|they)(?:'ve|\s+have|\s+has)?\s+(?:really\s+|also\s+|still\s+|always\s+)?(?:like|likes|always)\b|"
    r"\b(?:i'm|i\s+am|we're|we\s+are)\s+(?:a|an)\s+(?!bit\b|little\b|lot\b)|"
    r"\b(?:i'm|i\s+am|we're|we\s+are)\s+(?:vegan|vegetarian|allergic|diabetic|pregnant|retired|married|divorced)\b|"
    r"\b(?:allergic|diabetic|asthmatic|in\s+charge\s+of|responsible\s+for)\b|"
    r"\b(?:i|we)\s+(?:teach|coach|own|run\s+a|manage)\b|"
    r"喜欢|爱好|(?<!可)爱(?!心)|讨厌|一直|我是|职业|我在[^，。！？,.!?]{1,12}(?:当|教|工作|上班)|过敏|糖尿病|负责",
    re.IGNORECASE,
)
# Something that outlasts the plan, named in it: a person of the family, a pet, a possession by make or year, a
# health condition, an ongoing state, a past event (when it happened, or what was bought or done), or a feeling
# about it ("my daughter starts school on Monday", "我家那只橘猫周三要去拔牙", "My 2016 Civic is going in
# for new brakes tomorrow", "我刚提的比亚迪", "dreading the review next week", "紧张得睡不着"): the memory says
# who the writer has, owns or feels, which a plan's day does not end.
OUTLASTING = re.compile(
    r"\b(?:my|our|his|her|their)\s+(?:little\s+|older\s+|younger\s+|big\s+|baby\s+)?(?:daughters?|sons?|kids?|"
    r"children|wife|husband|partner|mom|mum|mother|dad|father|parents|brothers?|sisters?|grandma|grandmother|"
    r"grandpa|grandfather|grandparents|aunt|uncle|cousin|niece|nephew|fianc[ée]e?|boyfriend|girlfriend|in-laws)\b|"
    r"\b(?:cats?|dogs?|puppy|puppies|kittens?|pup|hamster|parrot|rabbit|bunny)\b|"
    r"\b(?:my|our)\s+(?:(?:19|20)\d\d|new|old|first)\s+\w+|"
    r"\b(?:dread(?:ing|s)?|nervous|anxious|worried|worrying|scared|terrified|excited|stoked|thrilled|stressed|"
    r"stressing|freaking\s+out|can'?t\s+wait|looking\s+forward)\b|"
    # a possession by what one does with it or by its model year, an ongoing state, a health condition
    r"\b(?:drives?|owns?)\s+(?:a|an|the|his|her|their|two|three)\b|\b(?:19|20)\d\d\s+(?-i:[A-Z][a-z]+)|\bcurrently\b|"
    r"\b(?:hypertension|high\s+blood\s+pressure|asthma|diabetes|cancer|depression|adhd|pregnant)\b|"
    r"\b(?:golden|labrador|corgi|husky|retriever|poodle|terrier)\b|"
    # a past event in the plan's own sentence: when it happened, or what was acquired or done
    r"\b(?:yesterday|ago|last\s+(?:week|month|year|night|summer|winter|spring|fall|autumn))\b|"
    r"\b(?:took|bought|adopted|graduated|sold|won|passed|joined|got\s+into)\b|"
    r"女儿|儿子|孩子|老婆|老公|妻子|丈夫|爸爸|妈妈|爸妈|父亲|母亲|父母|哥哥|姐姐|弟弟|妹妹|爷爷|奶奶|外公|外婆|姥姥|姥爷|"
    r"我[妈爸哥姐弟妹]|老[妈爸]|家人|亲戚|"
    r"男朋友|女朋友|对象|未婚[夫妻]|公婆|岳父|岳母|猫|狗|宠物|金毛|泰迪|柯基|哈士奇|刚(?:买|提|入手|换|领养|装修)|新买|"
    r"\d{2,4}款|开(?:一|了)?辆|我的车|目前|高血压|哮喘|怀孕|抑郁|癌|心脏病|慢性|"
    r"昨天|前天|去年|上(?:个)?月|上(?:周|星期)|已经|(?:买|养|拿到|考|领|租|搬)了|"
    r"紧张|担心|害怕|期待|兴奋|激动|焦虑|睡不着|舍不得|忐忑|好怕|难过|伤心",
    re.IGNORECASE,
)
# An event or a project beside the plan in its own sentence ("Tim gets accepted to the program and will leave next
# month", "Jon is working on opening a studio, opening night tomorrow"): it outlasts the day.
EVENT = re.compile(
    r"\b(?:gets?|got|was|were|has\s+been|have\s+been)\s+\w{2,}[^e\W]ed\b|\bworking\s+on\b", re.IGNORECASE
)
# The plan is one item of several news ("I'm also hosting a competition next month", "另外，我下周要出差"): the
# memory holds more than the plan, so hiding it with the plan is not sure.
AMONG_OTHERS = bilingual(r"also|as\s+well|besides", r"另外|此外")
# A recurring time in the sentence ("every Monday", "每周一", "usually on Fridays"): not one day to come.
_RECURRING = re.compile(
    r"\b(?:every|each|weekly|daily|annually|monthly|usually|always|often|sometimes|occasionally)\b|"
    r"\bsince\b(?!\s+(?:i|you|we|he|she|they|it)\b)|"  # "since May", not "since I'll forget" (because)
    r"每|以来|自从|通常|经常|总是|有时|偶尔|一般|平时|往往",
    re.IGNORECASE,
)
_REPORTED = bilingual(
    r"says?|said|tells?|told|asks?|asked|heard|claims?|claimed|mentioned|according\s+to",
    r"说|告诉|听说|据说|问我|表示",
)
_FAREWELL = re.compile(
    r"\b(?:see\s+(?:you|ya)|talk\s+(?:to\s+you\s+)?(?:soon|later|tomorrow)|catch\s+you|until\s+tomorrow|"
    r"good\s*night|bye|have\s+a\s+(?:good|great|nice|lovely)\s+\w{1,12}|enjoy\s+your)\b"
    r"|再聊|再见|见[吧啦哦喔。！!~]|明天见|明天聊|回头聊|改天|晚安|拜拜|愉快"
    r"|\btomorrow\s+is\s+another\s+day\b|明日复明日",
    re.IGNORECASE,
)
# The conversation itself: "today I want to talk to you about my trip", "let's talk again tomorrow",
# "今天想跟你聊聊", "明天继续和你聊天": the talk is not the writer's plan (what it is about is read elsewhere).
_TALK = re.compile(
    r"\b(?:talk|chat|speak)(?:ing)?\s+(?:to|with)\s+you\b|\b(?:talk|chat)\s+(?:again|more)\b|"
    r"\b(?:our|this)\s+(?:conversation|chat|talk)\b|\bask\s+you\b"
    r"|(?:和|跟|与|同)你(?:一起)?(?:聊|谈|说|分享)|想(?:和你|跟你)?(?:聊聊|谈谈)|(?:继续|再)(?:和你|跟你)?聊|请教",
    re.IGNORECASE,
)
# Advice or an opinion about a plan ("going on a trip this weekend is a great idea", "周末去旅游是一个很好的
# 方式", "I think leaving at 5am tomorrow is too early", "我觉得小李下周去西藏有点冒险"): said of a plan, hedged or
# someone else's, not the writer's own.
_OPINION = re.compile(
    r"\b(?:is|are|sounds?|seems?)\s+(?:like\s+)?(?:a\s+|an\s+)?(?:really\s+|very\s+|such\s+a\s+)?"
    r"(?:good|great|nice|wonderful|fantastic|excellent|perfect)\s+(?:idea|choice|way|option)\b"
    r"|\b(?:i|he|she|they|we|user)\s+(?:thinks?|believes?|guess|feels?\s+like)\b|\bin\s+my\s+opinion\b"
    r"|是(?:一个|一种|个)?(?:很|非常|挺|特别|不错)?(?:好|不错|棒|理想)的(?:选择|方式|主意|办法|方法)|建议你|推荐你|你可以"
    r"|觉得|认为|我感觉|我看",
    re.IGNORECASE,
)
_QUESTION = re.compile(r"[?？]|吗|呢")
_REMINDER = re.compile(r"\bremind\s+me\b|提醒我", re.IGNORECASE)
_CUE = bilingual(
    r"will|shall|'ll|going\s+to|gonna|plan|plans|planning|planned\s+to|intend|need\s+to|have\s+to|has\s+to|must|due|"
    r"deadline|expires?|runs?\s+out|remind|appointment|meeting|interview|exam|flight|conference|review|dinner|lunch|"
    r"party|scheduled|booked",
    r"(?<![重主只需不])要(?![是求不])|打算|准备|计划|将要|(?<![机社体学不误理])会(?![不])|约了?|预约|安排|提醒|截止|"
    r"到期|面试|考试|出差|航班|记得|别忘|(?<![过失力没不])去(?!世)",
)
_TODAY_IS = re.compile(r"(?:今天|今日)(?:是|为)$|\b(?:today\s+is|it'?s|it\s+is)\s$", re.IGNORECASE)
_QUOTES_OPEN = "“「『"
_QUOTES_CLOSE = "”」』"
_QUOTE = re.compile(r'["“”「」『』]')


def without_header(text: str) -> str:
    """`text` without a leading timestamp that dates the statement itself (see the module docstring)."""
    header = _HEADER.match(text)
    return text[header.end() :] if header else text


# A sentence longer than this is no plan and holds more than one: a plan is said in a few words ("dentist
# Thursday at 3", "我下周三要去北京出差"), and a run-on text of thousands of characters is not read for one (each
# test below would scan all of it).
MAX_PLAN_SENTENCE = 400


@dataclass(frozen=True, slots=True)
class Reading:
    """What one sentence says about time: past, refused as a plan, and whether it has a cue of one."""

    past: bool  # past tense
    refused: bool  # conditional, ongoing, recurring, reported, a farewell, the talk itself, advice or a question
    cue: bool
    lasting: bool = False  # states a lasting fact or a past event (LASTING, PAST_BESIDE): read beside a plan
    holds_more: bool = False  # a plan's sentence that also states a lasting fact or is one item of several

    @classmethod
    def of(cls, sentence: str) -> Reading:
        if len(sentence) > MAX_PLAN_SENTENCE:
            return cls(past=False, refused=True, cue=False, lasting=True, holds_more=True)
        question = bool(_QUESTION.search(sentence)) and not _REMINDER.search(sentence)
        refused = NOT_A_PLAN.search(sentence) or _REPORTED.search(sentence) or _FAREWELL.search(sentence)
        refused = refused or _RECURRING.search(sentence) or _TALK.search(sentence) or _OPINION.search(sentence)
        past, cue = bool(PAST.search(sentence)), bool(_CUE.search(sentence))
        # a question states no fact
        outlasting = bool(LASTING.search(sentence) or OUTLASTING.search(sentence) or EVENT.search(sentence))
        lasting = not question and (outlasting or bool(PAST_BESIDE.search(sentence)))
        holds_more = outlasting or bool(AMONG_OTHERS.search(sentence))
        return cls(past, bool(refused) or question, cue, lasting, holds_more)


_SENTENCE_PUNCTUATION = ".!?;。！？；"
# a run of punctuation is tried from its first mark only, never given back (it was retried from each: quadratic)
# Chinese marks end a sentence without a space after them ("...看电影。你有...").
_SENTENCE_END = re.compile(rf"(?<![{_SENTENCE_PUNCTUATION}])[{_SENTENCE_PUNCTUATION}]++(?:\s+|$|(?<=[。！？；]))|\n")


class Sentences:
    """The sentences of a text, found in one pass, and how each reads (`Reading`, tested once per sentence;
    testing the sentence around each match again cost a scan of the whole text per match: 7 s for 8,000
    characters of "Dec 5 " with no sentence end)."""

    def __init__(self, text: str) -> None:
        self.text = text
        ends = list(_SENTENCE_END.finditer(text))
        self._ends = [m.end() for m in ends]
        self._starts = [m.start() for m in ends]
        self._readings: dict[tuple[int, int], Reading] = {}

    def around(self, start: int, end: int) -> tuple[int, int]:
        """The span of the sentence that holds [start, end): after the last sentence end before `start` (or a run
        of sentence punctuation right before it) up to the end of the first one from `end` ("?" is read too)."""
        before = bisect_right(self._ends, start)
        left = self._ends[before - 1] if before else 0
        if start > left and self.text[start - 1] in _SENTENCE_PUNCTUATION:
            left = start
        after = bisect_left(self._starts, end)
        return left, self._ends[after] if after < len(self._ends) else len(self.text)  # with its end mark

    def reading(self, start: int, end: int) -> Reading:
        """How the sentence around [start, end) reads: past, refused as a plan, with a cue of one."""
        return self._read(self.around(start, end))

    def others(self, span: tuple[int, int]) -> Iterator[Reading]:
        """How each sentence that does not overlap `span` reads."""
        left = 0
        for right in [*self._ends, len(self.text)]:
            if (right <= span[0] or left >= span[1]) and self.text[left:right].strip():
                yield self._read((left, right))
            left = right

    def _read(self, span: tuple[int, int]) -> Reading:
        if span not in self._readings:
            self._readings[span] = Reading.of(self.text[span[0] : span[1]])
        return self._readings[span]


class Quotes:
    """The quotation marks of a text, found once; whether a position lies inside a quotation."""

    def __init__(self, text: str) -> None:
        self._plain: list[int] = []
        self._open: list[int] = []
        self._close: list[int] = []
        for mark in _QUOTE.finditer(text):
            char = mark.group(0)
            kind = self._open if char in _QUOTES_OPEN else self._close if char in _QUOTES_CLOSE else self._plain
            kind.append(mark.start())

    def inside(self, position: int) -> bool:
        opened = bisect_left(self._open, position) - bisect_left(self._close, position)
        return opened > 0 or bisect_left(self._plain, position) % 2 == 1


def names_today(text: str, start: int) -> bool:
    """Whether the phrase at `start` follows "today is" / "今天是" (it names the statement's own day)."""
    return bool(_TODAY_IS.search(text[max(0, start - 12) : start]))

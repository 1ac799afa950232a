"""The facts of one user or assistant message, for the rule-based extractor (`memory.extraction.rules`), sentence by
sentence (`sentences`):
  1. chit-chat is dropped (`signals.chit_chat`: what `memory.pipeline.density.assess` calls low-information,
     "Hey Mel!", "ok", "好的", "哈哈", a short goodbye, pleasantry or thanks), and small talk at either end of a
     sentence is cut ("Yeah, ...", "好的，谢谢你的推荐，...", "..., 很高兴认识你");
  2. relative dates are made absolute from the event's local date (`dates`);
  3. a user's request is rewritten as one ("帮我查一下北京到上海的航班，要明天上午的，最好国航" -> "用户请助手查北京
     到上海的航班，要明天（2026-12-03）上午的，最好国航"; "Can you book a table at Nobu?" -> "The user asked the
     assistant to book a table at Nobu."), and a preference clause inside it ("最好国航", "preferably a window
     seat") also becomes a fact of its own ("用户偏好国航", semantic);
  4. a question keeps its leading statements ("我很喜欢绘画，你觉得...吗？" keeps "用户很喜欢绘画"); the question
     itself is kept only from the user and only when it asks for something with content (a request, or "how do
     I" / "推荐" / "怎么" with a name, number, date or enough words), quoted: 'The user asked: "..."'. In a
     conversation between people (two named speakers, no assistant) neither a request nor a question is a fact:
     it is put to the other person, and the answer says what it asks for;
  5. any other sentence is kept only if it carries something (`signals.carries_user` / `carries_assistant`):
     from the user, a name (a capitalised word that neither opens the sentence nor is someone addressed, a
     《title》, a code), a number or date, a preference / habit / plan / decision word, a first-person statement
     (four English words, seven CJK characters), or twelve CJK characters; from the assistant, what it did or
     will do ("I booked CA1501 for you"), a result with a number, date or name, or the user's own preferences or
     plans, never a pleasantry, advice, a question or talk about itself; a user's English sentence that leaves
     out its subject gets it ("Gonna continue my edu" -> "Caroline is gonna continue Caroline's edu"); and a
     user's English statement must stand on its own (`signals.stands_alone`: no fragment, no bracketed note alone,
     no opening pronoun for something said before ("It really helps me reset."), about its speaker or someone or
     something named, and from a named speaker among people no "you" left);
  6. the first (and, from the assistant, second) person is written out (`persons`);
  7. a sentence that opens with a pronoun ("It was so powerful.", "他...") is joined to the fact of the sentence
     before it, so the fact stands on its own.
Kind: semantic for a preference, habit, trait or standing fact (`memory.pipeline.prospective.LASTING`, "usually",
"习惯", "最好", ...) without a date; episodic for the rest (events, plans, requests, questions).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from typing import cast

from memory.extraction import signals
from memory.extraction.dates import annotate
from memory.extraction.model import MAX_FACT_CHARS, FactKind, SourceEvent
from memory.extraction.persons import Voice, resolve, third_person
from memory.extraction.sentences import cjk_count, clause_spans, is_question, split_sentences, strip_end
from memory.text.patterns import bilingual

_REQUEST_EN = re.compile(
    r"^(?:(?:(?:can|could|would|will)\s++you\s++(?:please\s++)?|please\s++)(?:help\s++me\s++(?:to\s++)?)?"
    r"|help\s++me\s++(?:to\s++)?)(?=[a-z])",
    re.IGNORECASE,
)
_IMPERATIVE_EN = re.compile(
    r"^(?:book|find|search\s++for|look\s++up|remind\s++me|schedule|reserve|order|cancel|note\s++that|"
    r"remember\s++that|recommend|suggest)\b",
    re.IGNORECASE,
)
_REQUEST_ZH = re.compile(
    r"^(?:请|麻烦)?(?:你|您)?(?:能不能|可不可以|能否|能|可以)?(?:帮我|给我|替我|为我|帮忙)|^(?:请|麻烦)(?:你|您)?(?!问)"
)
# "你能推荐...吗？": a request only when asked (said, "你可以看看《回家吃饭》" is a suggestion to the assistant)
_ASKED_ZH = re.compile(r"^(?:你|您)(?:能不能|可不可以|能否|能|可以)(?!能)")
_ASKS = bilingual(
    r"recommend|suggest|advice|advise|find|book|help|remind|where\s++can|how\s++(?:do|can|should|to)|what\s++should|"
    r"any\s++(?:good|tips|ideas)",
    r"推荐|建议|介绍|帮|查|找|订|提醒|安排|怎么|如何|哪里|哪儿|哪些|有没有",
)
_PRONOUN_START = re.compile(
    r"^(?:(?:it|it's|he|she|they|they're|this|that|these|those|his|her|its|their|them|there)\b|它|他|她|这|那|其)",
    re.IGNORECASE,
)
_PREFERENCE_CLAUSE = re.compile(r"^(?:最好是|最好|偏好)|^(?:preferably|ideally)\s++", re.IGNORECASE)
_PREPOSITIONS = frozenset({"by", "in", "on", "at", "for", "with", "to", "from", "near", "before", "after", "around"})
# A user's sentence without its subject: "Gonna continue my edu", "Just got back from Paris", "Love the necklace".
_ONGOING_START = re.compile(
    r"^(?:gonna|going\s++to|planning|thinking\s++(?:of|about)|hoping|looking\s++forward|trying|working\s++on|"
    r"heading|off\s++to|about\s++to|loving|enjoying)\b",
    re.IGNORECASE,
)
_DONE_START = re.compile(
    r"^(?:just\s++|finally\s++|recently\s++)?(?:got|went|finished|started|bought|moved|adopted|joined|visited|"
    r"signed\s++up|took|had|made|met|tried)\b",
    re.IGNORECASE,
)
_AFFECT_START = re.compile(r"^(love|like|enjoy|hate|miss|prefer)\s", re.IGNORECASE)
_ZH_REQUEST_TAILS = ("好吗", "可以吗", "行吗", "好不好", "可不可以", "吗", "呢", "吧")


def _finish(text: str) -> str:
    text = " ".join(text.split())
    if text[:1].islower() and text.startswith(("the user", "the assistant")):
        text = text[0].upper() + text[1:]
    return text if len(text) <= MAX_FACT_CHARS else text[: MAX_FACT_CHARS - 1] + "…"


def _kind(raw: str, dates: int) -> FactKind:
    return cast(FactKind, signals.kind(raw, dates))


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


@dataclass(slots=True)
class Draft:
    """A fact of the message, before the extractor cites its event."""

    content: str
    kind: FactKind
    raw: str  # the source sentence(s), for the kind of a joined fact
    joinable: bool  # a plain statement, to which the next sentence may be joined


@dataclass(slots=True)
class _Message:
    """The facts of one message, sentence by sentence. `among_people`: the message is said in a conversation between
    people (user messages of two or more named speakers, no assistant), where a request or a question is put to the
    other person, not to an assistant."""

    voice: Voice
    today: date
    among_people: bool = False
    drafts: list[Draft] = field(default_factory=list)

    @property
    def user(self) -> bool:
        return self.voice.role == "user"

    def add(self, content: str, kind: FactKind, raw: str, joinable: bool = False) -> None:
        self.drafts.append(Draft(_finish(content), kind, raw, joinable))

    def request(self, text: str, asked: bool = False) -> str | None:
        """A user's request rewritten as a statement ("用户请助手...", "The user asked the assistant to ..."), or
        None when `text` (annotated with dates) is no request (or is put to another person: `among_people`)."""
        if not self.user or self.among_people:
            return None
        zh = signals.chinese(text)
        match = (
            (_REQUEST_ZH.match(text) or (_ASKED_ZH.match(text) if asked else None)) if zh else _REQUEST_EN.match(text)
        )
        if match is not None:
            rest = strip_end(text[match.end() :]).strip()
        elif not zh and _IMPERATIVE_EN.match(text) and len(text.split()) >= 3:
            rest = strip_end(_lower_first(text)).strip()  # "Book a table at Nobu for 8pm."
        else:
            return None
        if zh:
            for tail in _ZH_REQUEST_TAILS:
                if rest.endswith(tail) and len(rest) > len(tail) + 1:
                    rest = rest[: -len(tail)].rstrip("，, ")
                    break
            head = rest.find("一下")
            if 0 < head <= 3:
                rest = rest[:head] + rest[head + 2 :]
            return f"{self.voice.subject_zh}请助手{resolve(rest, self.voice)}" if cjk_count(rest) >= 2 else None
        if len(rest.split()) < 2:
            return None
        return f"{self.voice.subject} asked the assistant to {resolve(rest, self.voice)}."

    def preferences(self, annotated: str) -> None:
        """Facts of their own for the preference clauses after the first ("..., 最好国航" -> "用户偏好国航")."""
        for start, end in clause_spans(annotated)[1:]:
            clause = strip_end(annotated[start:end])
            match = _PREFERENCE_CLAUSE.match(clause)
            rest = clause[match.end() :].strip() if match else ""
            if not rest or len(rest) > 60 or rest.split()[0].lower() in _PREPOSITIONS:
                continue
            if signals.chinese(clause):
                self.add(f"{self.voice.subject_zh}偏好{resolve(rest, self.voice)}", "semantic", clause)
            else:
                self.add(f"{self.voice.subject} prefers {resolve(rest, self.voice)}.", "semantic", clause)

    def _subjectless(self, text: str, annotated: str) -> str | None:
        """A user's English sentence that lacks its subject, given one ("Gonna continue my edu" -> "Caroline is
        gonna continue Caroline's edu", "Love the necklace" -> "Melanie loves the necklace"); else None."""
        if not self.user or signals.chinese(text) or len(text.split()) < 3:
            return None
        if _ONGOING_START.match(text):
            return f"{self.voice.subject} is {resolve(_lower_first(annotated), self.voice)}"
        if _DONE_START.match(text):
            return f"{self.voice.subject} {resolve(_lower_first(annotated), self.voice)}"
        affect = _AFFECT_START.match(text)
        if affect:
            verb = third_person(affect.group(1).lower())
            return f"{self.voice.subject} {verb} {resolve(annotated[affect.end() :], self.voice)}"
        return None

    def statement(self, text: str, asked: bool = False) -> None:
        annotated, dates = annotate(text, self.today)
        request = self.request(annotated, asked)
        if request is not None:
            self.add(request, "episodic", text)
            self.preferences(annotated)
            return
        if asked:
            return
        subjectless = self._subjectless(text, annotated)  # the speaker's own statement, subject left out
        keep = signals.carries_user(text, dates) if self.user else signals.carries_assistant(text, dates)
        if not keep and subjectless is None:
            return
        content = subjectless or resolve(annotated, self.voice)
        alone = signals.stands_alone(content, self.voice.subject, named_speaker=self.voice.speaker is not None)
        if self.user and not signals.chinese(text) and not alone:
            return
        self.add(content, _kind(text, dates), text, joinable=True)
        if self.user:
            self.preferences(annotated)

    def question(self, text: str) -> None:
        """A user's question to the assistant, kept when it asks for something with content. A question between
        people is no fact: what it asks for is said in the answer ('Maria asked: "How did the funding help?"'
        would outrank the turn that says how)."""
        if not self.user or self.among_people:
            return
        annotated, dates = annotate(text, self.today)
        request = self.request(annotated, asked=True)
        if request is not None:
            self.add(request, "episodic", text)
            return
        if _ASKS.search(text) is None:
            return
        content = signals.has_number(text, dates) or signals.has_name(text) or signals.WANTS.search(text)
        body = "".join(c for c in text if c not in "你我他她吗呢什么怎么样有没")
        if not (content or cjk_count(body) >= 6 or len(text.split()) >= 6):
            return
        if signals.chinese(text):
            self.add(f"{self.voice.subject_zh}问：“{annotated}”", "episodic", text)
        else:
            self.add(f'{self.voice.subject} asked: "{annotated}"', "episodic", text)

    def sentence(self, sentence: str) -> None:
        if not is_question(sentence):
            self.statement(sentence)
            return
        split = signals.leading_statement_end(sentence)
        if split is not None:
            statements = sentence[: split[0]]
            if signals.SUBORDINATE.match(statements) is None:
                self.statement(statements)
            sentence = sentence[split[1] :]
        self.question(sentence)

    def join(self, sentence: str) -> bool:
        """Join a sentence that opens with a pronoun to the fact of the sentence before; whether it was."""
        if not self.drafts or not self.drafts[-1].joinable or is_question(sentence):
            return False
        if _PRONOUN_START.match(sentence) is None:
            return False
        last = self.drafts[-1]
        annotated, dates = annotate(sentence, self.today)
        joined = f"{last.content}{'' if signals.chinese(last.content) else ' '}{resolve(annotated, self.voice)}"
        if len(joined) > MAX_FACT_CHARS:
            return False
        raw = f"{last.raw} {sentence}"
        kind = _kind(raw, dates) if last.kind == "semantic" else last.kind
        self.drafts[-1] = Draft(_finish(joined), kind, raw, True)
        return True


def _ending(sentence: str) -> str:
    """The closing punctuation of `sentence` ("。", "!"), kept when its last clause is cut."""
    return sentence[len(strip_end(sentence)) :].strip()


def _without_small_talk(sentence: str) -> str:
    """`sentence` without the small talk at either end ("Wow, Caroline, ...", "好的，谢谢你的推荐，...",
    "..., 很高兴认识你。")."""
    for _ in range(3):
        spans = clause_spans(sentence)
        if len(spans) < 2 or not signals.small_talk_clause(sentence[spans[0][0] : spans[0][1]]):
            break
        sentence = sentence[spans[1][0] :]
    for _ in range(3):
        spans = clause_spans(sentence)
        # a name alone at the end is addressed only after a few words ("I totally agree, Melanie."); after more it
        # is more likely an apposition ("a gift from my grandma in my home country, Sweden.")
        short = len(sentence[: spans[-1][0]].split()) <= 6 if spans else False
        if len(spans) < 2 or not signals.small_talk_clause(strip_end(sentence[spans[-1][0] :]), names=short):
            break
        sentence = sentence[: spans[-2][1]] + _ending(sentence)
    return sentence


def message_drafts(event: SourceEvent, addressee: str | None, among_people: bool = False) -> list[Draft]:
    """The facts of a user or assistant message, in order; `addressee` is the user's name, whom the assistant's
    "you" means."""
    if event.type == "user_message":
        voice = Voice("user", event.speaker)
    else:
        voice = Voice("assistant", event.speaker, addressee)
    message = _Message(voice, event.occurred_at.date(), among_people)
    after_fact = False
    for raw in split_sentences(event.content.replace("’", "'")):
        sentence = _without_small_talk(raw)
        if signals.chit_chat(sentence):
            after_fact = False
            continue
        if after_fact and message.join(sentence):
            continue
        before = len(message.drafts)
        message.sentence(sentence)
        after_fact = len(message.drafts) > before
    return message.drafts

"""The rule-based extractor on realistic chat: English turns in the style of LoCoMo (two people, named), Chinese
turns in the style of MemoryBank (a user and an AI companion), and an agent's task turn with a tool call. The
turns are said on Wednesday 2026-12-02, 09:30 in Shanghai."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory.extraction import MAX_FACT_CHARS, ExtractedFact, RuleExtractor, SourceEvent
from memory.extraction.rules import MAX_TOOL_FACT_CHARS

pytestmark = pytest.mark.anyio

SAID = datetime(2026, 12, 2, 9, 30, tzinfo=ZoneInfo("Asia/Shanghai"))
RULES = RuleExtractor()


def event(id: str, type: str, content: str, **fields: object) -> SourceEvent:
    return SourceEvent(id, type, content, fields.pop("at", SAID), **fields)  # type: ignore[arg-type]


def extract(*events: SourceEvent) -> list[ExtractedFact]:
    return RULES.extract_sync(events)


def contents(facts: list[ExtractedFact]) -> list[str]:
    return [f.content for f in facts]


def spoken(turns: list[tuple[str, str | None, str]]) -> list[ExtractedFact]:
    """The facts of user messages, each turn (event id, speaker, text)."""
    return extract(*(event(i, "user_message", text, speaker=who) for i, who, text in turns))


def test_the_flight_request_keeps_the_route_the_absolute_date_and_the_airline_preference_with_provenance() -> None:
    facts = extract(event("e1", "user_message", "帮我查一下北京到上海的航班，要明天上午的，最好国航"))
    assert contents(facts) == ["用户请助手查北京到上海的航班，要明天（2026-12-03）上午的，最好国航", "用户偏好国航"]
    assert [f.kind for f in facts] == ["episodic", "semantic"]
    assert all(f.source_event_ids == ("e1",) and f.occurred_at == SAID for f in facts)


CHIT_CHAT = ["ok", "好的", "哈哈哈", "Thanks!", "谢谢你！", "Hey Mel! Good to see you!", "Bye! Talk to you soon!"]
CHIT_CHAT += [
    "明天见！",
    "Congrats, Melanie! Keep up the great work!",
    "不用谢，祝你顺利！",
    "👍",
    "Wow, that's cool, Caroline!",
]


@pytest.mark.parametrize("chat", CHIT_CHAT)
def test_chit_chat_gives_no_fact(chat: str) -> None:
    assert extract(event("e1", "user_message", chat)) == []


def test_locomo_like_turns_keep_the_facts_with_the_speaker_named_and_the_dates_absolute() -> None:
    turns = [
        ("D1:1", "Caroline", "Hey Mel! Good to see you! How have you been?"),
        ("D1:2", "Melanie", "Hey Caroline! Good to see you! I'm swamped with the kids & work. What's up with you?"),
        ("D1:3", "Caroline", "I went to a LGBTQ support group yesterday and it was so powerful."),
        ("D1:14", "Melanie", "Yeah, I painted that lake sunrise last year! It's special to me."),
        (
            "D2:7",
            "Melanie",
            "My kids are so excited about summer break! We're thinking about going camping next month.",
        ),
        ("D4:3", "Caroline", "This necklace is a gift from my grandma in my home country, Sweden."),
    ]
    facts = spoken(turns)
    assert contents(facts) == [
        "Melanie is swamped with the kids & work.",
        "Caroline went to a LGBTQ support group yesterday (2026-12-01) and it was so powerful.",
        "Melanie painted that lake sunrise last year (2025)! It's special to Melanie.",
        "Melanie's kids are so excited about summer break!",
        "Melanie and others are thinking about going camping next month (2027-01).",
        "This necklace is a gift from Caroline's grandma in Caroline's home country, Sweden.",
    ]
    assert [f.source_event_ids for f in facts] == [("D1:2",), ("D1:3",), ("D1:14",), ("D2:7",), ("D2:7",), ("D4:3",)]


NOT_ON_THEIR_OWN = [
    ("Gina", "I bet you feel great knowing your students are doing so well."),  # "you": a listener it cannot name
    ("Gina", "So glad you have Jon in your corner!"),
    ("Jon", "Exploring new cities is always so much fun."),  # about nobody
    (None, "Exploring new cities is always so much fun."),
    ("Jon", "Wow, awesome news that you two are getting along!"),  # a fragment once the small talk is cut
    ("Melanie", "It really helps me reset and recharge."),  # what helps is in the turn before
    ("Maria", "They're always there for me and my family."),
    ("Tim", "This is my book collection so far."),
    ("Nate", "That's what I like to hear!"),
    ("John", "He really taught me the importance of unconditional love and loyalty."),
]


@pytest.mark.parametrize(("speaker", "said"), NOT_ON_THEIR_OWN)
def test_a_statement_that_does_not_stand_on_its_own_gives_no_fact(speaker: str | None, said: str) -> None:
    assert extract(event("e1", "user_message", said, speaker=speaker)) == []


def test_a_statement_about_its_speaker_or_someone_named_stands_on_its_own() -> None:
    said = [
        ("e1", "Joanna", "I finally finished my first screenplay last Friday."),
        ("e2", "Jon", "Dancing always makes me feel alive."),
        ("e3", None, "I told you I am vegetarian, remember that."),  # an agent's user: "you" is the assistant
        ("e4", "Nate", "Star Wars never gets old."),
    ]
    assert contents(spoken(said)) == [
        "Joanna finally finished Joanna's first screenplay last Friday (2026-11-27).",
        "Dancing always makes Jon feel alive.",
        "The user told you the user is vegetarian, remember that.",
        "Star Wars never gets old.",
    ]


def test_an_it_for_the_clause_after_it_or_before_whose_thing_it_is_or_a_demonstrative_before_a_noun_stays() -> None:
    said = [
        ("e1", "Caroline", "It's great to see how far LGBTQ rights have come."),
        ("e2", "Jon", "It takes courage to share my own story with strangers."),
        ("e3", "Gina", "This hoodie isn't for sale, it's from my own collection."),
        ("e4", "Maria", "It is our anniversary today!"),  # "it" before whose thing it is
        ("e5", "Tim", "It's Sarah's wedding on Saturday."),
    ]
    assert contents(spoken(said)) == [
        "It's great to see how far LGBTQ rights have come.",
        "It takes courage to share Jon's own story with strangers.",
        "This hoodie isn't for sale, it's from Gina's own collection.",
        "It is Maria's anniversary today (2026-12-02)!",
        "It's Sarah's wedding on Saturday (2026-12-05).",
    ]


def test_memorybank_like_turns_keep_the_users_facts_in_chinese() -> None:
    facts = extract(
        event("q1", "user_message", "你好，我叫张曼婷，很高兴认识你。"),
        event("a1", "assistant_message", "你好，张曼婷，我是你的AI伴侣，有什么能帮到你的吗？"),
        event("q2", "user_message", "我很喜欢绘画、弹钢琴和品茶，你觉得有什么好的书可以推荐给我吗？"),
        event(
            "a2",
            "assistant_message",
            "那我推荐《小王子》和《傲慢与偏见》，这两本书都非常有趣。如果你有其他需求，可以随时和我说。",
        ),
        event("q3", "user_message", "最近我在学做菜，昨天晚上我做了一道宫保鸡丁，味道还不错。我们明天再聊。"),
    )
    assert contents(facts) == [
        "用户叫张曼婷。",
        "用户很喜欢绘画、弹钢琴和品茶",
        "用户问：“你觉得有什么好的书可以推荐给我吗？”",
        "那助手推荐《小王子》和《傲慢与偏见》，这两本书都非常有趣。",
        "最近用户在学做菜，昨天（2026-12-01）晚上用户做了一道宫保鸡丁，味道还不错。",
    ]
    assert [f.source_event_ids[0] for f in facts] == ["q1", "q2", "q2", "a2", "q3"]


def test_preferences_habits_and_traits_are_semantic_and_events_and_plans_episodic() -> None:
    text = (
        "I usually go running every morning. I hate coffee. I'm allergic to peanuts. 我习惯早上喝茶。我不吃辣。"
        "我明天要去上海出差。I'm going to Rome next week. I bought a new car yesterday."
    )
    facts = extract(event("e1", "user_message", text))
    assert [(f.content, f.kind) for f in facts] == [
        ("The user usually goes running every morning.", "semantic"),
        ("The user hates coffee.", "semantic"),
        ("The user is allergic to peanuts.", "semantic"),
        ("用户习惯早上喝茶。", "semantic"),
        ("用户不吃辣。", "semantic"),
        ("用户明天（2026-12-03）要去上海出差。", "episodic"),
        ("The user is going to Rome next week (week of 2026-12-07).", "episodic"),
        ("The user bought a new car yesterday (2026-12-01).", "episodic"),
    ]


def test_a_users_requests_are_rewritten_as_statements_and_a_preference_in_one_stands_alone() -> None:
    facts = extract(
        event(
            "e1",
            "user_message",
            "Can you recommend a good Italian restaurant in Boston? Please book a table at Nobu for 8pm, "
            "preferably a window table. Remind me to call Mom tomorrow.",
        ),
        event("e2", "user_message", "你能帮我推荐几本关于绘画的书吗？给我订一张后天去杭州的高铁票，最好是靠窗的座位。"),
    )
    assert [(f.content, f.kind) for f in facts] == [
        ("The user asked the assistant to recommend a good Italian restaurant in Boston.", "episodic"),
        ("The user asked the assistant to book a table at Nobu for 8pm, preferably a window table.", "episodic"),
        ("The user prefers a window table.", "semantic"),
        ("The user asked the assistant to remind the user to call Mom tomorrow (2026-12-03).", "episodic"),
        ("用户请助手推荐几本关于绘画的书", "episodic"),
        ("用户请助手订一张后天（2026-12-04）去杭州的高铁票，最好是靠窗的座位", "episodic"),
        ("用户偏好靠窗的座位", "semantic"),
    ]


def test_a_question_that_asks_for_nothing_is_dropped_but_its_leading_statement_kept() -> None:
    facts = extract(
        event("e1", "user_message", "Did you hear any inspiring stories?", speaker="Melanie"),
        event("e2", "user_message", "I'm getting creative too, just learning the piano. What made you try it?"),
    )
    assert contents(facts) == ["The user is getting creative too, just learning the piano."]


# LoCoMo dev, conversation 3 (Maria and John) and conversation 1: a request or a question put to the other person
BETWEEN_PEOPLE = [
    ("D1:9", "Maria", "That's great, John! Can you tell me what got you interested in those topics?"),
    ("D1:10", "John", "Sure! I grew up in a rough neighborhood. Here's a pic of a school I visited last year."),
    ("D19:4", "Maria", "How did the extra funding help the school?"),
    ("D13:4", "Melanie", "I love animals! Can you show me one of Oscar? I'd love to see him!"),
]


def test_between_people_a_request_or_question_to_the_other_is_no_fact_and_their_statements_stay() -> None:
    assert contents(spoken(BETWEEN_PEOPLE)) == [
        "John grew up in a rough neighborhood.",
        "Here's a pic of a school John visited last year (2025).",
        "Melanie loves animals!",
        "Melanie would love to see him!",
    ]


def test_with_an_assistant_present_a_named_users_request_is_still_put_to_the_assistant() -> None:
    facts = extract(
        event("u1", "user_message", "Can you book a table at Nobu for 8pm?", speaker="Dana"),
        event("u2", "user_message", "Please find me a vegetarian place nearby instead.", speaker="Lee"),
        event("a1", "assistant_message", "I booked a table at Nobu for 8pm."),
    )
    assert contents(facts)[:2] == [
        "Dana asked the assistant to book a table at Nobu for 8pm.",
        "Lee asked the assistant to find Lee a vegetarian place nearby instead.",
    ]


def test_the_assistant_keeps_what_it_did_for_the_user_and_drops_pleasantries_advice_and_questions() -> None:
    facts = extract(
        event(
            "a1",
            "assistant_message",
            "Sure! I booked CA1501 for you, departing at 08:00 tomorrow. I hope this helps! "
            "Would you like me to book a hotel too? You could also try the lounge. Happy to help.",
        ),
        event(
            "a2",
            "assistant_message",
            "好的，我已经帮你订了明天上午8点的国航CA1501航班。还需要我帮你订酒店吗？祝你旅途愉快！",
        ),
        event("a3", "assistant_message", "我当然也喜欢读小说了，最近我在读一本叫做《1984》的小说。"),
    )
    assert contents(facts) == [
        "The assistant booked CA1501 for the user, departing at 08:00 tomorrow (2026-12-03).",
        "助手已经帮用户订了明天（2026-12-03）上午8点的国航CA1501航班。",
    ]


def test_generic_advice_from_the_assistant_is_no_fact_even_with_a_time_phrase() -> None:
    advice = "放松一下休息是非常重要的，尤其是在周末。Reading is a great way to relax this weekend."
    assert extract(event("a1", "assistant_message", advice)) == []


def test_the_assistant_names_the_user_when_the_batch_knows_who_they_are() -> None:
    facts = extract(
        event("u1", "user_message", "Book me the 8am flight to Boston please.", speaker="Dana"),
        event("a1", "assistant_message", "I booked the 8am flight to Boston for you."),
    )
    assert contents(facts) == [
        "Dana asked the assistant to book Dana the 8am flight to Boston please.",
        "The assistant booked the 8am flight to Boston for Dana.",
    ]


def test_a_tool_call_and_its_result_become_one_fact_citing_both_events() -> None:
    later = SAID + timedelta(seconds=2)
    facts = extract(
        event("u1", "user_message", "帮我查一下北京到上海的航班"),
        event("c1", "tool_call", '{"from": "PEK", "to": "SHA"}', call_id="k1", tool="search_flights"),
        event("s1", "system", "tool budget: 3 calls"),
        event(
            "r1",
            "tool_result",
            '{"results": 3, "cheapest": "CA1501 at 08:00"}',
            call_id="k1",
            tool="search_flights",
            at=later,
        ),
    )
    assert contents(facts) == [
        "用户请助手查北京到上海的航班",
        "The assistant called search_flights (from=PEK, to=SHA): results=3, cheapest=CA1501 at 08:00",
    ]
    assert facts[1].source_event_ids == ("c1", "r1")
    assert facts[1].occurred_at == later and facts[1].kind == "episodic"


def test_a_long_tool_result_is_cut_with_an_ellipsis_and_an_unpaired_call_or_result_stands_alone() -> None:
    facts = extract(
        event("c1", "tool_call", "fetch the page", call_id="k1", tool="web"),
        event("r1", "tool_result", "lorem ipsum " * 200, call_id="k1", tool="web"),
        event("c2", "tool_call", '{"query": "hotels in Paris"}', call_id="k2", tool="search_hotels"),
        event("r3", "tool_result", '["Hotel A", "Hotel B"]', call_id="k3", tool="search_hotels"),
    )
    assert len(facts[0].content) == MAX_TOOL_FACT_CHARS and facts[0].content.endswith("…")
    assert facts[0].content.startswith("The assistant called web (fetch the page): lorem ipsum")
    assert [(f.content, f.source_event_ids) for f in facts[1:]] == [
        ("The assistant called search_hotels (query=hotels in Paris)", ("c2",)),
        ('search_hotels returned: ["Hotel A","Hotel B"]', ("r3",)),
    ]


def test_system_events_are_skipped() -> None:
    assert extract(event("s1", "system", "You are a helpful assistant. I like rules and I will follow them.")) == []


def test_a_sentence_that_opens_with_a_pronoun_is_joined_to_the_fact_before_it() -> None:
    facts = extract(event("e1", "user_message", "I adopted a puppy last week. His name is Max. Rain fell."))
    assert contents(facts) == ["The user adopted a puppy last week (week of 2026-11-23). His name is Max."]


def test_a_fact_is_its_sentence_plus_the_date_written_after_its_time_phrase_and_no_longer() -> None:
    sentence = "The meeting with Dr. Li moved to tomorrow at 3pm."
    [fact] = extract(event("e1", "user_message", sentence))
    assert fact.content == "The meeting with Dr. Li moved to tomorrow (2026-12-03) at 3pm."
    assert len(fact.content) == len(sentence) + len(" (2026-12-03)")


def test_identical_facts_of_a_batch_are_merged_with_all_their_sources_and_the_latest_time() -> None:
    later = SAID + timedelta(minutes=5)
    facts = extract(event("e1", "user_message", "I like jazz."), event("e2", "user_message", "I like jazz.", at=later))
    assert [(f.content, f.source_event_ids, f.occurred_at) for f in facts] == [
        ("The user likes jazz.", ("e1", "e2"), later)
    ]


def test_relative_dates_use_the_local_day_of_the_event() -> None:
    late_in_utc = datetime(2026, 12, 2, 23, 30, tzinfo=ZoneInfo("UTC"))  # already Dec 3 in Shanghai
    [utc] = extract(event("e1", "user_message", "I fly to Tokyo tomorrow.", at=late_in_utc))
    [shanghai] = extract(
        event("e1", "user_message", "I fly to Tokyo tomorrow.", at=late_in_utc.astimezone(SAID.tzinfo))
    )
    assert utc.content == "The user flies to Tokyo tomorrow (2026-12-03)."
    assert shanghai.content == "The user flies to Tokyo tomorrow (2026-12-04)."


async def test_extract_and_run_give_the_same_facts_and_run_says_the_rules_made_them() -> None:
    events = [event("e1", "user_message", "我下周三要去北京出差，最好住在国贸附近。")]
    extraction = await RULES.run(events)
    assert extraction.method == "rules" and extraction.fallback_reason is None
    assert list(extraction.facts) == await RULES.extract(events) == RULES.extract_sync(events)


HOSTILE = {
    "one letter": "a" * 8000,
    "full stops": "。" * 8000,
    "dots": "." * 8000,
    "no punctuation": "word " * 1600,
    "first person": "I " * 4000,
    "wo": "我" * 8000,
    "commas": "a, " * 2666,
    "dates": "昨天上周三天前" * 1100,
    "requests": "帮我" * 4000,
    "you": "you " * 2000,
    "mixed": "我明天去北京。I like Paris! " * 300,
}


@pytest.mark.parametrize("kind", ["user_message", "assistant_message"])
@pytest.mark.parametrize("text", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_messages_give_output_bounded_by_their_size(text: str, kind: str) -> None:
    """Linear work shows in a linear output: every sentence is at most `MAX_SENTENCE_CHARS` and yields at most a
    couple of facts of bounded size (the suite's `timeout` is the guard against a quadratic scan)."""
    facts = extract(event("e1", kind, text))
    assert sum(len(f.content) for f in facts) <= 2 * len(text)
    assert all(len(f.content) <= MAX_FACT_CHARS for f in facts)


PIECES = [
    "I ",
    "my ",
    "you ",
    "we ",
    "我",
    "你",
    "我们",
    "明天",
    "昨天",
    "上周三",
    "tomorrow ",
    "last week ",
    ". ",
    "。",
]
PIECES += [
    "? ",
    "？",
    ", ",
    "，",
    "最好",
    "帮我",
    "Can you ",
    "please ",
    "Caroline ",
    "CA1501 ",
    "like ",
    "ok ",
    "哈哈",
]
PIECES += ["\n", "...", "“", "”", "(", ")", "3 days ago ", "in 2 days ", "e.g. ", "Dr. ", "3.14 ", "http://a.b/c?d "]
FRAGMENTS = st.sampled_from(PIECES)
TEXTS = st.one_of(st.text(max_size=2000), st.lists(FRAGMENTS, max_size=120).map("".join))
TYPES = st.sampled_from(["user_message", "assistant_message", "tool_call", "tool_result", "system"])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(TYPES, TEXTS, st.sampled_from([None, "k1", "k2"])), min_size=1, max_size=4))
def test_any_text_never_raises_and_every_fact_cites_only_given_events(batch: list[tuple[str, str, str | None]]) -> None:
    events = [event(f"e{i}", kind, text, call_id=call) for i, (kind, text, call) in enumerate(batch)]
    ids = {e.id for e in events}
    for fact in extract(*events):
        assert fact.source_event_ids and set(fact.source_event_ids) <= ids
        assert 0 < len(fact.content) <= MAX_FACT_CHARS
        assert fact.kind in ("episodic", "semantic")

"""Write pipeline step 2: only prospective, time-bound statements (plans, appointments, deadlines, reminders) expire,
at the end of the day they name, in the turn's time zone."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from memory.pipeline.expiry import TimeBound, find_expiry

MONDAY = datetime(2026, 5, 4, 10, 30, tzinfo=UTC)  # Monday 4 May 2026
SHANGHAI = timezone(timedelta(hours=8))


def end_of(year: int, month: int, day: int, tz: timezone = UTC) -> datetime:
    return datetime(year, month, day, tzinfo=tz) + timedelta(days=1)


def expiry_of(content: str, now: datetime = MONDAY) -> TimeBound:
    """The expiry `find_expiry` finds in `content` said at `now`; there must be one."""
    bound = find_expiry(content, now)
    assert bound is not None
    return bound


@pytest.mark.parametrize(
    ("content", "expires"),
    [
        ("I have a meeting tomorrow", end_of(2026, 5, 5)),
        ("Dinner with Ana tonight", end_of(2026, 5, 4)),
        ("I need to finish the slides today", end_of(2026, 5, 4)),
        ("The day after tomorrow I fly to Rome", end_of(2026, 5, 6)),
        ("Next Wednesday is the design review", end_of(2026, 5, 13)),
        ("The report is due on Friday", end_of(2026, 5, 8)),
        ("Send it by Thursday", end_of(2026, 5, 7)),
        ("We will go hiking this weekend", end_of(2026, 5, 10)),
        ("The contractor comes next week", end_of(2026, 5, 17)),
        ("The parcel arrives in 3 days", end_of(2026, 5, 7)),
        ("In two weeks I start the new job", end_of(2026, 5, 18)),
        ("The dentist appointment is on May 5", end_of(2026, 5, 5)),
        ("Deadline: 2026-05-20", end_of(2026, 5, 20)),
        ("The visa runs out on 12 June", end_of(2026, 6, 12)),
        ("The conference is on May 5, 2027", end_of(2027, 5, 5)),
    ],
)
def test_english_time_phrases_expire_at_the_end_of_the_day_they_name(content: str, expires: datetime) -> None:
    assert expiry_of(content).expires_at == expires


@pytest.mark.parametrize(
    ("content", "expires"),
    [
        ("明天下午三点开会", end_of(2026, 5, 5, SHANGHAI)),
        ("后天去北京出差", end_of(2026, 5, 6, SHANGHAI)),
        ("大后天交房租", end_of(2026, 5, 7, SHANGHAI)),
        ("今晚要和朋友吃火锅", end_of(2026, 5, 4, SHANGHAI)),
        ("下周三有设计评审", end_of(2026, 5, 13, SHANGHAI)),
        ("周五前提交报告", end_of(2026, 5, 8, SHANGHAI)),
        ("这个周末去爬山", end_of(2026, 5, 10, SHANGHAI)),
        ("三天后出发", end_of(2026, 5, 7, SHANGHAI)),
        ("5月5日交报告", end_of(2026, 5, 5, SHANGHAI)),
        ("2026年6月1日搬家", end_of(2026, 6, 1, SHANGHAI)),
        ("下个月装修", end_of(2026, 6, 30, SHANGHAI)),
    ],
)
def test_chinese_time_phrases_expire_at_the_end_of_that_day_in_the_turns_time_zone(
    content: str, expires: datetime
) -> None:
    assert expiry_of(content, MONDAY.astimezone(SHANGHAI)).expires_at == expires


@pytest.mark.parametrize(
    "content",
    [
        "I went to the gym today",
        "Yesterday I met Ana",
        "I was born on May 5",
        "My birthday is on May 5",
        "I play tennis on Sundays",
        "Every Monday I call my mother",
        "The launch was on 2025-05-05",
        "The kickoff was on May 1",
        "They may 5 times a day",
        "The user lives in Lisbon",
        "今天我去了健身房",
        "我的生日是5月5日",
        "每周三练瑜伽",
    ],
)
def test_past_recurring_and_timeless_statements_get_no_expiry(content: str) -> None:
    assert find_expiry(content, MONDAY) is None


@pytest.mark.parametrize(
    "content",
    [
        "Guess what I did this week? I applied to adoption agencies!",
        "I won my fourth tournament on Friday!",
        "This week has been swamped with exams for me",
        "I would get two turtles today if I could!",
        "It's still a part of my writing today.",
        "这周我已经交了报告",
    ],
)
def test_a_day_that_may_be_today_or_past_sets_nothing_in_a_past_conditional_or_ongoing_sentence(content: str) -> None:
    assert find_expiry(content, MONDAY) is None


@pytest.mark.parametrize(
    ("content", "expires"),
    [
        ("Busy morning. I have a meeting today.", end_of(2026, 5, 4)),
        ("Sounds good to me; the review is on Friday", end_of(2026, 5, 8)),
        ("I finally got the tickets for the show tomorrow!", end_of(2026, 5, 5)),
        ("太好了！我明天要去北京。", end_of(2026, 5, 5)),
    ],
)
def test_the_tense_that_counts_is_the_phrases_own_sentence_and_future_only_phrases_ignore_it(
    content: str, expires: datetime
) -> None:
    assert expiry_of(content).expires_at == expires


@pytest.mark.parametrize(
    "content",
    [
        # a past event beside the plan (LoCoMo and MemoryBank turns)
        "I went to the store. I have a meeting today.",
        "On Friday, I got great news - I'm in the study abroad program! Next month, I'm off to Ireland.",
        "I rehearsed with a small group of dancers after work. We perform at a festival next month.",
        "我昨天去了医院。下周还要复查。",
        # a lasting fact: a preference, an identity, a habit
        "Love experimenting with spices. Planning a trip to Universal Studios next month.",
        "It's Seattle, I'm stoked for my game there next month! It's one of my favorite cities.",
        "I'm a shooting guard for the team and our season opener is next week - so excited!",
        "I want to go to Spain next month. I've always loved Spanish culture, music, and cuisine.",
        "我下个月想去西班牙旅行。我一直很喜欢西班牙的文化，音乐和美食。",
        # an event or a project in the plan's own sentence (LoCoMo's own notes)
        "Tim gets accepted to a Study Abroad program in school and will leave next month to spend the semester.",
        "Jon is working on opening a dance studio, with the official opening night being tomorrow.",
        # a diet, a job or a love in the plan's own sentence (a blind-written held-out set)
        "I'm vegan, so for the team dinner on Thursday I'll have to check the menu first.",
        "I teach 8th grade math and parent conferences are next week, so I'm swamped.",
        "我在医院急诊科当护士，明天又是夜班。",
        "我超爱成都，下个月又要去了。",
        "User is allergic to penicillin and has a minor surgery scheduled for next Thursday.",
        "用户对青霉素过敏,下周四要做一个小手术。",
        "我负责我们组的线上值班,下周一轮到我",
        # a family member, a pet, a possession by make or year, a feeling (a third blind-written set)
        "My 2016 Civic is going in for new brakes tomorrow.",
        "我刚提的比亚迪海豹，下周六要去上牌。",
        "我家那只橘猫周三要去拔牙。",
        "我女儿朵朵下周一就上幼儿园了，有点舍不得😢",
        "Honestly I'm dreading the performance review next week.",
        "下周要去见家长，紧张得睡不着😣",
    ],
)
def test_a_plan_beside_a_past_event_or_a_lasting_fact_never_expires_for_hiding_it_would_hide_them(
    content: str,
) -> None:
    assert find_expiry(content, MONDAY) is None


@pytest.mark.parametrize(
    "content",
    [
        "Hello, friend. Today I want to talk to you about my travel plans.",
        "No, that's it for today. Let's talk again tomorrow.",
        "I'm going to have dinner now and will talk to you again tomorrow.",
        "Let's continue our conversation tomorrow. Good night, Frank.",
        "你好，朋友。今天想跟你聊聊我的健身计划。",
        "没关系，跟你聊天很开心。明天继续和你聊天。",
        "你好，AI伴侣。今天我有一个小问题想要请教你。",
    ],
)
def test_talk_about_the_conversation_itself_is_no_plan(content: str) -> None:
    assert find_expiry(content, MONDAY) is None


@pytest.mark.parametrize(
    "content",
    [
        "周末出去旅游是一个非常好的方式，有助于放松身心。",
        "星期天去看电影是一个很好的选择。",
        "Going hiking this weekend is a great idea.",
        "Marco wants to leave for the airport at 5am tomorrow, which I think is way too early.",
        "我觉得小李下周去西藏有点冒险。",
        "User thinks his brother's plan to quit his job next month and travel is reckless.",
        "用户觉得她弟弟下个月裸辞去旅行的计划太冲动了。",
    ],
)
def test_an_opinion_about_a_plan_is_not_the_writer_s_plan(content: str) -> None:
    assert find_expiry(content, MONDAY) is None


@pytest.mark.parametrize(
    "content",
    [
        "Rome wasn't built in a day so keep pushing on!",
        "I finished the whole puzzle in 3 days.",
        "有时我周末会去唱片店淘CD。",
        "Sometimes I go climbing on the weekend.",
        "用户一般周六早上八点去超市买菜,因为那时候人最少。",
        "welp, tomorrow is another day. the migration broke prod twice today",
        "唉,明日复明日,明日何其多,这篇论文我已经拖了一个月了",
        "明天聊~",
        "Today I plan to go out to dinner. Birthdays are a time for contemplating life.",
    ],
)
def test_a_duration_an_idiom_or_a_habit_is_no_plan(content: str) -> None:
    assert find_expiry(content, MONDAY) is None


@pytest.mark.parametrize(
    ("content", "expires"),
    [
        ("I'll call you back in 3 days.", end_of(2026, 5, 7)),
        ("今天是星期天，我准备去看电影。", end_of(2026, 5, 4)),
        ("Today is Sunday and I'm planning to watch a movie. Any recommendations?", end_of(2026, 5, 4)),
        ("好的，谢谢你的建议，那今天晚上我去和朋友一起看电影。再见！", end_of(2026, 5, 4)),
        # a weekday of next week, a day of next month: that day, not the end of the week or month
        ("Job interview at Stripe on Tuesday next week, 2pm.", end_of(2026, 5, 12)),
        ("The team offsite is Wednesday and Thursday next week, in Napa.", end_of(2026, 5, 14)),
        ("下个月五号要还信用卡。", end_of(2026, 6, 5)),
        # the week after next, a day of this month (the second blind set)
        ("下下周三学校开家长会,我得请半天假", end_of(2026, 5, 20)),
        ("本月20号要去办签证,材料还没准备齐", end_of(2026, 5, 20)),
    ],
)
def test_plans_beside_chit_chat_and_questions_still_expire(content: str, expires: datetime) -> None:
    assert expiry_of(content).expires_at == expires


def test_of_several_days_the_latest_wins_and_the_rule_and_phrase_are_reported() -> None:
    bound = find_expiry("Pack tonight, the flight is the day after tomorrow", MONDAY)

    assert bound is not None
    assert (bound.rule, bound.phrase, bound.day.isoformat()) == (
        "day_after_tomorrow",
        "the day after tomorrow",
        "2026-05-06",
    )


def test_a_date_without_a_year_means_the_nearest_one_so_january_said_in_december_is_next_year() -> None:
    december = datetime(2026, 12, 20, 9, 0, tzinfo=UTC)

    assert expiry_of("The flight is on Jan 3", december).expires_at == end_of(2027, 1, 3)


def test_next_weekday_means_that_day_of_the_following_week_even_late_in_the_week() -> None:
    saturday = datetime(2026, 5, 9, 12, 0, tzinfo=UTC)

    assert expiry_of("next Monday", saturday).expires_at == end_of(2026, 5, 11)
    assert expiry_of("下周一", saturday).expires_at == end_of(2026, 5, 11)


# -- issue #13: only a statement about a time after it expires ------------------------------------------------
@pytest.mark.parametrize(
    ("content", "expires"),
    [
        ("I have a meeting tomorrow", end_of(2026, 5, 5)),
        ("The report is due Friday", end_of(2026, 5, 8)),
        ("Remind me on 5 May to call the bank", end_of(2026, 5, 5)),
        ("I'm planning a fundraiser later this month", end_of(2026, 5, 31)),
        ("我下周三要去北京出差", end_of(2026, 5, 13)),
        ("报告周五前交", end_of(2026, 5, 8)),
        ("提醒我5月6日给银行打电话", end_of(2026, 5, 6)),
        ("今天是星期一，我打算晚上去看电影。", end_of(2026, 5, 4)),
    ],
)
def test_plans_appointments_deadlines_and_reminders_about_a_later_time_expire(content: str, expires: datetime) -> None:
    assert expiry_of(content).expires_at == expires


@pytest.mark.parametrize(
    "content",
    [
        "[1:10 pm on 27 March, 2023] Andrew: So, I started a new job as a Financial Analyst",
        "[10:31 am on 4 May, 2026] Caroline: I love the colors of this painting",
        "2026-05-04 10:30 Andrew: the weather is lovely",
        "[2026年5月4日 10:30] 小王: 我喜欢徒步和攀岩",
        "On 4 May, 2026 we talk about painting",
        "The plan is on 4 May",
    ],
)
def test_a_timestamp_header_or_a_date_on_the_statements_own_day_sets_nothing(content: str) -> None:
    assert find_expiry(content, MONDAY) is None


@pytest.mark.parametrize(
    "content",
    [
        "I started a new job on 27 March",
        "我3月27日入职了",
        "I've been busy this week",
        "The weather is really bad today",
        "我今天第一次跟你聊天",
        "今天是星期五，我感觉很累",
        "I've been applying for jobs recently, the interview is on Friday",
    ],
)
def test_past_or_ongoing_events_and_lasting_facts_set_nothing(content: str) -> None:
    assert find_expiry(content, MONDAY) is None


@pytest.mark.parametrize(
    "content",
    [
        "He said he'd come tomorrow",
        "6 of them said they'd want to do it again next month!",
        'My boss: "the review is next Wednesday"',
        "她说明天会来",
        "他告诉我下周三要开会",
        "“明天要下雨”是他的口头禅",
    ],
)
def test_dates_inside_quoted_or_reported_text_set_nothing(content: str) -> None:
    assert find_expiry(content, MONDAY) is None


@pytest.mark.parametrize(
    "content",
    ["See you tomorrow!", "Talk to you tomorrow", "Have a great weekend, see you next week", "明天再聊", "明天见！"],
)
def test_farewells_are_chit_chat_not_plans(content: str) -> None:
    assert find_expiry(content, MONDAY) is None


@pytest.mark.parametrize(
    "content",
    [
        "Every Monday I have a team meeting",
        "I usually go to the gym on Friday",
        "每周一要开例会",
        "我经常周末去爬山",
    ],
)
def test_recurring_times_set_nothing(content: str) -> None:
    assert find_expiry(content, MONDAY) is None


@pytest.mark.parametrize("content", ["Are you free tomorrow?", "明天有空吗？", "Do you have any plans this weekend?"])
def test_a_question_about_a_later_time_is_not_the_writers_plan(content: str) -> None:
    assert find_expiry(content, MONDAY) is None


def test_a_question_asking_for_a_reminder_is_a_reminder() -> None:
    assert expiry_of("Can you remind me tomorrow to call the bank?").expires_at == end_of(2026, 5, 5)


def test_chinese_sentences_end_at_their_own_marks_so_a_later_question_does_not_cancel_a_plan() -> None:
    assert expiry_of("我明天要去北京。你去过北京吗？").day.isoformat() == "2026-05-05"


@pytest.mark.parametrize(
    ("content", "expires"),
    [
        ("I'll be in Tokyo for a conference May 14–18.", end_of(2026, 5, 18)),
        ("Out of office May 20 thru 22", end_of(2026, 5, 22)),
        ("下下周一到周三去深圳出差", end_of(2026, 5, 20)),
        ("下下周要去上海出差", end_of(2026, 5, 24)),
        ("I have exams the week after next", end_of(2026, 5, 24)),
        ("我下周二到周四出差", end_of(2026, 5, 14)),
        ("Need to pay the electricity bill by the 5th of next month.", end_of(2026, 6, 5)),
        ("Plan for tomorrow since I'll forget: leave by 7:15, presentation at 9.", end_of(2026, 5, 5)),
        ("月底前要把报销单交上去，不然就要拖到下个月", end_of(2026, 5, 31)),
        ("Submit the grant by Friday, otherwise it waits until next month", end_of(2026, 5, 8)),
    ],
)
def test_a_range_ends_on_its_last_day_and_what_happens_otherwise_is_no_plan(content: str, expires: datetime) -> None:
    assert expiry_of(content).expires_at == expires


@pytest.mark.parametrize(
    "content",
    [
        # the start of a lasting state
        "As of June 1 the Pro tier is $35 a month.",
        "通知：例会从下周起固定改到周二下午两点。",
        # a possession, a health condition, an ongoing state or a past event in the plan's own sentence (a fourth
        # blind-written set)
        "User drives a 2009 Subaru Outback that needs new brakes before next month's road trip.",
        "用户开一辆2020款比亚迪汉EV，下周要去换轮胎。",
        "我高血压，医生让我少吃盐，下周还得去复查",
        "我妈下周三做白内障手术，我请了三天假陪她",
        "User bought a Tesla Model 3 last month and is getting a wall charger installed tomorrow.",
        "User took the bar exam in July and gets results next Friday.",
        "用户上个月拿到字节的offer，下周一正式入职。",
        "用户养了一只金毛叫旺财，下周六要带它去打疫苗。",
        "User is training for the marathon on May 24 and currently runs about 50 miles a week.",
    ],
)
def test_a_plan_beside_the_start_of_a_lasting_state_a_possession_or_a_past_event_is_no_plan(content: str) -> None:
    assert find_expiry(content, MONDAY) is None

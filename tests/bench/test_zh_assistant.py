"""`bench.zh_assistant`: the Chinese personal-assistant set is well formed (every answer a message of the same user,
written before the question is asked; a blind part apart from the dev part; at least 300 questions), and the report
computes recall at each cut per part from the ranks it is given."""

from __future__ import annotations

from bench import zh_assistant


def test_the_set_holds_over_300_questions_each_answered_by_an_earlier_message_of_the_same_user() -> None:
    users = zh_assistant.load()
    assert {u.part for u in users} == {"dev", "blind"}
    assert sum(len(u.questions) for u in users) >= 300
    assert sum(len(u.questions) for u in users if u.part == "blind") >= 100
    for user in users:
        messages = {m.id: m for m in user.messages}
        assert [m.at for m in user.messages] == sorted(m.at for m in user.messages), user.id
        kinds = {q.kind for q in user.questions}
        assert kinds == {"date", "number", "person", "place", "attribute", "update"}, user.id
        for question in user.questions:
            assert question.answers and all(a in messages for a in question.answers), question.id
            assert all(messages[a].at < question.at for a in question.answers), question.id


def test_the_report_gives_recall_at_each_cut_per_part() -> None:
    ranks = {
        "BM25, character bigrams": [("dev", "date", ["m2", "m1"], ("m1",)), ("blind", "date", ["m3"], ("m3",))],
    }
    text = zh_assistant.render({"ranks": ranks, "users": 2, "messages": 3})
    assert "| BM25, character bigrams | 1 | 0.000 | 1.000 | 1.000 | 1.000 | 0.500 |" in text  # dev
    assert "| BM25, character bigrams | 1 | 1.000 | 1.000 | 1.000 | 1.000 | 1.000 |" in text  # blind

"""`bench.as_of`: the labelled update set parses into scenarios whose questions each name a version valid at a date
after it happened, in both languages and both parts; the report counts hits at 1 and 3 per group."""

from __future__ import annotations

from bench import as_of


def test_the_update_set_has_both_languages_and_a_blind_half_and_every_answer_names_a_version_valid_then() -> None:
    scenarios = as_of.load()
    assert {(s.lang, s.part) for s in scenarios} == {("en", "dev"), ("en", "blind"), ("zh", "dev"), ("zh", "blind")}
    assert sum(s.part == "blind" for s in scenarios) * 2 == len(scenarios) == 24
    for s in scenarios:
        assert [at for _, at in s.facts] == sorted(at for _, at in s.facts), s.id
        for _, at, answer in s.questions:
            assert s.facts[answer][1] <= at, s.id
            if answer + 1 < len(s.facts):
                assert at < s.facts[answer + 1][1], s.id  # still valid at the date asked about


def test_the_report_gives_hits_at_one_and_three_and_lists_the_misses() -> None:
    rows = {
        "en dev": {
            "questions": [(1, 2, "en01", "a"), (3, 1, "en01", "b"), (0, 0, "en02", "c")],
            "made": 2,
            "labelled": 3,
        }
    }
    text = as_of.render(rows)
    assert "| en dev | 3 | 0.333 | 0.667 | 0.333 | 0.667 | 2 / 3 |" in text
    assert "en01 “b”; en02 “c”" in text

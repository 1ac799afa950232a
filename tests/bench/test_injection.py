"""`bench.injection`: the labelled sets hold at least 200 ordinary memories and the attacks in both languages, in a
dev and a blind part, and the report counts marks per part and language."""

from __future__ import annotations

from bench import injection


def test_the_sets_hold_200_ordinary_memories_per_part_in_both_languages_and_attacks() -> None:
    for part in ("dev", "blind"):
        ordinary, attacks = injection.load(part, "ordinary"), injection.load(part, "attacks")
        assert len(ordinary) >= 120 and len(attacks) >= 60
        assert {item["lang"] for item in ordinary + attacks} == {"en", "zh"}
    assert len(injection.load("dev", "ordinary")) >= 200


def test_the_report_gives_false_marks_recall_and_precision() -> None:
    rows = {"dev en": {"ordinary": 4, "attacks": 2, "fp": 1, "tp": 1, "false": ["o-1 (role)"], "missed": ["a-2"]}}
    text = injection.render(rows)
    assert "| dev en | 4 | 1 (0.250) | 2 | 1 (0.500) | 0.500 |" in text
    assert "ordinary marked: o-1 (role); attacks missed: a-2." in text

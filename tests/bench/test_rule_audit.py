"""`bench.rule_audit`: a rule earns its place only where switching it off lowers a figure it was not tuned on, and
the report gives every rule its change beside the defaults."""

from __future__ import annotations

from bench import rule_audit
from bench.rule_audit import DEFAULTS, RULES, Figures


def test_a_rule_whose_absence_lowers_a_blind_figure_earns_its_place() -> None:
    changes = {"LoCoMo tuning half": 0.01, "English blind": -0.02, "Chinese blind @1": 0.004}
    assert rule_audit.verdict(changes) == "earns its place"


def test_a_rule_whose_absence_lowers_only_the_tuning_half_helps_only_what_it_was_tuned_on() -> None:
    changes = {
        "LoCoMo tuning half": -0.03,
        "Chinese dev @3": -0.01,
        "LoCoMo held-out half": 0.004,
        "English blind": 0.0,
    }
    assert rule_audit.verdict(changes) == "helps only what it was tuned on"


def test_differences_below_the_noise_are_no_effect() -> None:
    changes = {"LoCoMo tuning half": -0.004, "English blind": 0.02, "Chinese blind @3": None}
    assert rule_audit.verdict(changes) == "no effect"


def figures(locomo: float, blind: float, zh: float) -> Figures:
    return Figures(
        locomo={"conv-1": [locomo], "conv-2": [locomo], "conv-3": [locomo, 1.0]},
        blind={"blind-a": [blind, blind]},
        zh={"dev": (zh, zh), "blind": (zh, zh)},
    )


def test_the_report_gives_each_rule_its_change_from_the_defaults_and_a_verdict() -> None:
    results = {name: figures(0.5, 0.5, 0.5) for name in (DEFAULTS.name, *(rule.name for rule in RULES))}
    results[RULES[0].name] = figures(0.5, 0.4, 0.5)
    text = rule_audit.render(
        {"results": results, "locomo": ["conv-1", "conv-2", "conv-3"], "blind": {"blind-a": 2}, "load": (1.0, 1.5)}
    )
    assert text.startswith(rule_audit.BEGIN) and text.rstrip().endswith(rule_audit.END)
    assert "| (none: the defaults) | every rule as shipped | 0.500 | 0.500 | 0.500 | 0.750 | 0.500 |" in text
    assert f"| {RULES[0].name} | {RULES[0].what} | +0.000 | +0.000 | +0.000 | +0.000 | -0.100 |" in text
    assert text.count("earns its place |") == 1
    assert "blind-a (2 questions)" in text


def test_a_rule_whose_absence_lowers_one_blind_figure_and_raises_another_is_mixed() -> None:
    changes = {"English blind": -0.008, "Chinese blind @1": 0.009, "LoCoMo held-out half": 0.0}
    assert rule_audit.verdict(changes) == "mixed"

"""`bench.consolidation_words`: the report gives each set, embedder and language its false merges, pair recall and
whole groups, and lists the statements written for the blind set."""

from __future__ import annotations

from bench import consolidation_words


def test_the_report_has_a_row_per_weight_set_embedder_and_language_and_the_blind_statements() -> None:
    figures = {
        "rows": [("0.00", "no shared word, blind", "wordllama", "en", 0, 0.25, 1, 10)],
        "samples": {"en": ["The user often talks about swimming (3 mentions, Mar 2026)"]},
    }
    text = consolidation_words.render(figures)
    assert "| 0.00 | no shared word, blind | wordllama | en | 0 | 0.25 | 1 / 10 |" in text
    assert "- The user often talks about swimming (3 mentions, Mar 2026)" in text
    assert text.startswith(consolidation_words.BEGIN) and text.rstrip().endswith(consolidation_words.END)

"""The extraction-quality stage (`bench.extraction_quality`) on the LoCoMo- and MemoryBank-shaped fixture of
tests/fixtures/ (read as the stage reads the real data, the Chinese evidence from the fixture's own labels): the
figures are well formed and the raw + extracted recall runs over both kinds of memory. Nothing here asserts how
good the extractor is: that is what the stage measures on the real data (`make bench`), and it moves as the rules
change."""

from __future__ import annotations

import statistics
from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from bench import extraction_quality
from bench.extraction_figures import CONFIGS, Dataset, Figures, LanguageFigures
from bench.sections import replace_section
from gateway.evaluation import memorybank
from gateway.evaluation.locomo import truncated
from tests.fixtures import DATASETS, MEMORYBANK, MEMORYBANK_EVIDENCE

TURNS = 60
QUESTIONS = 4


def tiny(dataset: Dataset) -> Dataset:
    """The first conversation's first turns and a few questions whose evidence lies among them."""
    first = truncated(dataset.conversations[0], TURNS)
    return replace(dataset, conversations=(replace(first, questions=first.questions[:QUESTIONS]),))


@pytest.fixture(scope="module")
def datasets() -> list[Dataset]:
    english, chinese = extraction_quality.load_datasets(quick=True, root=DATASETS)
    labelled = memorybank.load(MEMORYBANK, MEMORYBANK_EVIDENCE)[: len(chinese.conversations)]
    assert [c.turns for c in labelled] == [c.turns for c in chinese.conversations]  # the stage's users, labelled
    return [tiny(english), tiny(replace(chinese, conversations=tuple(labelled)))]


@pytest.fixture(scope="module")
def figures(datasets: list[Dataset], tmp_path_factory: pytest.TempPathFactory) -> Figures:
    workdir = tmp_path_factory.mktemp("extraction")

    async def run() -> Figures:
        return await extraction_quality.measure(True, workdir, datasets)

    return anyio.run(run)


def test_both_languages_are_measured_with_their_counts(figures: Figures) -> None:
    assert [lang.key for lang in figures.languages] == ["en", "zh"]
    for lang in figures.languages:
        assert lang.conversations == 1 and 0 < lang.turns <= TURNS
        assert 0 < lang.questions <= QUESTIONS and len(lang.asked) == lang.questions
        assert lang.facts == sum(lang.kinds.values()) > 0 and set(lang.kinds) <= {"episodic", "semantic"}
        assert 0 < lang.evidence_with_fact <= lang.evidence_turns
        assert 0 < lang.turns_with_fact <= lang.turns
    english, chinese = figures.languages
    assert english.events == english.turns  # a LoCoMo turn is one user message
    assert chinese.events > chinese.turns  # a MemoryBank exchange is the user's message and the companion's reply


def test_every_recall_figure_is_a_mean_of_its_questions_between_zero_and_one(figures: Figures) -> None:
    for lang in figures.languages:
        for config in CONFIGS:
            means = lang.means(config)
            assert all(0.0 <= value <= 1.0 for value in means.values())
            assert lang.tallies[config].n == lang.questions
            per_question = statistics.fmean(a.recall(config) for a in lang.asked)
            assert means["recall@10"] == pytest.approx(per_question)


def test_the_raw_and_extracted_namespaces_answer_with_turns_and_facts_alike(figures: Figures) -> None:
    def answered(lang: LanguageFigures, config: str) -> tuple[int, int]:
        facts = sum(a.fact_hits[config] for a in lang.asked)
        return sum(a.hits[config] for a in lang.asked) - facts, facts

    for lang in figures.languages:
        for config in ("both", "apart"):
            turns, facts = answered(lang, config)
            assert turns > 0 and facts > 0, f"{lang.key} {config}: {turns} raw-turn hits and {facts} fact hits"
            assert 0.0 < lang.fact_hit_share(config) < 1.0
        assert answered(lang, "raw")[1] == 0 and answered(lang, "facts")[0] == 0
        stored = sum(lang.fact_writes[k] for k in lang.fact_writes if k != "superseded a raw turn")
        assert stored == lang.facts  # every fact was written and its outcome counted


def test_a_fact_hit_counts_for_the_dialogue_turns_it_was_extracted_from(
    datasets: list[Dataset], figures: Figures
) -> None:
    for dataset, lang in zip(datasets, figures.languages, strict=True):
        turn_ids = {t.dia_id for t in dataset.conversations[0].turns}
        ranked = {d for a in lang.asked for d in a.ranked["facts"]}
        assert ranked, f"{lang.key}: the facts alone answered nothing"
        assert ranked <= turn_ids  # event ids ("<dia_id>#user") folded back into the turn they came from


def test_the_section_reports_each_language_between_its_markers(figures: Figures, tmp_path: Path) -> None:
    out = tmp_path / "RESULTS.md"
    out.write_text("# Results\n\nkept\n", encoding="utf-8")
    replace_section(out, extraction_quality.render(figures), extraction_quality.BEGIN, extraction_quality.END)
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# Results\n\nkept\n")
    assert text.count(extraction_quality.BEGIN) == 1 and text.count(extraction_quality.END) == 1
    for lang in figures.languages:
        assert f"### {lang.label}" in text
    assert "| recall@10 |" in text and "evidence turns with a fact" in text

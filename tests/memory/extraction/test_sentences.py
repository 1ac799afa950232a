"""The text layer of the rule-based extractor: sentences, clauses and questions, in English, Chinese and mixed
text, in linear time whatever the text holds."""

from __future__ import annotations

import pytest

from memory.extraction.sentences import MAX_SENTENCE_CHARS, clause_spans, is_question, split_sentences

HOSTILE = {
    "one letter": "a" * 8000,
    "full stops": "。" * 8000,
    "dots": "." * 8000,
    "dot space": ". " * 4000,
    "no punctuation": "word " * 1600,
    "question marks": "?" * 8000,
    "quotes": '"' * 8000,
    "closers after dots": ".)" * 4000,
    "spaces then a dot": "I" + " " * 7998 + ".",
    "initials": "A. " * 2666,
}


def test_english_sentences_end_at_terminal_punctuation_but_not_after_abbreviations_decimals_or_urls() -> None:
    text = "I met Dr. Smith at 3.14 p.m. yesterday. See https://example.com/a.b?q=1 for more! Did J. K. Rowling come?"
    assert split_sentences(text) == [
        "I met Dr. Smith at 3.14 p.m. yesterday.",
        "See https://example.com/a.b?q=1 for more!",
        "Did J. K. Rowling come?",
    ]


def test_a_dot_before_a_lowercase_word_or_an_email_does_not_end_a_sentence() -> None:
    assert split_sentences("We packed tents, stoves etc. and left. Mail me at a.b@c.org now.") == [
        "We packed tents, stoves etc. and left.",
        "Mail me at a.b@c.org now.",
    ]


def test_chinese_sentences_end_at_full_width_punctuation_and_mixed_text_splits_at_both() -> None:
    assert split_sentences("你好。我叫张曼婷！你呢？我喜欢画画；也喜欢品茶") == [
        "你好。",
        "我叫张曼婷！",
        "你呢？",
        "我喜欢画画；",
        "也喜欢品茶",
    ]
    assert split_sentences("我明天去Paris。Then I fly to Rome. 然后回家") == [
        "我明天去Paris。",
        "Then I fly to Rome.",
        "然后回家",
    ]


def test_newlines_end_sentences_and_closing_quotes_stay_with_theirs() -> None:
    assert split_sentences('He said "I\'m in." Then left\nnext line') == [
        'He said "I\'m in."',
        "Then left",
        "next line",
    ]


def test_a_sentence_longer_than_the_limit_is_cut_at_a_space_near_it() -> None:
    pieces = split_sentences("word " * 300)
    assert len(pieces) == 4
    assert all(len(p) <= MAX_SENTENCE_CHARS for p in pieces)
    assert all(p.endswith("word") for p in pieces)  # cut between words


def test_clauses_are_cut_at_commas_and_semicolons_but_not_inside_numbers() -> None:
    sentence = "帮我查一下航班，要明天的，最好国航; it costs 1,000 yuan"
    assert [sentence[a:b] for a, b in clause_spans(sentence)] == [
        "帮我查一下航班",
        "要明天的",
        "最好国航",
        "it costs 1,000 yuan",
    ]


@pytest.mark.parametrize(
    ("sentence", "asks"),
    [
        ("How have you been?", True),
        ("你呢？", True),
        ("你听说过吗", True),
        ('"Really?"', True),
        ("I went there.", False),
        ("我不知道该做什么", False),  # ends with 什么: a statement
        ("这件事就是这么", False),
    ],
)
def test_questions_are_recognised_by_their_mark_or_a_chinese_particle(sentence: str, asks: bool) -> None:
    assert is_question(sentence) is asks


@pytest.mark.parametrize("text", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_text_splits_into_output_no_larger_than_the_input(text: str) -> None:
    sentences = split_sentences(text)
    assert sum(len(s) for s in sentences) <= len(text)
    assert all(len(s) <= MAX_SENTENCE_CHARS for s in sentences)

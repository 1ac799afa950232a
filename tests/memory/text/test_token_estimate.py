"""The token counter of budgets (`memory.text.tokens`): OpenAI's cl100k_base run by tiktoken, its vocabulary read from
an installed package and checked, nothing downloaded; and why the characters/4 heuristic is not enough for it."""

from __future__ import annotations

import pytest

from gateway.errors import json_text
from memory.recall.scoring import estimate_tokens
from memory.text.tokens import TokenizerUnavailable, count_tokens, encoding, installed_vocabulary, vocabulary


def test_the_counter_gives_cl100k_s_tokens_as_openai_documents_them() -> None:
    # the examples of OpenAI's cookbook "How to count tokens with tiktoken", for cl100k_base
    assert encoding().encode_ordinary("tiktoken is great!") == [83, 1609, 5963, 374, 2294, 0]
    assert count_tokens("お誕生日おめでとう") == 9
    assert count_tokens("") == 0


def test_a_special_token_written_in_a_memory_is_counted_as_plain_text() -> None:
    assert count_tokens("<|endoftext|>") > 1


def test_the_vocabulary_is_the_installed_file_that_tiktoken_pins_and_a_changed_one_is_refused() -> None:
    raw = installed_vocabulary()
    assert len(vocabulary(raw)) == 100_256
    with pytest.raises(TokenizerUnavailable, match="not tiktoken's"):
        vocabulary(raw.replace(b" 0\n", b" 1\n", 1))


def test_the_characters_per_token_heuristic_counts_a_recall_hit_and_chinese_short() -> None:
    hit = {
        "id": "019de2c4-2a80-7239-aba4-61fbb9f843e7",
        "namespace": "user:1",
        "content": "The user prefers Air China and a window seat on morning flights",
        "when": "2026-05-02T09:00:00Z",
        "score": 0.612345,
    }
    chinese = "用户对花生过敏，订餐时要避开含花生的菜"

    # ids, times and punctuation cost more than four characters a token: a budget by the heuristic overruns
    assert estimate_tokens(json_text(hit)) <= 0.7 * count_tokens(json_text(hit))
    assert estimate_tokens(chinese) < count_tokens(chinese)

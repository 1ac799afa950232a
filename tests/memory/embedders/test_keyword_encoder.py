"""The keyword half of hybrid recall: tokens (words, CJK bigrams) and the BM25 sparse vectors built from them."""

from __future__ import annotations

from memory.embedders.sparse import Bm25Encoder, term_index
from memory.text.words import split_speaker, stem, tokenize


def test_english_tokens_are_lowercased_stemmed_and_without_stop_words() -> None:
    assert tokenize("The user is running to the Stores") == ["user", "run", "stor"]
    assert stem("lives") == stem("living") == stem("lived") == stem("live")


def test_codes_keep_their_parts_and_their_joined_form() -> None:
    tokens = tokenize("Order ZX-4471 shipped")

    assert {"zx", "4471", "zx4471"} <= set(tokens)
    assert "zx4471" in tokenize("zx4471")


def test_chinese_text_becomes_meaningful_characters_and_overlapping_bigrams() -> None:
    tokens = tokenize("我住在上海")

    assert {"住", "上", "海", "住在", "上海", "我住", "在上"} == set(tokens)
    assert "我" not in tokens  # too common alone; kept inside bigrams
    assert set(tokenize("上海")) <= set(tokens)


def test_mixed_chinese_and_english_text_is_tokenised_per_script() -> None:
    assert set(tokenize("我的订单号是ZX-4471")) >= {"订单", "单号", "zx", "4471", "zx4471"}


def test_a_speaker_label_is_split_off_only_when_it_looks_like_one() -> None:
    assert split_speaker("Caroline: I moved to Paris") == ("caroline", "I moved to Paris")
    assert split_speaker("用户： 我住在北京") == ("用户", "我住在北京")
    assert split_speaker("小明：我明天去北京") == ("小明", "我明天去北京")  # no space needed after a full-width colon
    assert split_speaker("See https://example.com") == (None, "See https://example.com")


def test_documents_and_queries_share_term_indices_and_queries_weigh_each_term_once() -> None:
    encoder = Bm25Encoder()
    document = encoder.document("order ZX-4471 order")
    query = encoder.query("ZX-4471 order order")

    assert set(query.indices) == set(document.indices)
    assert set(query.values) == {1.0}
    assert list(document.indices) == sorted(document.indices)
    by_index = dict(zip(document.indices, document.values, strict=True))
    assert by_index[term_index("order")] > by_index[term_index("zx")]  # two occurrences weigh more than one


def test_term_indices_are_stable_31_bit_hashes() -> None:
    assert term_index("上海") == term_index("上海")
    assert 0 <= term_index("zx4471") < 2**31
    assert term_index("tea") != term_index("coffee")

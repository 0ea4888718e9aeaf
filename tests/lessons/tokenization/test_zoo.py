"""The lesson's tokenizers: the model's WordPiece read token by token, and BPE and Unigram trained here."""

from __future__ import annotations

import pytest

from lessons.common.runs import tokenize
from lessons.tokenization import zoo as tokenizer_zoo
from lessons.tokenization.zoo import (
    UNIGRAM_UNKNOWN,
    Split,
    describe_tokens,
    read_corpus,
    split_with,
    train_bpe,
    train_unigram,
)

SENTENCES = (
    "Attention is all you need.",
    "Tokenization splits unfamiliar words like transformers into pieces.",
    "Quiz: 42 heads, 7 layers; why?",
)


def gpt2_byte_of_symbol() -> dict[str, int]:
    """GPT-2's table from printable stand-in symbols back to bytes: printable bytes stand for
    themselves, the rest (space, control bytes, …) are shifted to code points from 256 on ("Ġ" is 32)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    symbols, extra = {}, 0
    for byte in range(256):
        if byte in printable:
            symbols[chr(byte)] = byte
        else:
            symbols[chr(256 + extra)] = byte
            extra += 1
    return symbols


@pytest.fixture(scope="module")
def bpe():
    return train_bpe(400)


@pytest.fixture(scope="module")
def unigram():
    return train_unigram(400)


def test_corpus_is_a_few_dozen_sentences_of_our_own():
    corpus = read_corpus()
    assert 30 <= len(corpus) <= 80
    assert all(sentence == sentence.strip() and len(sentence.split()) >= 5 for sentence in corpus)
    assert len(set(corpus)) == len(corpus)


def test_bpe_trains_to_the_identical_tokenizer_twice(bpe):
    again = train_bpe(400)
    assert again.to_str() == bpe.to_str()
    assert [split_with(again, text, "BPE").tokens for text in SENTENCES] == [
        split_with(bpe, text, "BPE").tokens for text in SENTENCES
    ]


def test_unigram_trains_to_the_same_pieces_and_the_same_splits_twice(unigram):
    # The trainer's EM leaves the last digits of the piece scores to summation order, so the scores are
    # not compared; the pieces and every split of the corpus and of new sentences must agree.
    again = train_unigram(400)
    assert set(again.get_vocab()) == set(unigram.get_vocab())
    texts = read_corpus() + SENTENCES
    assert [split_with(again, text, "Unigram").tokens for text in texts] == [
        split_with(unigram, text, "Unigram").tokens for text in texts
    ]


@pytest.mark.parametrize("vocab_size", tokenizer_zoo.ZOO_VOCAB_SIZES)
def test_bpe_fills_its_vocabulary_and_unigram_never_exceeds_it(vocab_size):
    assert train_bpe(vocab_size).get_vocab_size() == vocab_size
    assert 256 < train_unigram(vocab_size).get_vocab_size() <= vocab_size


def test_bpe_tokens_are_the_bytes_of_the_text_even_for_emoji(bpe):
    text = "Attention 🤖 is all you need, naïvely."
    tokens = split_with(bpe, text, "BPE").tokens
    byte_of = gpt2_byte_of_symbol()
    assert bytes(byte_of[symbol] for symbol in "".join(tokens)).decode("utf-8") == text
    assert UNIGRAM_UNKNOWN not in tokens
    # The corpus has no emoji, so no merge ever joined its four UTF-8 bytes: four tokens, the first
    # one carrying the space before it.
    emoji_tokens = split_with(bpe, " 🤖", "BPE").tokens
    assert len(emoji_tokens) == 5 and emoji_tokens[0] == "Ġ"


def test_unigram_tokens_spell_the_text_with_a_marker_for_each_space(unigram):
    for text in SENTENCES:
        tokens = split_with(unigram, text, "Unigram").tokens
        assert "".join(tokens).replace("▁", " ") == " " + text


def test_unigram_writes_characters_it_never_saw_as_unk(unigram):
    tokens = split_with(unigram, "I love 🤖", "Unigram").tokens
    assert tokens[-1] == UNIGRAM_UNKNOWN
    assert "".join(tokens[:-1]).replace("▁", " ") == " I love "


def test_a_larger_bpe_vocabulary_cuts_the_corpus_into_fewer_tokens():
    corpus_text = " ".join(read_corpus())
    counts = [len(split_with(train_bpe(size), corpus_text, "BPE")) for size in (300, 450)]
    assert counts[0] > counts[1] * 1.2


def test_each_wordpiece_row_carries_its_id_sentence_and_characters(embedded):
    text, pair = "Tokenization is fun", "Really?"
    rows = describe_tokens(tokenize(embedded.tokenizer, text, pair), (text, pair))
    assert [row.token for row in rows] == ["[CLS]", "token", "##ization", "is", "fun", "[SEP]", "really", "?", "[SEP]"]
    assert [row.id for row in rows] == embedded.tokenizer(text, pair)["input_ids"]
    assert [row.token_type_id for row in rows] == [0, 0, 0, 0, 0, 0, 1, 1, 1]
    assert [row.covered_text for row in rows] == ["", "Token", "ization", "is", "fun", "", "Really", "?", ""]
    assert [row.continuation for row in rows] == [False, False, True, False, False, False, False, False, False]
    assert [row.special for row in rows] == [True, False, False, False, False, True, False, False, True]
    assert (rows[7].sentence, rows[7].start, rows[7].end) == (1, 6, 7)


def test_wordpiece_replaces_a_whole_word_holding_an_emoji_by_one_unk(embedded):
    text = "say hello🤖 now"
    rows = describe_tokens(tokenize(embedded.tokenizer, text, add_special_tokens=False), (text,))
    assert [(row.token, row.covered_text, row.unknown) for row in rows] == [
        ("say", "say", False),
        ("[UNK]", "hello🤖", True),
        ("now", "now", False),
    ]
    assert rows[1].id == embedded.tokenizer.unk_token_id == 100


def test_the_wordpiece_split_is_the_models_tokens_without_specials(embedded):
    tokenized = tokenize(embedded.tokenizer, "time flies", add_special_tokens=False)
    split = tokenizer_zoo.wordpiece_split(tokenized, 30522)
    assert split.tokens == ("time", "flies") and len(split) == 2 and split.vocab_size == 30522


def test_after_truncation_only_the_characters_of_kept_tokens_are_read(embedded):
    text, pair = "one two three four", "five six seven"
    tokenized = tokenize(embedded.tokenizer, text, pair, max_tokens=7)  # [CLS] one two [SEP] five six [SEP]
    rows = describe_tokens(tokenized, (text, pair))
    assert tokenizer_zoo.texts_read(rows, (text, pair), tokenized.truncated) == ("one two", "five six")
    whole = tokenize(embedded.tokenizer, text, pair)
    assert tokenizer_zoo.texts_read(describe_tokens(whole, (text, pair)), (text, pair), whole.truncated) == (text, pair)


def test_side_by_side_leaves_a_blank_where_a_tokenizer_made_fewer_tokens_never_none():
    from lessons.tokenization.zoo import side_by_side

    table = side_by_side([Split("WordPiece", 9, ("time", "flies")), Split("BPE", 9, ("ti", "me", "fl", "ies"))])
    assert list(table.columns) == ["WordPiece", "BPE"]
    assert table["WordPiece"].tolist() == ["time", "flies", "", ""]
    assert table["BPE"].tolist() == ["ti", "me", "fl", "ies"]
    assert not table.isna().any().any()  # st.dataframe writes a missing cell as "None"

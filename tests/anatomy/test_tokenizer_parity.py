"""A checkpoint's tokenizer.json read with the `tokenizers` library alone (anatomy.checkpoints.tokenizer) answers
every call the lessons make exactly as transformers' tokenizer of the same file does, and the app's server,
which no longer needs transformers for it, never imports it (about 30 MB of memory saved)."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from anatomy.checkpoints.tokenizer import TextTokenizer
from tests.lessons.common.llm.tokenizer_corpus import HAND_WRITTEN, random_strings

ROOT = Path(__file__).resolve().parents[2]
STRINGS = HAND_WRITTEN + random_strings(150)
SPECIAL_TOKEN_ATTRIBUTES = [
    f"{name}_token{suffix}" for name in ("bos", "eos", "unk", "sep", "pad", "cls", "mask") for suffix in ("", "_id")
]
EVERYTHING = {"return_offsets_mapping": True, "return_special_tokens_mask": True, "return_token_type_ids": True}


@pytest.fixture(scope="module")
def minilm_tokenizers(embedded):
    """(ours, transformers') for the embedded MiniLM's tokenizer.json."""
    from transformers import AutoTokenizer

    return TextTokenizer.from_folder(embedded.folder), AutoTokenizer.from_pretrained(str(embedded.folder))


def as_lists(encoded) -> dict:
    """transformers' BatchEncoding as the plain dict of lists ours returns (offsets as tuples)."""
    plain = dict(encoded)
    if "offset_mapping" in plain:
        plain["offset_mapping"] = [tuple(span) for span in plain["offset_mapping"]]
    return plain


def test_the_embedded_model_comes_with_our_tokenizer(embedded):
    assert isinstance(embedded.tokenizer, TextTokenizer)


@pytest.mark.parametrize("cut", [{}, {"add_special_tokens": False}, {"truncation": True, "max_length": 8}])
def test_ids_offsets_types_and_special_marks_equal_transformers_on_every_string(minilm_tokenizers, cut):
    ours, theirs = minilm_tokenizers
    for text in STRINGS:
        assert ours(text, **EVERYTHING, **cut) == as_lists(theirs(text, **EVERYTHING, **cut)), text


def test_sentence_pairs_are_cut_longest_first_as_transformers_cuts_them(minilm_tokenizers):
    """300 random pairs under random caps, then pairs of equal length under every cap: the longer sentence loses
    tokens first, and of two equally long ones the second keeps the odd token."""
    ours, theirs = minilm_tokenizers
    rng = random.Random(15)
    words = ["alpha", "x", "naïve", "東", "🤗", "!!", "résumé", "مرحبا", "??", "gamma"]
    pairs = [
        (" ".join(rng.choices(words, k=rng.randint(0, 30))), " ".join(rng.choices(words, k=rng.randint(0, 30))))
        for _ in range(300)
    ]
    pairs += [("x " * length, "y " * length) for length in range(1, 12)]
    for first, second in pairs:
        for cap in (rng.randint(2, 60), *range(3, 26)) if first.startswith("x ") else (rng.randint(2, 60),):
            options = {"truncation": True, "max_length": cap, "add_special_tokens": cap % 5 != 0}
            expected = as_lists(theirs(first, second, **EVERYTHING, **options))
            assert ours(first, second, **EVERYTHING, **options) == expected, (first, second, options)
    tied = ours("x " * 11, "y " * 11, truncation=True, max_length=12)["token_type_ids"]
    assert (tied.count(0), tied.count(1)) == (2 + 4, 5 + 1)  # [CLS] 4 x [SEP] | 5 y [SEP]


def test_decoding_and_token_strings_equal_transformers(minilm_tokenizers):
    ours, theirs = minilm_tokenizers
    for text in STRINGS:
        ids = theirs(text)["input_ids"]
        tokens = theirs.convert_ids_to_tokens(ids)
        assert ours.tokenize(text) == theirs.tokenize(text)
        assert ours.encode(text) == ids
        assert ours.convert_ids_to_tokens(ids) == tokens
        assert ours.convert_tokens_to_string(tokens) == theirs.convert_tokens_to_string(tokens)
        for skip in (False, True):
            assert ours.decode(ids, skip_special_tokens=skip) == theirs.decode(ids, skip_special_tokens=skip)


def test_special_tokens_vocabulary_size_and_casing_equal_transformers(minilm_tokenizers):
    ours, theirs = minilm_tokenizers
    for name in SPECIAL_TOKEN_ATTRIBUTES:
        assert getattr(ours, name) == getattr(theirs, name), name
    assert (ours.cls_token, ours.sep_token, ours.pad_token_id) == ("[CLS]", "[SEP]", 0)
    assert len(ours) == len(theirs) == 30522
    assert ours.do_lower_case and theirs.do_lower_case


def test_pytorch_tensors_come_with_a_batch_axis_and_feed_transformers_models(minilm_tokenizers):
    ours, theirs = minilm_tokenizers
    tensors = ours("time flies like an arrow", "fruit flies like a banana", return_tensors="pt")
    expected = theirs("time flies like an arrow", "fruit flies like a banana", return_tensors="pt")
    assert tensors.keys() == expected.keys()
    for key, value in tensors.items():
        assert value.shape[0] == 1 and torch.equal(value, expected[key]), key
    with pytest.raises(ValueError, match="only 'pt'"):
        ours("text", return_tensors="np")


def test_a_truncating_call_leaves_the_shared_tokenizer_as_it_was(minilm_tokenizers):
    """Every browser session calls the same object: a cap must not linger for the next caller."""
    ours, _ = minilm_tokenizers
    ours("word " * 50, "other " * 50, truncation=True, max_length=10)
    assert ours.backend_tokenizer.truncation is None and ours.backend_tokenizer.padding is None
    assert len(ours("word " * 50)["input_ids"]) == 52


def test_the_sentence_transformers_padding_to_128_tokens_is_switched_off(embedded):
    assert len(embedded.tokenizer("hi")["input_ids"]) == 3
    assert len(embedded.tokenizer("word " * 200)["input_ids"]) == 202


@pytest.mark.slow
def test_smollm2_for_the_other_lessons_equals_transformers_fast_wrapper_of_the_same_tokenizer():
    from transformers import PreTrainedTokenizerFast

    from lessons.common.llm.smollm2 import as_pretrained, load_chat_model

    chat = load_chat_model()
    ours = as_pretrained(chat, "SmolLM2").tokenizer
    specials = chat.specials
    theirs = PreTrainedTokenizerFast(
        tokenizer_object=chat.tokenizer, bos_token=specials.bos, eos_token=specials.eos, pad_token=specials.padding
    )
    for text in STRINGS:
        for cut in ({}, {"truncation": True, "max_length": 7}):
            assert ours(text, **EVERYTHING, **cut) == as_lists(theirs(text, **EVERYTHING, **cut)), text
        ids = theirs(text)["input_ids"]
        tokens = theirs.convert_ids_to_tokens(ids)
        assert ours.convert_ids_to_tokens(ids) == tokens
        assert [ours.convert_tokens_to_string([token]) for token in tokens] == [
            theirs.convert_tokens_to_string([token]) for token in tokens
        ]
        assert ours.decode(ids, skip_special_tokens=True) == theirs.decode(ids, skip_special_tokens=True)
    assert (ours.eos_token, ours.pad_token_id) == (theirs.eos_token, theirs.pad_token_id)
    assert ours.unk_token == "<|endoftext|>"  # named by the file; transformers' wrapper was given none


@pytest.mark.slow
def test_loading_both_embedded_models_as_the_lessons_do_never_imports_transformers():
    """In a fresh interpreter, as the app's server starts: MiniLM, then SmolLM2 wrapped for every lesson."""
    program = (
        "import sys\n"
        "from anatomy.checkpoints.pretrained import load_pretrained\n"
        "from lessons.common.llm.smollm2 import as_pretrained, load_chat_model\n"
        "minilm = load_pretrained(device='cpu')\n"
        "smollm2 = as_pretrained(load_chat_model(), 'SmolLM2')\n"
        "assert minilm.tokenizer('hi')['input_ids'] == [101, 7632, 102]\n"
        "assert smollm2.tokenizer('hi')['input_ids'] == [6004]\n"
        "print(sorted(name for name in sys.modules if name.split('.')[0] == 'transformers'))\n"
    )
    result = subprocess.run([sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "[]"

"""The tokenizer built from a GGUF file's metadata gives transformers' token ids, string for string.

On SmolLM2 one choice is ours to make (see lessons/common/llm/tokenizer.py): llama.cpp and SmolLM2's own
tokenizer.json isolate every digit before GPT-2's regex, transformers' GGUF loader does not. Built the
transformers way, our tokenizer agrees with transformers on every string; built the way the model was trained
(the default), it differs exactly on the strings where spaces come before a number.
"""

from __future__ import annotations

import pytest

from lessons.common.llm.tokenizer import build_tokenizer, encode, render_chat, special_tokens
from tests.lessons.common.llm.tokenizer_corpus import CONVERSATIONS, HAND_WRITTEN, random_strings
from tests.tiny_gguf import write_tiny_llama_gguf

# "What is the capital of France?" through SmolLM2's chat template (the system prompt is added by it).
CHAT_PROMPT_IDS = [1, 9690, 198, 2683, 359, 253, 5356, 5646, 11173, 3365, 3511, 308, 34519, 28, 7018, 411, 407]
CHAT_PROMPT_IDS += [19712, 8182, 2, 198, 1, 4093, 198, 1780, 314, 260, 3575, 282, 4649, 47, 2, 198, 1, 520, 9531, 198]


def smollm2_path():
    from lessons.common.llm.smollm2 import smollm2_gguf_path

    return smollm2_gguf_path()


@pytest.fixture(scope="module")
def metadata():
    from anatomy.checkpoints.gguf import read_gguf

    return read_gguf(smollm2_path()).metadata


@pytest.fixture(scope="module")
def reference():
    """transformers' tokenizer from the same file (about 5 s: it parses the file with gguf.GGUFReader)."""
    from transformers import AutoTokenizer

    path = smollm2_path()
    return AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)


def corpus(metadata) -> list[str]:
    chats = [
        render_chat(metadata["tokenizer.chat_template"], talk, prompt) for talk in CONVERSATIONS for prompt in (0, 1)
    ]
    return HAND_WRITTEN + random_strings(150) + chats


def test_the_smollm2_chat_prompt_has_the_37_ids_the_model_was_fine_tuned_on(metadata):
    tokenizer, specials = build_tokenizer(metadata), special_tokens(metadata)
    text = render_chat(
        metadata["tokenizer.chat_template"], [{"role": "user", "content": "What is the capital of France?"}]
    )
    assert text.startswith("<|im_start|>system\nYou are a helpful AI assistant named SmolLM")
    assert text.endswith("<|im_start|>assistant\n")
    assert encode(tokenizer, text, specials) == CHAT_PROMPT_IDS
    assert (specials.bos, specials.eos, specials.add_bos) == ("<|im_start|>", "<|im_end|>", False)


def test_smollm2_isolates_every_digit_as_it_was_trained_unless_asked_for_transformers_regex(metadata):
    trained, transformers_way = build_tokenizer(metadata), build_tokenizer(metadata, digits="transformers")
    assert trained.encode("a  1").tokens == ["a", "ĠĠ", "1"]
    assert transformers_way.encode("a  1").tokens == ["a", "Ġ", "Ġ", "1"]  # cut as ["a", " ", " 1"]
    assert trained.encode("I have 12 pears").tokens == transformers_way.encode("I have 12 pears").tokens


def test_special_tokens_typed_in_text_are_one_token_and_decoding_can_hide_them(metadata):
    tokenizer, specials = build_tokenizer(metadata), special_tokens(metadata)
    ids = encode(tokenizer, "<|im_start|>user\nHi<|im_end|>", specials)
    assert ids[0] == 1 and ids[-1] == 2
    assert tokenizer.decode(ids, skip_special_tokens=True) == "user\nHi"
    assert tokenizer.decode(ids, skip_special_tokens=False) == "<|im_start|>user\nHi<|im_end|>"


@pytest.mark.slow
def test_a_tiny_gguf_tokenizer_gives_transformers_ids(tmp_path):
    from transformers import AutoTokenizer

    from anatomy.checkpoints.gguf import read_gguf

    path = write_tiny_llama_gguf(tmp_path / "tiny.gguf", "Q8_0")
    metadata = read_gguf(path).metadata
    tokenizer, specials = build_tokenizer(metadata), special_tokens(metadata)
    theirs = AutoTokenizer.from_pretrained(str(tmp_path), gguf_file=path.name)
    texts = ["The capital of France is Paris.", "<|im_start|>user\nhi<|im_end|>", "héllo 你好 🙂", "a  1\n\n\tx"]
    for text in texts:
        assert encode(tokenizer, text, specials) == theirs(text)["input_ids"], text


@pytest.mark.slow
def test_ids_equal_transformers_on_281_strings_when_built_with_transformers_regex(metadata, reference):
    tokenizer, specials = build_tokenizer(metadata, digits="transformers"), special_tokens(metadata)
    strings = corpus(metadata)
    assert len(strings) == 281
    differing = [text for text in strings if encode(tokenizer, text, specials) != reference(text)["input_ids"]]
    assert differing == []


@pytest.mark.slow
def test_the_trained_digit_splitting_differs_from_transformers_only_where_spaces_precede_a_number(metadata, reference):
    tokenizer, specials = build_tokenizer(metadata), special_tokens(metadata)
    differing = [text for text in corpus(metadata) if encode(tokenizer, text, specials) != reference(text)["input_ids"]]
    assert differing[:4] == ["a  1", "a   12", "  1", "½ ¾ ² ³"]  # ½ ¾ ² ³ are numbers (\p{N}) too
    assert len(differing) == 5 and "\t99" in differing[4]


@pytest.mark.slow
def test_the_chat_template_renders_and_tokenizes_as_apply_chat_template(metadata, reference):
    tokenizer, specials = build_tokenizer(metadata), special_tokens(metadata)
    for conversation in CONVERSATIONS:
        for generation_prompt in (False, True):
            text = render_chat(metadata["tokenizer.chat_template"], conversation, generation_prompt)
            assert text == reference.apply_chat_template(
                conversation, tokenize=False, add_generation_prompt=generation_prompt
            )
            expected = reference.apply_chat_template(
                conversation, tokenize=True, add_generation_prompt=generation_prompt, return_dict=False
            )
            assert encode(tokenizer, text, specials) == list(expected)


@pytest.mark.slow
def test_smollm2_for_the_other_lessons_splits_every_string_as_lesson_9_does(metadata):
    from lessons.common.llm.smollm2 import as_pretrained
    from lessons.common.runs import tokenize
    from lessons.common.ui import loaders

    chat = loaders.get_chat_model()
    wrapped = as_pretrained(chat, "SmolLM2-135M-Instruct")
    assert wrapped.model is chat.loaded.model and wrapped.name == "SmolLM2-135M-Instruct"
    for text in corpus(metadata):
        tokenized = tokenize(wrapped.tokenizer, text, max_tokens=100_000)
        assert list(tokenized.input_ids) == chat.encode(text), text
        assert all(0 <= start <= end <= len(text) for start, end in tokenized.offsets)
    assert tokenize(wrapped.tokenizer, "word " * 600, max_tokens=512).truncated  # cut where a page cuts it


@pytest.mark.slow
def test_the_loaded_model_keeps_its_vocabulary_in_the_tokenizer_alone():
    """The 49,152 tokens and 48,900 merges live in the Rust tokenizer; the file's other metadata stays."""
    from lessons.common.llm.smollm2 import TOKENIZER_TABLES
    from lessons.common.ui import loaders

    chat = loaders.get_chat_model()
    assert not set(TOKENIZER_TABLES) & set(chat.metadata)
    assert chat.metadata["llama.block_count"] == 30 and chat.chat_template is not None
    assert chat.tokenizer.get_vocab_size() == 49152 and chat.encode("The capital of France is")[-1] == 314

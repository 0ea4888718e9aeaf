"""What SmolLM2 makes of a text: readable pieces, the next token, one layer's attention."""

from __future__ import annotations

import re

import pytest
import torch

from lessons.common import decoder_attention
from lessons.common.llm import readable
from lessons.language_model import reading, text


@pytest.mark.parametrize(
    ("token", "shown"),
    [
        ("Ġcapital", "·capital"),  # GPT-2's byte alphabet writes a space as Ġ
        ("Ċ", "↵"),
        ("ĉ", "⇥"),
        ("ĠðŁĺ", "·<F0><9F><98>"),  # the first three bytes of 😍: half a character is shown as its bytes
        ("<|im_start|>", "<|im_start|>"),  # a special token is a marker, not bytes
    ],
)
def test_a_byte_level_piece_is_shown_as_the_text_it_stands_for(token, shown):
    assert readable.readable_piece(token) == shown


@pytest.mark.slow  # loads SmolLM2 (seconds, once)
def test_the_text_is_cut_at_the_cap_and_says_how_long_it_was(chat):
    tokens = readable.text_tokens(chat, " ".join(["word"] * 600), max_tokens=512)
    assert len(tokens) == 512 and tokens.untruncated_length == 600 and tokens.truncated


@pytest.mark.slow  # loads SmolLM2 (seconds, once)
def test_the_capital_of_france_is_paris_with_probability_077(chat):
    ids = tuple(chat.encode("The capital of France is"))
    found = reading.top_candidates(reading.next_token_probabilities(reading.decoder_of(chat), ids), 5)
    assert [readable.piece_of(chat, index) for index in found.ids[:3]] == ["·Paris", "·the", "·London"]
    assert found.probabilities[0] == pytest.approx(0.773, abs=0.005)
    assert list(found.probabilities) == sorted(found.probabilities, reverse=True)


@pytest.mark.slow  # loads SmolLM2 (seconds, once)
@pytest.mark.parametrize("layer", [0, 7, 29])
def test_the_blocks_up_to_one_layer_give_the_fully_traced_models_attention_there(chat, layer):
    model = reading.decoder_of(chat)
    ids = tuple(chat.encode("time flies like an arrow"))
    with torch.no_grad():
        full = (
            model(decoder_attention.as_batch(ids, model), trace=True).recorded_trace.layers[layer].attention.weights[0]
        )
    alone = decoder_attention.layer_attention(model, ids, layer).weights[0].cpu()  # (H, T, T)
    assert alone.shape == (9, 5, 5)  # nine query heads, even though only three key heads are computed
    # The blocks below run untraced (torch's fused kernel), the full trace's explicitly: 8e-7 apart on the CPU here,
    # 1.9e-6 at layer 29 on an H200, where the fused kernel is another one.
    torch.testing.assert_close(alone, full.float().cpu(), atol=5e-6, rtol=0)
    assert torch.allclose(alone.sum(-1), torch.ones(9, 5), atol=1e-5)
    assert (alone.triu(1) == 0).all()


@pytest.mark.slow  # loads SmolLM2 (seconds, once)
def test_the_chat_template_marks_its_five_special_tokens(chat):
    prompt, tokens = reading.chat_tokens(chat, "Hi")
    assert prompt.endswith("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")
    assert list(tokens.ids) == chat.encode(prompt)
    assert [piece for piece, special in zip(tokens.pieces, tokens.special) if special] == [
        "<|im_start|>",
        "<|im_end|>",
        "<|im_start|>",
        "<|im_end|>",
        "<|im_start|>",
    ]


def test_the_lesson_writes_a_piece_with_a_leading_space_as_its_tables_show_it():
    """A code span that starts with a space shows no space at all: " France" read as "France"."""
    assert f"`{readable.readable_piece('ĠFrance')}` and `France` are two different tokens" in text.TOKENS
    assert not [span for span in re.findall(r"`([^`]*)`", text.TOKENS) if span.startswith(" ")]

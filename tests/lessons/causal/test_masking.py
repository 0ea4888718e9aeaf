"""One head under no mask, a causal mask and a padding mask: the numbers the masking lesson shows."""

from __future__ import annotations

import math

import pytest
import torch

from anatomy.attention import apply_mask, attention_scores, attention_weights, masked_softmax
from anatomy.masks import causal_mask
from lessons.causal import masking as mask_demo
from lessons.common import examples as toy
from lessons.common.runs import run_encoder

TEXT = "time flies like an arrow"


@pytest.fixture(scope="module")
def run(embedded):
    return run_encoder(embedded.model, embedded.tokenizer, TEXT)


@pytest.fixture
def small_head() -> mask_demo.HeadInputs:
    """Six tokens, d_head = 4, fixed random vectors: enough to see every rule of the masks."""
    generator = torch.Generator().manual_seed(4)
    query, key, value = (torch.randn(6, 4, generator=generator, dtype=torch.float64) for _ in range(3))
    return mask_demo.HeadInputs(query, key, value)


# --- The worked 4 × 4 example -------------------------------------------------------------------------


def test_the_worked_example_first_row_is_all_on_the_first_token():
    view = mask_demo.mask_scores(toy.CAUSAL_EXAMPLE_SCORES, causal_mask(4))
    assert view.weights[0].tolist() == [1.0, 0.0, 0.0, 0.0]


def test_the_worked_example_second_row_is_the_softmax_of_its_two_scores():
    view = mask_demo.mask_scores(toy.CAUSAL_EXAMPLE_SCORES, causal_mask(4))
    # softmax(0.1, 0.3) = (1, e^0.2) / (1 + e^0.2) = (0.4502, 0.5498)
    expected_first = 1 / (1 + math.exp(0.2))
    assert view.weights[1, 0].item() == pytest.approx(expected_first, abs=1e-12)
    assert view.weights[1, 1].item() == pytest.approx(1 - expected_first, abs=1e-12)
    assert view.weights[1, 0].item() == pytest.approx(0.4502, abs=1e-4)
    assert view.weights[1, 2:].tolist() == [0.0, 0.0]


def test_the_worked_example_fills_the_future_with_minus_infinity_and_keeps_the_past():
    view = mask_demo.mask_scores(toy.CAUSAL_EXAMPLE_SCORES, causal_mask(4))
    above = torch.ones(4, 4, dtype=torch.bool).triu(1)
    assert torch.isneginf(view.masked_scores[above]).all()
    assert torch.equal(view.masked_scores[~above], toy.CAUSAL_EXAMPLE_SCORES[~above])
    assert view.num_forbidden == 6  # 3 + 2 + 1 future positions
    assert torch.allclose(view.row_sums, torch.ones(4, dtype=torch.float64), atol=1e-15)


def test_the_worked_example_is_masked_by_the_models_own_functions_bit_for_bit():
    view = mask_demo.mask_scores(toy.CAUSAL_EXAMPLE_SCORES, causal_mask(4))
    assert torch.equal(view.masked_scores, apply_mask(toy.CAUSAL_EXAMPLE_SCORES, causal_mask(4)))
    assert torch.equal(view.weights, masked_softmax(toy.CAUSAL_EXAMPLE_SCORES, causal_mask(4)))


# --- A causal mask on one head ---------------------------------------------------------------------


def test_a_masked_head_shows_the_models_scores_and_weights_bit_for_bit(small_head):
    for view, mask in ((mask_demo.causal(small_head), causal_mask(6)), (mask_demo.unmasked(small_head), None)):
        assert torch.equal(view.scores, attention_scores(small_head.query, small_head.key))
        assert torch.equal(view.masked_scores, apply_mask(view.scores, mask))
        assert torch.equal(view.weights, attention_weights(small_head.query, small_head.key, mask))


def test_causal_mask_zeroes_every_future_position_exactly(small_head):
    view = mask_demo.causal(small_head)
    assert (view.weights.triu(1) == 0.0).all()
    assert view.largest_forbidden_weight == 0.0
    assert torch.allclose(view.row_sums, torch.ones(6, dtype=torch.float64), atol=1e-12)
    assert view.row_sum_range == pytest.approx((1.0, 1.0), abs=1e-12)


def test_causal_row_t_is_the_softmax_of_the_scores_of_positions_0_to_t(small_head):
    view = mask_demo.causal(small_head)
    scores = small_head.query @ small_head.key.T / 2.0  # √d_head = √4
    assert torch.allclose(view.scores, scores, atol=1e-12)
    for t in range(6):
        assert torch.allclose(view.weights[t, : t + 1], torch.softmax(scores[t, : t + 1], dim=-1), atol=1e-12)


def test_unmasked_head_allows_everything_and_has_no_minus_infinity(small_head):
    view = mask_demo.unmasked(small_head)
    assert view.mask.all() and view.num_forbidden == 0
    assert torch.isfinite(view.masked_scores).all()
    assert (view.weights > 0).all()


def test_unmasked_head_recomputes_the_weights_the_model_recorded(run):
    layer, head = 2, 5
    view = mask_demo.unmasked(mask_demo.head_inputs(run.output.trace.layers[layer].attention, head))
    assert torch.allclose(view.weights, run.attention_weights[layer, head], atol=1e-6)


def test_the_first_token_of_a_real_text_attends_only_to_itself_under_the_causal_mask(run):
    view = mask_demo.causal(mask_demo.head_inputs(run.output.trace.layers[0].attention, 0))
    assert view.weights[0, 0].item() == 1.0
    assert view.weights[0, 1:].abs().sum().item() == 0.0


# --- Padding ---------------------------------------------------------------------------------------


def test_padding_adds_pad_tokens_with_a_zero_attention_mask(embedded, run):
    padded = mask_demo.run_padded(embedded.model, embedded.tokenizer, run.tokenized, 3)
    real = len(run.tokenized)
    assert padded.tokens[-3:] == ("[PAD]",) * 3
    assert padded.attention_mask.tolist() == [1] * real + [0] * 3
    assert padded.num_real == real
    assert padded.query.shape == (6, 12, real + 3, 32)  # (L, H, T + P, d_head) of MiniLM


def test_with_no_padding_the_pages_own_run_stands_in_for_a_second_forward_pass(embedded, run):
    reused = mask_demo.unpadded(run)
    rerun = mask_demo.run_padded(embedded.model, embedded.tokenizer, run.tokenized, 0)
    assert reused.tokens == rerun.tokens == run.tokenized.tokens
    assert reused.attention_mask.tolist() == rerun.attention_mask.tolist() == [1] * 7
    for name in ("query", "key", "value"):
        assert getattr(reused, name).shape == (6, 12, 7, 32)
        assert torch.equal(getattr(reused, name), getattr(rerun, name))  # the same computation, bit for bit


def test_padding_mask_gives_every_pad_column_exactly_zero_weight(embedded, run):
    padded = mask_demo.run_padded(embedded.model, embedded.tokenizer, run.tokenized, 3)
    view = mask_demo.padded(padded.head(1, 4), padded.attention_mask)
    real = len(run.tokenized)
    assert (view.weights[:, real:] == 0.0).all()
    assert view.num_forbidden == (real + 3) * 3  # every query, three hidden keys
    assert view.largest_forbidden_weight == 0.0
    assert torch.allclose(view.row_sums, torch.ones(real + 3), atol=1e-6)


def test_behind_the_padding_mask_the_real_tokens_attend_as_without_padding(embedded, run):
    padded = mask_demo.run_padded(embedded.model, embedded.tokenizer, run.tokenized, 5)
    real = len(run.tokenized)
    for layer in (0, 5):
        view = mask_demo.padded(padded.head(layer, 7), padded.attention_mask)
        assert mask_demo.largest_difference(view.weights[:real, :real], run.attention_weights[layer, 7]) < 1e-5


def test_padding_and_causal_masks_combine_to_forbid_the_future_and_the_padding(small_head):
    attention_mask = torch.tensor([1, 1, 1, 1, 0, 0])
    view = mask_demo.padded(small_head, attention_mask, also_causal=True)
    expected = causal_mask(6) & attention_mask.bool()[None, :]
    assert torch.equal(view.mask, expected)
    assert (view.weights[~expected] == 0.0).all()
    # the [PAD] rows still see the real tokens before them, so every row sums to 1
    assert torch.allclose(view.row_sums, torch.ones(6, dtype=torch.float64), atol=1e-12)


def test_room_for_padding_is_what_is_left_of_the_position_embeddings():
    assert mask_demo.room_for_padding(500, 512) == 12
    assert mask_demo.room_for_padding(512, 512) == 0
    assert mask_demo.room_for_padding(600, 512) == 0


# --- Windows on long sequences ---------------------------------------------------------------------


def test_largest_difference_is_the_biggest_absolute_gap():
    assert mask_demo.largest_difference(torch.tensor([1.0, 2.0]), torch.tensor([1.5, 1.0])) == 1.0

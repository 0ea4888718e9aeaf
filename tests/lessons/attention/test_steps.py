"""One head's steps from any source, one score taken apart, and the window a long text is shown through."""

import math

import pytest
import torch

import anatomy.attention
from anatomy.attention import (
    AttentionTrace,
    MultiHeadAttention,
    apply_mask,
    attention_scores,
    attention_weights,
    scaled_dot_product_attention,
)
from anatomy.masks import causal_mask
from lessons.attention.steps import (
    embedding_self_attention,
    output_contributions,
    score_anatomy,
    traced_head_steps,
)
from lessons.common import examples as toy
from lessons.common.runs import run_encoder


def test_embeddings_used_directly_give_the_same_steps_as_identity_projections():
    direct = embedding_self_attention(toy.APPLE_IPHONES_TOKENS, toy.APPLE_IPHONES_X)
    projected = toy.apple_iphones()  # X·I for each of Q, K and V
    for field in ("query", "key", "value", "raw_scores", "scaled_scores", "weights", "output"):
        assert torch.allclose(getattr(direct, field), getattr(projected, field), rtol=0, atol=1e-12), field
    assert direct.raw_scores[2].tolist() == [100.0, 95.0, 202.0, 202.0]  # Apple·I, ·love, ·Apple, ·iPhones
    assert torch.allclose(direct.scaled_scores[2, 2], torch.tensor(202 / math.sqrt(2), dtype=torch.float64))


def test_embedding_attention_accepts_float32_model_embeddings_and_computes_in_float64():
    embeddings = torch.randn(5, 8, dtype=torch.float32, generator=torch.Generator().manual_seed(0))
    steps = embedding_self_attention(["a", "b", "c", "d", "e"], embeddings)
    assert steps.weights.dtype == torch.float64
    assert torch.allclose(steps.weights.sum(-1), torch.ones(5, dtype=torch.float64))
    assert torch.equal(steps.query, embeddings.double()) and steps.query is steps.key is steps.value


@pytest.fixture(scope="module")
def traced_run(embedded):
    return run_encoder(embedded.model, embedded.tokenizer, "the cat sat on the mat")


def test_a_traced_head_shows_exactly_the_weights_and_outputs_the_model_computed(traced_run):
    layer, head = 2, 5
    attention = traced_run.output.trace.layers[layer].attention
    steps = traced_head_steps(traced_run.tokenized.tokens, attention, head, traced_run.output.trace.layers[layer].input)
    assert torch.equal(steps.weights, attention.weights[0, head].double())
    assert torch.equal(steps.output, attention.head_outputs[0, head].double())
    assert torch.allclose(steps.raw_scores, attention.raw_scores[0, head].double(), rtol=1e-5, atol=1e-4)
    assert torch.allclose(steps.scaled_scores, steps.raw_scores / math.sqrt(32))  # MiniLM: 384 / 12 heads
    # The softmax of the recomputed scaled scores is the model's own weights (float32 rounding aside).
    assert torch.allclose(torch.softmax(steps.scaled_scores, -1), steps.weights, atol=1e-6)
    assert steps.inputs.shape == (len(traced_run.tokenized), 384)
    assert steps.tokens[0] == "[CLS]"


def test_the_sum_of_a_query_and_key_products_is_their_score():
    steps = toy.love_mathematics()
    parts = score_anatomy(steps, query_index=0, key_index=1)
    assert parts.query.tolist() == [3, 1, 5, 4] and parts.key.tolist() == [6, 2, 4, 1]
    assert parts.products.tolist() == [18, 2, 20, 4]
    assert parts.sum_of_products == parts.raw_score == 44.0
    assert parts.scaled_score == 22.0  # ÷ √4
    assert parts.weight == pytest.approx(0.970687761, rel=1e-8)


def test_the_sum_of_products_matches_a_traced_score_to_float_precision(traced_run):
    attention = traced_run.output.trace.layers[0].attention
    steps = traced_head_steps(traced_run.tokenized.tokens, attention, 3, traced_run.output.trace.layers[0].input)
    parts = score_anatomy(steps, 1, 4)
    assert parts.sum_of_products == pytest.approx(parts.raw_score, rel=1e-12)
    assert parts.raw_score == pytest.approx(float(attention.raw_scores[0, 3, 1, 4]), rel=1e-5)


def test_the_contributions_to_apples_output_are_half_of_apple_and_half_of_iphones():
    steps = toy.apple_iphones()
    contributions = output_contributions(steps, query_index=2)
    assert torch.allclose(contributions[2:], torch.tensor([[5.5, 4.5], [1.0, 10.0]], dtype=torch.float64))
    assert torch.allclose(contributions[:2], torch.zeros(2, 2, dtype=torch.float64), atol=1e-30)
    assert torch.allclose(contributions.sum(0), steps.output[2])
    assert steps.output[2].tolist() == pytest.approx([6.5, 14.5])


def test_a_masked_trace_marks_every_forbidden_score_minus_infinity():
    generator = torch.Generator().manual_seed(1)
    query, key, value = (torch.randn(1, 2, 4, 3, generator=generator) for _ in range(3))  # (B, H, T, d_head)
    mask = causal_mask(4)[None, None]  # (1, 1, T, T)
    head_outputs, _ = scaled_dot_product_attention(query, key, value, mask)
    trace = AttentionTrace(
        query=query,
        shared_key=key,
        shared_value=value,
        given_mask=mask,
        causal=False,
        head_outputs=head_outputs,
        project=lambda concatenated: concatenated,
    )
    steps = traced_head_steps("abcd", trace, head=1, layer_input=torch.zeros(1, 4, 6))
    above_diagonal = ~causal_mask(4)
    assert torch.isneginf(steps.masked_scores[above_diagonal]).all()
    assert torch.equal(steps.masked_scores[~above_diagonal], steps.scaled_scores[~above_diagonal])
    assert torch.equal(steps.weights[above_diagonal], torch.zeros(6, dtype=torch.float64))


# ── the steps a learner sees are the model's own arithmetic ─────────────────────────────────────────────


def a_traced_causal_head():
    """A small batched attention run with the causal mask, traced: (trace, its input (1, 5, 8))."""
    torch.manual_seed(3)
    attention = MultiHeadAttention(8, 2).eval()
    hidden = torch.randn(1, 5, 8, generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        _, trace = attention(hidden, mask=causal_mask(5), trace=True)
    return trace, hidden


def test_a_traced_heads_steps_are_the_forwards_scores_and_weights_bit_for_bit():
    trace, hidden = a_traced_causal_head()
    steps = traced_head_steps("abcde", trace, head=1, layer_input=hidden)
    query, key = trace.query[0, 1].double(), trace.key[0, 1].double()
    assert torch.equal(steps.weights, attention_weights(trace.query, trace.key, causal_mask(5))[0, 1].double())
    assert torch.equal(steps.output, (trace.weights @ trace.value)[0, 1].double())  # the forward's own head output
    assert torch.equal(steps.scaled_scores, attention_scores(query, key))
    assert torch.equal(steps.masked_scores, apply_mask(attention_scores(query, key), causal_mask(5)))


@pytest.mark.parametrize(
    "steps, mask",
    [
        (toy.love_mathematics(), None),
        (toy.apple_iphones(causal=True), causal_mask(4)),
        (embedding_self_attention(toy.APPLE_IPHONES_TOKENS, toy.APPLE_IPHONES_X), None),
    ],
    ids=["love-mathematics", "apple-causal", "embeddings"],
)
def test_the_worked_examples_steps_are_the_models_functions_output_bit_for_bit(steps, mask):
    assert torch.equal(steps.scaled_scores, attention_scores(steps.query, steps.key))
    assert torch.equal(steps.masked_scores, apply_mask(attention_scores(steps.query, steps.key), mask))
    assert torch.equal(steps.weights, attention_weights(steps.query, steps.key, mask))
    assert torch.equal(steps.output, steps.weights @ steps.value)


def test_every_weight_the_attention_lesson_shows_comes_from_the_models_one_masked_softmax(monkeypatch):
    """Swap the softmax for even weights: every source of the lesson follows, so none keeps a copy of it."""

    def even_weights(scores, mask=None, *, in_place=False):
        return torch.full_like(scores, 1 / scores.size(-1))

    monkeypatch.setattr(anatomy.attention, "masked_softmax", even_weights)
    trace, hidden = a_traced_causal_head()
    shown = {
        "toy": toy.love_mathematics().weights,
        "apple": toy.apple_iphones(causal=True).weights,
        "embeddings": embedding_self_attention(toy.APPLE_IPHONES_TOKENS, toy.APPLE_IPHONES_X).weights,
        "model": traced_head_steps("abcde", trace, head=0, layer_input=hidden).weights,
    }
    for source, weights in shown.items():
        assert torch.equal(weights.float(), torch.full(weights.shape, 1 / weights.size(-1))), (
            source
        )  # float32 of the model

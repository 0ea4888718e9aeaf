"""The worked examples of the attention lessons and the sinusoidal positional encoding.

Every expected number here is recomputed independently (numpy, Python's math module, or by hand in a comment),
never taken from the package under test.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from anatomy.config import DecoderConfig
from anatomy.models import DecoderOnlyLM
from anatomy.positional import sinusoidal_positional_encoding
from lessons.common import examples as toy

# "I love mathematics", written out again in numpy.
X = np.array([[0, 2, 0, 1], [1, 1, 2, 1], [1, 0, 2, 0]])
W_Q = np.array([[2, 0, 0, 0], [1, 0, 2, 2], [0, 2, 0, 0], [1, 1, 1, 0]])
W_K = np.array([[1, 0, 0, 0], [0, 0, 0, 0], [2, 1, 2, 0], [1, 0, 0, 1]])
W_V = np.array([[1, 0, 0, 0], [0, 2, 1, 0], [0, 1, 1, 2], [0, 2, 1, 0]])


def numpy_attention(query, key, value):
    """softmax(QKᵀ/√d)·V written out in numpy, independently of the package."""
    scores = query @ key.T / np.sqrt(query.shape[1])
    exponentials = np.exp(scores - scores.max(axis=1, keepdims=True))
    weights = exponentials / exponentials.sum(axis=1, keepdims=True)
    return weights, weights @ value


@pytest.fixture(scope="module")
def love_mathematics():
    return toy.love_mathematics()


def test_the_love_mathematics_inputs_are_three_tokens_of_four_whole_numbers():
    assert toy.LOVE_MATHEMATICS_TOKENS == ("I", "love", "mathematics")
    for ours, written in [
        (toy.LOVE_MATHEMATICS_X, X),
        (toy.LOVE_MATHEMATICS_W_Q, W_Q),
        (toy.LOVE_MATHEMATICS_W_K, W_K),
        (toy.LOVE_MATHEMATICS_W_V, W_V),
    ]:
        assert ours.tolist() == written.tolist()


def test_query_key_and_value_are_the_exact_integer_products(love_mathematics):
    steps = love_mathematics
    assert steps.query.tolist() == (X @ W_Q).tolist()
    assert steps.key.tolist() == (X @ W_K).tolist()
    assert steps.value.tolist() == (X @ W_V).tolist()
    assert steps.query[0].tolist() == [3, 1, 5, 4]  # by hand: (0, 2, 0, 1) · W_Q = 2·(1, 0, 2, 2) + (1, 1, 1, 0)
    assert steps.raw_scores.tolist() == ((X @ W_Q) @ (X @ W_K).T).tolist()


def test_weights_and_output_match_an_independent_numpy_computation(love_mathematics):
    weights, output = numpy_attention(X @ W_Q, X @ W_K, X @ W_V)
    assert love_mathematics.weights.dtype == torch.float64
    np.testing.assert_allclose(love_mathematics.weights.numpy(), weights, rtol=0, atol=1e-12)
    np.testing.assert_allclose(love_mathematics.output.numpy(), output, rtol=0, atol=1e-12)
    scaled_scores = (X @ W_Q) @ (X @ W_K).T / 2.0  # √d = √4
    np.testing.assert_allclose(love_mathematics.scaled_scores.numpy(), scaled_scores, rtol=0, atol=0)


def test_apple_becomes_6_5_14_5():
    """Apple's query scores 202 against its own key and against iPhones', far above 100 and 95, so the softmax
    splits its weight evenly between the two: 0.5·(11, 9) + 0.5·(2, 20) = (6.5, 14.5)."""
    steps = toy.apple_iphones()
    apple = steps.tokens.index("Apple")
    assert apple == 2
    assert steps.output[apple].tolist() == pytest.approx([6.5, 14.5], abs=1e-9)
    assert steps.weights[apple].tolist() == pytest.approx([0.0, 0.0, 0.5, 0.5], abs=1e-9)
    assert steps.raw_scores[apple].tolist() == [100.0, 95.0, 202.0, 202.0]  # Apple·I, ·love, ·Apple, ·iPhones


def test_the_apple_example_uses_the_embeddings_as_query_key_and_value():
    steps = toy.apple_iphones()
    assert torch.equal(steps.query, toy.APPLE_IPHONES_X)
    assert torch.equal(steps.key, toy.APPLE_IPHONES_X) and torch.equal(steps.value, toy.APPLE_IPHONES_X)
    assert steps.inputs.tolist() == [[5, 5], [7, 2], [11, 9], [2, 20]]


def test_the_causal_apple_example_lets_apple_see_only_i_love_and_itself():
    steps = toy.apple_iphones(causal=True)
    assert steps.weights[2, 3].item() == 0.0 and torch.isinf(steps.masked_scores[2, 3])
    assert steps.weights[2].tolist() == pytest.approx([0.0, 0.0, 1.0, 0.0], abs=1e-9)


def formula(position: int, index: int, width: int, base: float) -> float:
    """p_i(t) = sin(t·base^(−i/d)) for even i, cos(t·base^(−(i−1)/d)) for odd i."""
    if index % 2 == 0:
        return math.sin(position * base ** (-index / width))
    return math.cos(position * base ** (-(index - 1) / width))


@pytest.mark.parametrize("width", [6, 7, 128])
@pytest.mark.parametrize("base", [10_000.0, 100.0])
def test_sinusoidal_encoding_follows_the_paper_formula(width, base):
    encoding = sinusoidal_positional_encoding(50, width, base=base)
    assert encoding.shape == (50, width)
    samples = [(t, i) for t in (0, 1, 2, 17, 49) for i in sorted({0, 1, 2, 3, width // 2, width - 2, width - 1})]
    for position, index in samples:
        expected = formula(position, index, width, base)
        assert encoding[position, index].item() == pytest.approx(expected, abs=1e-7), (position, index)


def test_sinusoidal_encoding_with_odd_width_ends_on_a_sine():
    encoding = sinusoidal_positional_encoding(10, 7)
    last_frequency = 10_000 ** (-6 / 7)
    assert encoding[9, 6].item() == pytest.approx(math.sin(9 * last_frequency), abs=1e-7)
    assert encoding[0].tolist() == [0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0]  # position 0: sin 0, cos 0


def test_sinusoidal_base_changes_the_encoding():
    usual, short_base = sinusoidal_positional_encoding(20, 8), sinusoidal_positional_encoding(20, 8, base=100.0)
    assert (usual - short_base).abs().max() > 0.1


@pytest.mark.parametrize("width", [6, 7, 128])
def test_sinusoidal_values_are_bounded_rows_unique_and_deterministic(width):
    encoding = sinusoidal_positional_encoding(512, width)
    assert encoding.abs().max().item() <= 1.0
    distances = torch.cdist(encoding.double(), encoding.double())
    off_diagonal = distances[~torch.eye(512, dtype=torch.bool)]
    assert off_diagonal.min().item() > 1e-3, "two positions share (almost) the same vector"
    # Deterministic: a row is a function of its position alone, so a longer table begins with the same rows.
    assert torch.equal(encoding, sinusoidal_positional_encoding(1024, width)[:512])


def test_sinusoidal_encoding_rejects_a_zero_width():
    with pytest.raises(ValueError):
        sinusoidal_positional_encoding(4, 0)


def test_a_decoder_configured_with_the_papers_sinusoids_adds_them_to_its_embeddings_and_learns_no_table():
    torch.manual_seed(0)
    config = DecoderConfig(
        vocab_size=11, width=8, num_heads=2, ff_width=16, num_layers=1, dropout=0.0, positions="sinusoidal"
    )
    model = DecoderOnlyLM(config).eval()
    ids = torch.tensor([[3, 1, 4, 1, 5]])
    with torch.no_grad():
        embedded, _ = model.embeddings(ids)
        continued, _ = model.embeddings(ids[:, 3:], first_position=3)  # after a cached prefix of 3 tokens
    table = sinusoidal_positional_encoding(config.max_positions, config.width)
    assert torch.equal(embedded, model.embeddings.token(ids) + table[:5][None])
    assert torch.equal(continued, embedded[:, 3:])
    assert not [name for name in model.state_dict() if "position" in name]  # a fixed table: nothing to learn or save

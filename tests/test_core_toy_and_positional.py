"""The chapter's worked examples (seeds 002 and 004) and the sinusoidal positional encoding.

Every expected number here is either copied from a seed's printed output or recomputed independently
(numpy, or Python's math module) — never taken from the package under test.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from anatomy import toy
from anatomy.positional import sinusoidal_positional_encoding

# Seed 002 as printed: its numpy arrays and the outputs of cells 19, 45 and 46.
SEED_X = np.array([[0, 2, 0, 1], [1, 1, 2, 1], [1, 0, 2, 0]])
SEED_WQ = np.array([[2, 0, 0, 0], [1, 0, 2, 2], [0, 2, 0, 0], [1, 1, 1, 0]])
SEED_WK = np.array([[1, 0, 0, 0], [0, 0, 0, 0], [2, 1, 2, 0], [1, 0, 0, 1]])
SEED_WV = np.array([[1, 0, 0, 0], [0, 2, 1, 0], [0, 1, 1, 2], [0, 2, 1, 0]])
PRINTED_Q = [[3, 1, 5, 4], [4, 5, 3, 2], [2, 4, 0, 0]]
PRINTED_K = [[1, 0, 0, 1], [6, 2, 4, 1], [5, 2, 4, 0]]
PRINTED_V = [[0, 6, 3, 0], [1, 6, 4, 4], [1, 2, 2, 4]]
PRINTED_WEIGHTS = np.array([[8.96667933e-09, 9.70687761e-01, 2.93122305e-02],
                            [7.22295087e-10, 9.52574126e-01, 4.74258731e-02],
                            [9.02116571e-05, 7.30992629e-01, 2.68917160e-01]])
PRINTED_OUTPUT = np.array([[0.99999999, 5.88275108, 3.94137553, 3.99999996],
                           [1.0, 5.81029651, 3.90514825, 4.0],
                           [0.99990979, 4.92433136, 3.46207547, 3.99963915]])


def numpy_attention(query, key, value):
    """softmax(QKᵀ/√d)·V written out in numpy, independently of the package."""
    scores = query @ key.T / np.sqrt(query.shape[1])
    exponentials = np.exp(scores - scores.max(axis=1, keepdims=True))
    weights = exponentials / exponentials.sum(axis=1, keepdims=True)
    return weights, weights @ value


@pytest.fixture(scope="module")
def love_mathematics():
    return toy.love_mathematics()


def test_seed_002_inputs_are_the_matrices_printed_in_the_notes():
    assert toy.LOVE_MATHEMATICS_TOKENS == ("I", "love", "mathematics")
    for ours, printed in [(toy.LOVE_MATHEMATICS_X, SEED_X), (toy.LOVE_MATHEMATICS_W_Q, SEED_WQ),
                          (toy.LOVE_MATHEMATICS_W_K, SEED_WK), (toy.LOVE_MATHEMATICS_W_V, SEED_WV)]:
        assert ours.tolist() == printed.tolist()


def test_seed_002_query_key_value_are_the_exact_integer_products(love_mathematics):
    steps = love_mathematics
    assert steps.query.tolist() == (SEED_X @ SEED_WQ).tolist() == PRINTED_Q
    assert steps.key.tolist() == (SEED_X @ SEED_WK).tolist() == PRINTED_K
    assert steps.value.tolist() == (SEED_X @ SEED_WV).tolist() == PRINTED_V
    assert steps.raw_scores.tolist() == (np.array(PRINTED_Q) @ np.array(PRINTED_K).T).tolist()


def test_seed_002_weights_and_output_match_an_independent_numpy_computation(love_mathematics):
    weights, output = numpy_attention(SEED_X @ SEED_WQ, SEED_X @ SEED_WK, SEED_X @ SEED_WV)
    assert love_mathematics.weights.dtype == torch.float64
    np.testing.assert_allclose(love_mathematics.weights.numpy(), weights, rtol=0, atol=1e-12)
    np.testing.assert_allclose(love_mathematics.output.numpy(), output, rtol=0, atol=1e-12)
    scaled_scores = (SEED_X @ SEED_WQ) @ (SEED_X @ SEED_WK).T / 2.0  # √d = √4
    np.testing.assert_allclose(love_mathematics.scaled_scores.numpy(), scaled_scores, rtol=0, atol=0)


def test_seed_002_weights_and_output_match_the_printed_notebook_values(love_mathematics):
    """Printed to 9 significant figures, so agreement to 1e-8 relative is all the print can show."""
    np.testing.assert_allclose(love_mathematics.weights.numpy(), PRINTED_WEIGHTS, rtol=1e-8, atol=0)
    np.testing.assert_allclose(love_mathematics.output.numpy(), PRINTED_OUTPUT, rtol=0, atol=1e-8)
    assert love_mathematics.weights[0, 0].item() == pytest.approx(8.96667933e-09, rel=1e-8)


def test_seed_004_apple_becomes_6_5_14_5_not_the_printed_8_5_14_5():
    """The notes print [Apple] = [8.5, 14.5]; 0.5·(11, 9) + 0.5·(2, 20) is (6.5, 14.5): an arithmetic slip
    in the first feature. The app must show 6.5."""
    steps = toy.apple_iphones()
    apple = steps.tokens.index("Apple")
    assert apple == 2
    assert steps.output[apple].tolist() == pytest.approx([6.5, 14.5], abs=1e-9)
    assert steps.weights[apple].tolist() == pytest.approx([0.0, 0.0, 0.5, 0.5], abs=1e-9)
    assert steps.raw_scores[apple].tolist() == [100.0, 95.0, 202.0, 202.0]  # Apple·I, ·love, ·Apple, ·iPhones


def test_seed_004_uses_the_embeddings_as_query_key_and_value():
    steps = toy.apple_iphones()
    assert torch.equal(steps.query, toy.APPLE_IPHONES_X)
    assert torch.equal(steps.key, toy.APPLE_IPHONES_X) and torch.equal(steps.value, toy.APPLE_IPHONES_X)
    assert steps.inputs.tolist() == [[5, 5], [7, 2], [11, 9], [2, 20]]


def test_seed_004_causal_variant_lets_apple_see_only_i_love_and_itself():
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
    assert torch.equal(encoding, sinusoidal_positional_encoding(512, width))


def test_sinusoidal_encoding_rejects_a_zero_width():
    with pytest.raises(ValueError):
        sinusoidal_positional_encoding(4, 0)

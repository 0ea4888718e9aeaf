"""The small worked examples of the attention and masking lessons, as tensors, so that pages and tests compute them.

Only the inputs are written down here. Every number the app shows about them is computed from these inputs by
the package, and the tests recompute them independently (numpy, by hand).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from anatomy.attention import apply_mask, attention_scores, scaled_dot_product_attention
from anatomy.masks import causal_mask


@dataclass(frozen=True)
class SingleHeadSteps:
    """Every step of one attention head on a small example, Q = X·W_Q and so on (no biases)."""

    tokens: tuple[str, ...]
    inputs: Tensor  # X (T, D)
    query: Tensor  # Q = X W_Q (T, d)
    key: Tensor  # K = X W_K (T, d)
    value: Tensor  # V = X W_V (T, d)
    raw_scores: Tensor  # Q Kᵀ (T, T)
    scaled_scores: Tensor  # Q Kᵀ / √dₖ
    masked_scores: Tensor  # with −∞ where the mask forbids (equal to scaled_scores without a mask)
    weights: Tensor  # softmax per row
    output: Tensor  # weights · V (T, d)


def single_head_steps(
    tokens, inputs: Tensor, w_query: Tensor, w_key: Tensor, w_value: Tensor, causal: bool = False
) -> SingleHeadSteps:
    """Run one head by hand on a toy example, keeping every intermediate (float64, so no rounding noise)."""
    inputs, w_query, w_key, w_value = (m.to(torch.float64) for m in (inputs, w_query, w_key, w_value))
    query, key, value = inputs @ w_query, inputs @ w_key, inputs @ w_value
    mask = causal_mask(inputs.size(0)) if causal else None
    output, weights = scaled_dot_product_attention(query, key, value, mask)  # what a model runs
    raw_scores = query @ key.T
    scaled_scores = attention_scores(query, key)  # the steps before the softmax, by the functions it ran
    masked_scores = apply_mask(scaled_scores, mask)
    return SingleHeadSteps(
        tuple(tokens), inputs, query, key, value, raw_scores, scaled_scores, masked_scores, weights, output
    )


# "I love mathematics": 3 tokens with 4-wide embeddings X and three 4×4 projections, small whole numbers
# so that Q, K, V and QKᵀ can be checked by hand.
LOVE_MATHEMATICS_TOKENS = ("I", "love", "mathematics")
LOVE_MATHEMATICS_X = torch.tensor([[0, 2, 0, 1], [1, 1, 2, 1], [1, 0, 2, 0]], dtype=torch.float64)
LOVE_MATHEMATICS_W_Q = torch.tensor([[2, 0, 0, 0], [1, 0, 2, 2], [0, 2, 0, 0], [1, 1, 1, 0]], dtype=torch.float64)
LOVE_MATHEMATICS_W_K = torch.tensor([[1, 0, 0, 0], [0, 0, 0, 0], [2, 1, 2, 0], [1, 0, 0, 1]], dtype=torch.float64)
LOVE_MATHEMATICS_W_V = torch.tensor([[1, 0, 0, 0], [0, 2, 1, 0], [0, 1, 1, 2], [0, 2, 1, 0]], dtype=torch.float64)

# "I love Apple iPhones": two hand-made features per word, (fruitiness, technology), so that "Apple" can be
# seen to move towards the company once it attends to "iPhones".
APPLE_IPHONES_TOKENS = ("I", "love", "Apple", "iPhones")
APPLE_IPHONES_FEATURES = ("fruitiness", "technology")
APPLE_IPHONES_X = torch.tensor([[5, 5], [7, 2], [11, 9], [2, 20]], dtype=torch.float64)

# A made-up 4×4 score matrix for the causal mask to act on (rows are queries, columns keys).
CAUSAL_EXAMPLE_SCORES = torch.tensor(
    [[0.7, 0.1, 0.1, 0.1], [0.1, 0.3, 0.6, 0.1], [0.1, 0.6, 0.1, 0.2], [0.4, 0.1, 0.2, 0.3]], dtype=torch.float64
)


def love_mathematics() -> SingleHeadSteps:
    """The "I love mathematics" example with its own projection matrices."""
    return single_head_steps(
        LOVE_MATHEMATICS_TOKENS, LOVE_MATHEMATICS_X, LOVE_MATHEMATICS_W_Q, LOVE_MATHEMATICS_W_K, LOVE_MATHEMATICS_W_V
    )


def apple_iphones(causal: bool = False) -> SingleHeadSteps:
    """The "I love Apple iPhones" example: Q = K = V = the embeddings themselves (identity projections)."""
    identity = torch.eye(APPLE_IPHONES_X.size(1), dtype=torch.float64)
    return single_head_steps(APPLE_IPHONES_TOKENS, APPLE_IPHONES_X, identity, identity, identity, causal)

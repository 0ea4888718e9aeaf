"""What one forward pass computed, step by step, as plain frozen dataclasses.

Modules never store these on themselves: a forward that is asked to trace *returns* them, so one model
object can serve any number of browser sessions at once. Scores and attention weights are derived from the
recorded queries and keys on demand, by the very operations the forward ran, so they are the same numbers
bit for bit, and so are the heads' concatenation and the feed-forward activations. Not storing them takes a
512-token MiniLM trace from 161 MB to 67 MB (the weights alone are 12 heads × 512 × 512 floats, 12.6 MB a
layer).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass(frozen=True)
class AttentionTrace:
    """One multi-head attention sublayer, every step of softmax(QKᵀ/√d_head)·V and the output projection."""

    query: Tensor  # (B, H, T, d_head)
    key: Tensor  # (B, H, S, d_head)
    value: Tensor  # (B, H, S, d_head)
    mask: Tensor | None  # broadcastable to (B, H, T, S); True where attending is allowed
    head_outputs: Tensor  # (B, H, T, d_head) weights @ value, one block per head
    output: Tensor  # (B, T, D) concatenated @ W_O + b_O

    @property
    def scale(self) -> float:
        """√d_head, the divisor that keeps dot products of wide vectors from saturating the softmax."""
        return math.sqrt(self.query.size(-1))

    @property
    def concatenated(self) -> Tensor:
        """(B, T, D) the heads laid side by side: each token's H head outputs joined into one row, as the forward
        joins them before W_O. Only a reshuffle of `head_outputs`, so the trace need not keep a copy."""
        from anatomy.attention import merge_heads  # imported here: anatomy.attention imports this module

        return merge_heads(self.head_outputs)

    @property
    def raw_scores(self) -> Tensor:
        """(B, H, T, S) every query dotted with every key: QKᵀ."""
        return self.query @ self.key.transpose(-2, -1)

    @property
    def scaled_scores(self) -> Tensor:
        """(B, H, T, S) QKᵀ / √d_head."""
        # Divided in place, as the forward does: the product is a fresh tensor, and the quotient the same
        # numbers as `/` gives, without a second (B, H, T, S) buffer (12.6 MB a MiniLM layer at 512 tokens).
        return self.raw_scores.div_(self.scale)

    @property
    def masked_scores(self) -> Tensor:
        """(B, H, T, S) scaled scores with −∞ wherever the mask forbids attending."""
        scores = self.scaled_scores
        return scores if self.mask is None else scores.masked_fill_(~self.mask, float("-inf"))

    @property
    def weights(self) -> Tensor:
        """(B, H, T, S) softmax of the masked scores: each row sums to 1, or is all zero when every key is masked
        (as in `scaled_dot_product_attention`). Computed afresh on each call: keep the result, not the trace."""
        weights = torch.softmax(self.masked_scores, dim=-1)
        if self.mask is not None:
            fully_masked_rows = ~self.mask.any(dim=-1, keepdim=True)  # (..., T, 1)
            if fully_masked_rows.any():
                weights = weights.masked_fill(fully_masked_rows, 0.0)
        return weights


@dataclass(frozen=True)
class FeedForwardTrace:
    """The position-wise feed-forward network: expand to F, apply the non-linearity, contract to D."""

    hidden_preactivation: Tensor  # (B, T, F) the expansion (up_proj in a gated feed-forward)
    output: Tensor  # (B, T, D)
    nonlinearity: Callable[[Tensor], Tensor]  # the one the forward applied (GELU, ReLU, SiLU ...)
    gate_preactivation: Tensor | None = None  # (B, T, F) the gate's expansion (gate_proj), when gated

    @property
    def hidden_activation(self) -> Tensor:
        """(B, T, F) what enters the contraction: the non-linearity of the pre-activations, or, gated, the
        non-linearity of the gate times the expansion. Element-wise functions, so recomputing them gives the
        forward's numbers bit for bit, and a trace need not keep them."""
        if self.gate_preactivation is None:
            return self.nonlinearity(self.hidden_preactivation)
        return self.nonlinearity(self.gate_preactivation) * self.hidden_preactivation


@dataclass(frozen=True)
class LayerTrace:
    """One transformer block, from its input to its output."""

    input: Tensor  # (B, T, D)
    attention: AttentionTrace
    attention_residual: Tensor  # (B, T, D) input + attention output
    feed_forward: FeedForwardTrace
    feed_forward_residual: Tensor  # (B, T, D) feed-forward input + its output
    output: Tensor  # (B, T, D)
    norm_outputs: dict[str, Tensor]  # each layer norm's output, by module name
    cross_attention: AttentionTrace | None = None  # decoder blocks of an encoder-decoder model only
    cross_attention_residual: Tensor | None = None


@dataclass(frozen=True)
class EmbeddingTrace:
    """Token ids turned into the vectors that enter layer 0."""

    token: Tensor  # (B, T, D) rows of the token embedding table
    position: Tensor | None  # (B or 1, T, D) learned or sinusoidal position vectors; None with rotary positions
    token_type: Tensor | None  # (B, T, D) segment A/B vectors (BERT only)
    summed: Tensor  # (B, T, D) their sum
    output: Tensor  # (B, T, D) after the embedding layer norm, if the model has one


@dataclass(frozen=True)
class ModelTrace:
    """Every intermediate of one forward pass."""

    embeddings: EmbeddingTrace
    layers: tuple[LayerTrace, ...]
    output: Tensor  # (B, T, D) the final hidden states

    @property
    def attention_weights(self) -> Tensor:
        """(L, B, H, T, S) the attention weights of every layer stacked (75 MB for MiniLM at 512 tokens)."""
        first = self.layers[0].attention.weights
        stacked = first.new_empty((len(self.layers), *first.shape))
        stacked[0] = first
        for index, layer in enumerate(self.layers[1:], start=1):
            stacked[index] = layer.attention.weights  # one layer's weights alive at a time, not all L
        return stacked

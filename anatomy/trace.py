"""What one forward pass computed, step by step, as plain frozen dataclasses.

Modules never store these on themselves: a forward that is asked to trace *returns* them, so one model
object can serve any number of browser sessions at once. Scores are derived from the recorded queries and
keys on demand (the same operations the forward ran), which keeps a 512-token trace small.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass(frozen=True)
class AttentionTrace:
    """One multi-head attention sublayer, every step of softmax(QKᵀ/√d_head)·V and the output projection."""

    query: Tensor          # (B, H, T, d_head)
    key: Tensor            # (B, H, S, d_head)
    value: Tensor          # (B, H, S, d_head)
    mask: Tensor | None    # broadcastable to (B, H, T, S); True where attending is allowed
    weights: Tensor        # (B, H, T, S) each row sums to 1 (or is all zero when fully masked)
    head_outputs: Tensor   # (B, H, T, d_head) weights @ value, one block per head
    concatenated: Tensor   # (B, T, D) the heads laid side by side
    output: Tensor         # (B, T, D) concatenated @ W_O + b_O

    @property
    def scale(self) -> float:
        """√d_head, the divisor that keeps dot products of wide vectors from saturating the softmax."""
        return math.sqrt(self.query.size(-1))

    @property
    def raw_scores(self) -> Tensor:
        """(B, H, T, S) every query dotted with every key: QKᵀ."""
        return self.query @ self.key.transpose(-2, -1)

    @property
    def scaled_scores(self) -> Tensor:
        """(B, H, T, S) QKᵀ / √d_head."""
        return self.raw_scores / self.scale

    @property
    def masked_scores(self) -> Tensor:
        """(B, H, T, S) scaled scores with −∞ wherever the mask forbids attending."""
        if self.mask is None:
            return self.scaled_scores
        return self.scaled_scores.masked_fill(~self.mask, float("-inf"))


@dataclass(frozen=True)
class FeedForwardTrace:
    """The position-wise feed-forward network: expand to F, apply the non-linearity, contract to D."""

    hidden_preactivation: Tensor  # (B, T, F)
    hidden_activation: Tensor     # (B, T, F)
    output: Tensor                # (B, T, D)


@dataclass(frozen=True)
class LayerTrace:
    """One transformer block, from its input to its output."""

    input: Tensor                                   # (B, T, D)
    attention: AttentionTrace
    attention_residual: Tensor                      # (B, T, D) input + attention output
    feed_forward: FeedForwardTrace
    feed_forward_residual: Tensor                   # (B, T, D) feed-forward input + its output
    output: Tensor                                  # (B, T, D)
    norm_outputs: dict[str, Tensor]                 # each layer norm's output, by module name
    cross_attention: AttentionTrace | None = None   # decoder blocks of an encoder-decoder model only
    cross_attention_residual: Tensor | None = None


@dataclass(frozen=True)
class EmbeddingTrace:
    """Token ids turned into the vectors that enter layer 0."""

    token: Tensor              # (B, T, D) rows of the token embedding table
    position: Tensor           # (B or 1, T, D) learned or sinusoidal position vectors
    token_type: Tensor | None  # (B, T, D) segment A/B vectors (BERT only)
    summed: Tensor             # (B, T, D) their sum
    output: Tensor             # (B, T, D) after the embedding layer norm, if the model has one


@dataclass(frozen=True)
class ModelTrace:
    """Every intermediate of one forward pass."""

    embeddings: EmbeddingTrace
    layers: tuple[LayerTrace, ...]
    output: Tensor  # (B, T, D) the final hidden states

    @property
    def attention_weights(self) -> Tensor:
        """(L, B, H, T, S) the attention weights of every layer stacked."""
        return torch.stack([layer.attention.weights for layer in self.layers])

"""What one forward pass computed, step by step, as plain frozen dataclasses.

Modules never store these on themselves: a forward that is asked to trace *returns* them, so one model
object can serve any number of browser sessions at once. What a trace can derive from what it keeps, it derives
on demand, by the very operations the forward ran, so it gets the same numbers bit for bit: the feed-forward
activations here, and the attention scores and weights in `AttentionTrace`, which lives beside the attention
that makes it (`anatomy.attention`). Not storing them takes a 512-token MiniLM trace from 161 MB to 67 MB (the
weights alone are 12 heads × 512 × 512 floats, 12.6 MB a layer).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from torch import Tensor

from anatomy.attention import AttentionTrace


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

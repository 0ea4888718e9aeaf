"""What one forward pass computed, step by step, as plain frozen dataclasses.

Modules never store these on themselves: a forward that is asked to trace *returns* them, so one model
object can serve any number of browser sessions at once. What a trace can derive from what it keeps, it derives
on demand, by the very operations the forward ran, so it gets the same numbers bit for bit: everything of the
feed-forward sublayer here, and in `AttentionTrace`, which lives beside the attention that makes it
(`anatomy.attention`), the scores, weights, mask and output projection. Not storing them takes a 512-token
MiniLM trace from 161 MB to 42 MB (the weights alone are 12 heads × 512 × 512 floats, 12.6 MB a layer), and a
2,048-token SmolLM2 traced forward's peak from 2.7 GB to 1.4 GB over the weights (benchmarks/long_text.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from anatomy.attention import AttentionTrace


@dataclass(frozen=True)
class FeedForwardTrace:
    """The position-wise feed-forward network: expand to F, apply the non-linearity, contract to D.

    It keeps the sublayer's input (the norm's output, which the layer keeps anyway) and the three projections,
    and recomputes the (B, T, F) expansions, four times the width of the model, on each call: by the same
    functions on the same input, so bit for bit the forward's numbers.
    """

    input: Tensor  # (B, T, D) what the sublayer was given
    expand: Callable[[Tensor], Tensor]  # D -> F (up_proj in a gated feed-forward)
    contract: Callable[[Tensor], Tensor]  # F -> D (down_proj)
    nonlinearity: Callable[[Tensor], Tensor]  # the one the forward applied (GELU, ReLU, SiLU ...)
    gate: Callable[[Tensor], Tensor] | None = None  # D -> F (gate_proj), when gated

    @property
    def hidden_preactivation(self) -> Tensor:
        """(B, T, F) the expansion."""
        with torch.inference_mode(self.input.is_inference()):  # as the forward ran: a trace made in inference mode
            return self.expand(self.input)  # may be read outside it, by a model whose weights require gradients

    @property
    def gate_preactivation(self) -> Tensor | None:
        """(B, T, F) the gate's expansion, when gated."""
        if self.gate is None:
            return None
        with torch.inference_mode(self.input.is_inference()):
            return self.gate(self.input)

    @property
    def hidden_activation(self) -> Tensor:
        """(B, T, F) what enters the contraction: the non-linearity of the pre-activations, or, gated, the
        non-linearity of the gate times the expansion."""
        gate_preactivation = self.gate_preactivation
        if gate_preactivation is None:
            return self.nonlinearity(self.hidden_preactivation)
        return self.nonlinearity(gate_preactivation) * self.hidden_preactivation

    @property
    def output(self) -> Tensor:
        """(B, T, D) the contraction of the hidden activations, the sublayer's output."""
        with torch.inference_mode(self.input.is_inference()):
            return self.contract(self.hidden_activation)


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

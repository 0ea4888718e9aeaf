"""Transformer blocks: attention and feed-forward sublayers, each added back onto its input and normalised.

Every sublayer's output is added to the sublayer's input (the residual, or skip, connection), so no block can
forget what it was given. Where the layer norm goes is the one real design choice:

* **post-LN** ("Attention Is All You Need", §5.4; BERT): `x = LayerNorm(x + sublayer(x))`. The norm sits on
  the main path; deep stacks need a learning-rate warm-up to train.
* **pre-LN** (GPT-2 and most models since): `x = x + sublayer(LayerNorm(x))`. The main path is never
  normalised, which trains more stably; such stacks end with one final LayerNorm.

An encoder block has two sublayers, a decoder block two or three: masked self-attention, then (in an
encoder-decoder) cross-attention over the encoder's output, then feed-forward. Each `forward` below reads
as the figure of the paper: for every sublayer, norm (pre-LN), sublayer, add, norm (post-LN).

A Llama-family decoder block (SmolLM2) is the same pre-LN block with other parts plugged in by its
configuration: RMSNorm for LayerNorm, grouped-query attention with rotary positions, a gated feed-forward.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from anatomy.attention import AttentionEdit, MultiHeadAttention
from anatomy.cache import LayerCache
from anatomy.config import DecoderConfig, NormPlacement, TransformerConfig
from anatomy.feedforward import FeedForward
from anatomy.norms import make_norm
from anatomy.rotary import Rotation
from anatomy.trace import LayerTrace


@dataclass(frozen=True)
class SublayerStep:
    """One sublayer and its residual connection: what comes out, the residual sum, the norm's output, and the
    sublayer's own trace (None unless traced)."""

    output: Tensor
    residual_sum: Tensor
    norm_output: Tensor
    trace: Any


class ResidualBlock(nn.Module):
    """What every block shares: its norm placement and the dropout on each sublayer's output."""

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.norm_placement: NormPlacement = config.norm_placement
        self.dropout = nn.Dropout(config.dropout)

    def sublayer(self, x: Tensor, norm: nn.Module, run: Callable[[Tensor], tuple[Tensor, Any]]) -> SublayerStep:
        """`run` (a sublayer returning its output and trace) with its residual connection and norm:
        pre-LN `x + run(norm(x))`, post-LN `norm(x + run(x))`, dropout on the sublayer's output either way."""
        if self.norm_placement == "pre":
            normed = norm(x)
            output, trace = run(normed)
            summed = x + self.dropout(output)
            return SublayerStep(summed, summed, normed, trace)
        output, trace = run(x)
        summed = x + self.dropout(output)
        normed = norm(summed)
        return SublayerStep(normed, summed, normed, trace)


class EncoderLayer(ResidualBlock):
    """Self-attention (every token reads every token), then the feed-forward network (each token on its own)."""

    def __init__(self, config: TransformerConfig):
        super().__init__(config)
        self.attention = MultiHeadAttention(config.width, config.num_heads)
        self.attention_norm = nn.LayerNorm(config.width, eps=config.layer_norm_eps)
        self.feed_forward = FeedForward(config.width, config.ff_width, config.activation)
        self.feed_forward_norm = nn.LayerNorm(config.width, eps=config.layer_norm_eps)

    def forward(self, x: Tensor, mask: Tensor | None = None, trace: bool = False) -> tuple[Tensor, LayerTrace | None]:
        """(B, T, D) -> (B, T, D), and every intermediate when trace=True. `mask` may hide padding keys."""
        attended = self.sublayer(x, self.attention_norm, lambda h: self.attention(h, mask=mask, trace=trace))
        transformed = self.sublayer(
            attended.output, self.feed_forward_norm, lambda h: self.feed_forward(h, trace=trace)
        )
        if not trace:
            return transformed.output, None
        return transformed.output, LayerTrace(
            input=x,
            attention=attended.trace,
            attention_residual=attended.residual_sum,
            feed_forward=transformed.trace,
            feed_forward_residual=transformed.residual_sum,
            output=transformed.output,
            norm_outputs={"attention_norm": attended.norm_output, "feed_forward_norm": transformed.norm_output},
        )


def rotation_of(config: DecoderConfig, x: Tensor, num_cached: int = 0) -> Rotation | None:
    """The angles of the positions of x (B, T, D), which follow `num_cached` earlier tokens; None unless the
    configuration's positions are rotary. They are the same in every layer, so a model computes them once per
    forward and hands them to each layer."""
    if config.positions != "rotary":
        return None
    positions = torch.arange(num_cached, num_cached + x.size(1), device=x.device)  # (T,)
    return Rotation.at(positions, config.head_width, config.rope_theta, x.dtype)


class DecoderLayer(ResidualBlock):
    """Masked self-attention, then (in an encoder-decoder model) cross-attention over the encoder's output,
    then the feed-forward network.

    The self-attention mask is causal: position t may read positions 0..t only. (`config.causal=False`
    removes it, for the one model trained without it to show what goes wrong.) Cross-attention needs no such
    mask, because the whole source sentence is known before decoding starts; its score matrix is rectangular,
    T decoder queries against S encoder keys.
    """

    def __init__(self, config: DecoderConfig):
        super().__init__(config)
        self.config = config
        self.causal = config.causal
        width, eps, bias = config.width, config.layer_norm_eps, config.bias
        self.attention = MultiHeadAttention(
            width,
            config.num_heads,
            num_kv_heads=config.num_kv_heads,
            bias=bias,
            rope_theta=config.rope_theta if config.positions == "rotary" else None,
        )
        self.attention_norm = make_norm(config.norm_kind, width, eps)
        self.cross_attention = (
            MultiHeadAttention(width, config.num_heads, bias=bias) if config.cross_attention else None
        )
        self.cross_attention_norm = make_norm(config.norm_kind, width, eps) if config.cross_attention else None
        self.feed_forward = FeedForward(
            width, config.ff_width, config.activation, gated=config.feed_forward == "gated", bias=bias
        )
        self.feed_forward_norm = make_norm(config.norm_kind, width, eps)

    def forward(
        self,
        x: Tensor,
        mask: Tensor | None = None,
        trace: bool = False,
        memory: Tensor | None = None,
        memory_mask: Tensor | None = None,
        cache: LayerCache | None = None,
        rotation: Rotation | None = None,
        attention_edit: AttentionEdit | None = None,
    ) -> tuple[Tensor, LayerTrace | None]:
        """(B, T, D) -> (B, T, D). `mask` (padding) is combined with the causal mask; `memory` (B, S, D) is the
        encoder's output, which cross-attention reads, and `memory_mask` hides its padding. With a `cache`, x
        continues the cached tokens: they are attended to, and this call's keys and values join them.
        A rotary layer computes its `rotation` when it is not given one (`rotation_of`). `attention_edit` changes
        this call's self-attention (see `AttentionEdit`)."""
        layer_input = x
        num_cached = 0 if cache is None else cache.length
        if rotation is None:
            rotation = rotation_of(self.config, x, num_cached)
        # The causal mask is the attention's to add: told that it is all there is, torch's kernel skips the keys
        # after each query instead of reading a (T, S) mask.
        attended = self.sublayer(
            x,
            self.attention_norm,
            lambda h: self.attention(
                h, mask=mask, causal=self.causal, trace=trace, rotation=rotation, cache=cache, edit=attention_edit
            ),
        )
        x = attended.output
        norm_outputs = {"attention_norm": attended.norm_output}
        read = None
        if self.cross_attention is not None and self.cross_attention_norm is not None:
            if memory is None:
                raise ValueError("this decoder layer has cross-attention: pass the encoder output as memory")
            cross_attention = self.cross_attention
            read = self.sublayer(
                x,
                self.cross_attention_norm,
                lambda h: cross_attention(queries_from=h, keys_and_values_from=memory, mask=memory_mask, trace=trace),
            )
            x = read.output
            norm_outputs["cross_attention_norm"] = read.norm_output
        transformed = self.sublayer(x, self.feed_forward_norm, lambda h: self.feed_forward(h, trace=trace))
        x = transformed.output
        norm_outputs["feed_forward_norm"] = transformed.norm_output

        if not trace:
            return x, None
        return x, LayerTrace(
            input=layer_input,
            attention=attended.trace,
            attention_residual=attended.residual_sum,
            feed_forward=transformed.trace,
            feed_forward_residual=transformed.residual_sum,
            output=x,
            norm_outputs=norm_outputs,
            cross_attention=None if read is None else read.trace,
            cross_attention_residual=None if read is None else read.residual_sum,
        )

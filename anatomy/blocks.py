"""Transformer blocks: attention and feed-forward sublayers wrapped in residual connections and layer norms.

Every sublayer is added back onto its input (the residual, or skip, connection) so that no layer can
forget what it was given. Where the layer norm goes is the one real design choice:

* **post-LN** (the original paper, BERT): `x = LayerNorm(x + sublayer(x))`. The norm sits on the main
  path; deep stacks need learning-rate warm-up to train.
* **pre-LN** (GPT-2, seed 000's encoder block): `x = x + sublayer(LayerNorm(x))`. The main path is never
  normalised, which trains more stably; such stacks end with one final LayerNorm.
"""

from __future__ import annotations

from typing import Callable

from torch import Tensor, nn

from anatomy.attention import Attention
from anatomy.config import DecoderConfig, TransformerConfig
from anatomy.feedforward import FeedForward
from anatomy.masks import causal_mask, combine_masks
from anatomy.trace import LayerTrace


class EncoderLayer(nn.Module):
    """Self-attention then feed-forward, each inside a residual connection with a layer norm."""

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.norm_placement = config.norm
        self.attention = Attention(config.width, config.num_heads)
        self.attention_norm = nn.LayerNorm(config.width, eps=config.layer_norm_eps)
        self.feed_forward = FeedForward(config.width, config.ff_width, config.activation, config.dropout)
        self.feed_forward_norm = nn.LayerNorm(config.width, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.dropout)

    def residual(
        self, hidden: Tensor, norm: nn.LayerNorm, sublayer: Callable[[Tensor], Tensor]
    ) -> tuple[Tensor, Tensor, Tensor]:
        """One sublayer with its skip connection; returns (output, residual sum, layer-norm output)."""
        if self.norm_placement == "pre":
            normalized = norm(hidden)
            residual = hidden + self.dropout(sublayer(normalized))
            return residual, residual, normalized
        residual = hidden + self.dropout(sublayer(hidden))
        normalized = norm(residual)
        return normalized, residual, normalized

    def forward(self, hidden: Tensor, mask: Tensor | None = None, trace: bool = False):
        """(B, T, D) -> (B, T, D), plus a LayerTrace when trace=True."""
        records = {}

        def attend(x: Tensor) -> Tensor:
            output, records["attention"] = self.attention(x, mask, trace=trace)
            return output

        def feed_forward(x: Tensor) -> Tensor:
            output, records["feed_forward"] = self.feed_forward(x, trace=trace)
            return output

        after_attention, attention_residual, attention_norm = self.residual(hidden, self.attention_norm, attend)
        output, ff_residual, ff_norm = self.residual(after_attention, self.feed_forward_norm, feed_forward)
        if not trace:
            return output, None
        return output, LayerTrace(
            input=hidden,
            attention=records["attention"],
            attention_residual=attention_residual,
            feed_forward=records["feed_forward"],
            feed_forward_residual=ff_residual,
            output=output,
            norm_outputs={"attention_norm": attention_norm, "feed_forward_norm": ff_norm},
        )


class DecoderLayer(EncoderLayer):
    """Masked self-attention, then (in an encoder-decoder model) cross-attention over the encoder's
    output, then feed-forward.

    The self-attention mask is causal: position t may read positions 0..t only. (`config.causal=False`
    removes it, for the one model trained without it to show what goes wrong.) Cross-attention
    needs no such mask, because the whole source sentence is known before decoding starts; its score
    matrix is rectangular, T decoder queries against S encoder keys.
    """

    def __init__(self, config: DecoderConfig):
        super().__init__(config)
        self.causal = config.causal
        self.cross_attention = Attention(config.width, config.num_heads) if config.cross_attention else None
        self.cross_attention_norm = (
            nn.LayerNorm(config.width, eps=config.layer_norm_eps) if config.cross_attention else None
        )

    def forward(
        self,
        hidden: Tensor,
        mask: Tensor | None = None,
        trace: bool = False,
        memory: Tensor | None = None,
        memory_mask: Tensor | None = None,
    ):
        """(B, T, D) -> (B, T, D); `mask` (e.g. padding) is combined with the causal mask;
        `memory` (B, S, D) is the encoder output that cross-attention reads."""
        future_mask = causal_mask(hidden.size(1), hidden.device) if self.causal else None
        self_mask = combine_masks(future_mask, mask)
        records = {}

        def attend(x: Tensor) -> Tensor:
            output, records["attention"] = self.attention(x, self_mask, trace=trace)
            return output

        def cross_attend(x: Tensor) -> Tensor:
            output, records["cross_attention"] = self.cross_attention(x, memory_mask, memory, trace=trace)
            return output

        def feed_forward(x: Tensor) -> Tensor:
            output, records["feed_forward"] = self.feed_forward(x, trace=trace)
            return output

        norms = {}
        hidden_now, attention_residual, norms["attention_norm"] = self.residual(
            hidden, self.attention_norm, attend
        )
        cross_residual = None
        if self.cross_attention is not None:
            if memory is None:
                raise ValueError("this decoder layer has cross-attention: pass the encoder output as memory")
            hidden_now, cross_residual, norms["cross_attention_norm"] = self.residual(
                hidden_now, self.cross_attention_norm, cross_attend
            )
        output, ff_residual, norms["feed_forward_norm"] = self.residual(
            hidden_now, self.feed_forward_norm, feed_forward
        )
        if not trace:
            return output, None
        return output, LayerTrace(
            input=hidden,
            attention=records["attention"],
            attention_residual=attention_residual,
            feed_forward=records["feed_forward"],
            feed_forward_residual=ff_residual,
            output=output,
            norm_outputs=norms,
            cross_attention=records.get("cross_attention"),
            cross_attention_residual=cross_residual,
        )

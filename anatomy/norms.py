"""The two norms a block can use: LayerNorm (BERT, GPT-2, the original Transformer) and RMSNorm (Llama, SmolLM2).

Both rescale each token's vector to a standard size before (pre-LN) or after (post-LN) a sublayer, then
multiply it by a learned gain per feature. LayerNorm first subtracts the vector's mean and adds a learned bias
afterwards; RMSNorm ("Root Mean Square Layer Normalization", Zhang & Sennrich, 2019) skips both and divides by
the root of the mean square alone: fewer operations, and in practice no worse.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from anatomy.config import NormKind


class RMSNorm(nn.Module):
    """x / sqrt(mean(x²) + eps) · weight: LayerNorm without centring and without a bias."""

    def __init__(self, width: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))
        self.eps = eps

    def forward(self, x: Tensor) -> Tensor:
        """(..., D) -> (..., D)."""
        x32 = x.float()  # the statistic in float32, even for half-precision inputs (as Llama does)
        mean_square = x32.pow(2).mean(-1, keepdim=True)  # (..., 1)
        return self.weight * (x32 * torch.rsqrt(mean_square + self.eps)).to(x.dtype)


def make_norm(kind: NormKind, width: int, eps: float) -> nn.Module:
    """The norm a configuration asks for."""
    return RMSNorm(width, eps) if kind == "rms" else nn.LayerNorm(width, eps=eps)

"""The position-wise feed-forward network: the same two-layer MLP applied to every token on its own.

Attention mixes information *between* tokens; this sublayer then transforms each token's vector
independently, through a hidden layer about four times wider than the model. Most of a transformer's
parameters live here.
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from anatomy.config import Activation
from anatomy.trace import FeedForwardTrace

ACTIVATIONS = {
    "gelu": lambda x: F.gelu(x),  # exact, with erf: BERT
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),  # the tanh approximation: GPT-2
    "relu": F.relu,  # the original Transformer ("Attention Is All You Need", §3.3)
}


class FeedForward(nn.Module):
    """Expand D -> F, apply the non-linearity, contract F -> D."""

    def __init__(self, width: int, ff_width: int, activation: Activation = "gelu", dropout: float = 0.0):
        super().__init__()
        self.activation_name = activation
        self.expand = nn.Linear(width, ff_width)
        self.contract = nn.Linear(ff_width, width)
        self.dropout = nn.Dropout(dropout)

    def forward(self, hidden: Tensor, trace: bool = False) -> tuple[Tensor, FeedForwardTrace | None]:
        """(B, T, D) -> (B, T, D), plus the hidden activations when trace=True."""
        nonlinearity = ACTIVATIONS[self.activation_name]
        preactivation = self.expand(hidden)  # (B, T, F)
        output = self.dropout(self.contract(nonlinearity(preactivation)))  # (B, T, D)
        if not trace:
            return output, None
        # The activations are not kept: the trace recomputes them from the pre-activations (see FeedForwardTrace).
        return output, FeedForwardTrace(preactivation, output, nonlinearity)

"""The position-wise feed-forward network: the same two-layer MLP applied to every token on its own.

Attention mixes information *between* tokens; this sublayer then transforms each token's vector
independently, through a hidden layer about four times wider than the model. Most of a transformer's
parameters live here.

Llama-family models (SmolLM2 included) use a *gated* variant, SwiGLU ("GLU Variants Improve Transformer",
Shazeer, 2020): two expansions side by side, one passed through the non-linearity (silu) and used as a gate
that scales the other unit by unit, `contract(silu(gate(x)) · expand(x))`. Hugging Face calls the three
matrices gate_proj, up_proj and down_proj.
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
    "silu": F.silu,  # x · sigmoid(x), the "Swish" of SwiGLU: Llama, SmolLM2
}


class FeedForward(nn.Module):
    """Expand D -> F, apply the non-linearity, contract F -> D; gated: the non-linearity of a second
    expansion (the gate) multiplies the first one before the contraction."""

    def __init__(
        self,
        width: int,
        ff_width: int,
        activation: Activation = "gelu",
        *,
        gated: bool = False,
        bias: bool = True,
    ):
        super().__init__()
        self.activation_name = activation
        self.gate = nn.Linear(width, ff_width, bias=bias) if gated else None
        self.expand = nn.Linear(width, ff_width, bias=bias)
        self.contract = nn.Linear(ff_width, width, bias=bias)

    def forward(self, hidden: Tensor, trace: bool = False) -> tuple[Tensor, FeedForwardTrace | None]:
        """(B, T, D) -> (B, T, D), plus the hidden activations when trace=True."""
        nonlinearity = ACTIVATIONS[self.activation_name]
        preactivation = self.expand(hidden)  # (B, T, F)
        if self.gate is None:
            activation = nonlinearity(preactivation)  # (B, T, F)
            gate_preactivation = None
        else:
            gate_preactivation = self.gate(hidden)  # (B, T, F)
            activation = nonlinearity(gate_preactivation)
            activation *= preactivation  # the gate scales each unit (in place: one (B, T, F) buffer fewer)
        output = self.contract(activation)  # (B, T, D); the block applies dropout, as to every sublayer's output
        if not trace:
            return output, None
        # Nothing of width F is kept: the trace recomputes it from the input (see FeedForwardTrace).
        return output, FeedForwardTrace(hidden, self.expand, self.contract, nonlinearity, self.gate)

"""The key/value cache: what a decoder remembers of the tokens it has already read.

Generating text one token at a time, a decoder would recompute the keys and values of the whole prefix at
every step, although they never change: a causal mask means no token is affected by what comes after it. A
cache keeps them. Each step then feeds only the newest token, whose query attends to the cached keys.

The cache is an object the caller creates and passes in, one per sequence being generated; the model keeps
nothing between calls, so one model object can serve any number of conversations at once.
"""

from __future__ import annotations

import torch
from torch import Tensor


class LayerCache:
    """One attention layer's keys and values so far, (B, H_kv, S, d_head) each, keys already rotated."""

    def __init__(self) -> None:
        self.keys: Tensor | None = None
        self.values: Tensor | None = None

    @property
    def length(self) -> int:
        """S: how many positions are cached."""
        return 0 if self.keys is None else self.keys.size(2)

    def extend(self, keys: Tensor, values: Tensor) -> tuple[Tensor, Tensor]:
        """Append this call's keys and values (B, H_kv, T, d_head); return all of them (B, H_kv, S + T, d_head)."""
        if self.keys is None or self.values is None:
            self.keys, self.values = keys, values
        else:
            self.keys = torch.cat((self.keys, keys), dim=2)
            self.values = torch.cat((self.values, values), dim=2)
        return self.keys, self.values


class KVCache:
    """Every layer's `LayerCache` for one batch of sequences."""

    def __init__(self, num_layers: int) -> None:
        self.layers = [LayerCache() for _ in range(num_layers)]

    @property
    def length(self) -> int:
        """How many positions the model has read so far: the position of the next token."""
        return self.layers[0].length

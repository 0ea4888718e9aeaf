"""Boolean attention masks. Everywhere in this package, True means "this query may attend to this key"."""

from __future__ import annotations

import torch
from torch import Tensor


def causal_mask(num_tokens: int, device: torch.device | str | None = None, num_cached: int = 0) -> Tensor:
    """(T, num_cached + T) lower-triangular mask: token t sees positions 0..t and nothing after it.

    A decoder is trained to predict token t+1 from tokens 0..t; without this mask it could simply read
    the answer one position to the right. After `num_cached` earlier tokens (a KV cache), the T new tokens sit
    at positions num_cached .. num_cached + T − 1 and may all read the cached ones.
    """
    return torch.ones(num_tokens, num_cached + num_tokens, dtype=torch.bool, device=device).tril(num_cached)


def padding_mask(attention_mask: Tensor) -> Tensor:
    """(B, 1, 1, S) mask from a tokenizer's (B, S) attention mask of 1s (real) and 0s (padding)."""
    return attention_mask.bool()[:, None, None, :]


def combine_masks(*masks: Tensor | None) -> Tensor | None:
    """Positions allowed by every given mask (None means "no restriction")."""
    present = [mask for mask in masks if mask is not None]
    if not present:
        return None
    combined = present[0]
    for mask in present[1:]:
        combined = combined & mask
    return combined

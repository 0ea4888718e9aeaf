"""Sinusoidal positional encoding, exactly as "Attention Is All You Need" defines it.

Component i of the encoding of position t is

    p_i(t) = sin(ω_i · t)       for even i
    p_i(t) = cos(ω_{i−1} · t)   for odd i,        with ω_k = base^(−k / d)  (base = 10 000)

so dimensions come in (sin, cos) pairs that share one frequency, from one cycle every 2π tokens in the
first pair down to one cycle every 2π·base tokens in the last. Every value lies in [−1, 1], no two positions
get the same vector, and nothing is learned: the same position always gets the same encoding.
"""

from __future__ import annotations

import torch
from torch import Tensor


def sinusoidal_positional_encoding(num_positions: int, width: int, base: float = 10_000.0) -> Tensor:
    """(T, D) matrix P whose row t encodes position t; the model adds it to the token embeddings."""
    if width < 1 or num_positions < 0:
        raise ValueError("width must be at least 1 and num_positions non-negative")
    positions = torch.arange(num_positions, dtype=torch.float64)[:, None]  # (T, 1)
    pair_starts = torch.arange(0, width, 2, dtype=torch.float64)  # k = 0, 2, 4, ...
    frequencies = base ** (-pair_starts / width)  # ω_k
    angles = positions * frequencies  # (T, ceil(D/2))
    encoding = torch.empty(num_positions, width, dtype=torch.float64)
    encoding[:, 0::2] = torch.sin(angles)  # even i: sin(ω_i t)
    encoding[:, 1::2] = torch.cos(angles[:, : width // 2])  # odd i: cos(ω_{i−1} t)
    return encoding.float()

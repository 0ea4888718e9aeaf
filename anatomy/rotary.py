"""Rotary position embeddings (RoPE): position enters attention as a rotation of the queries and keys.

Instead of adding a position vector to each token's embedding (BERT, GPT-2, the sinusoids of "Attention Is All
You Need"), a model with rotary embeddings ("RoFormer", Su et al., 2021; Llama, SmolLM2 and most models since)
turns every query and key by an angle that grows with the token's position. The coordinates of a head come in
pairs, and pair k turns by position · θ^(−2k/d_head): the first pairs spin fast, the last ones slowly, like the
sinusoids' fast and slow waves. Because a rotation by angle a followed by the transpose of a rotation by b is a
rotation by a − b, the dot product of a query at position m with a key at position n depends on m − n only:
attention sees how far apart two tokens are, not where they sit.

Which coordinates form a pair is a convention. This module follows Hugging Face's Llama: coordinate k of a head
is paired with coordinate k + d_head/2 (`rotate_half`: the head's first half against its second half).
llama.cpp pairs neighbours (2k, 2k + 1) instead; its GGUF files store W_Q and W_K with their rows reordered to
match, and `anatomy.checkpoints.gguf` puts them back.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor


def rotation_angles(positions: Tensor, head_width: int, theta: float) -> Tensor:
    """(T, d_head) the angle by which each coordinate of a query or key at each position turns.

    Pair k (coordinates k and k + d_head/2) turns by position · θ^(−2k/d_head); the angles are written twice,
    once for each half of the head, so that they line up with the coordinates they turn.
    """
    pair_starts = torch.arange(0, head_width, 2, dtype=torch.float32, device=positions.device)  # 0, 2, 4, ...
    frequencies = 1.0 / (theta ** (pair_starts / head_width))  # (d_head/2,)
    angles = positions.float()[:, None] * frequencies[None, :]  # (T, d_head/2)
    return torch.cat((angles, angles), dim=-1)  # (T, d_head)


def rotate_half(x: Tensor) -> Tensor:
    """(x1, x2) -> (−x2, x1) on the two halves of the last axis: every pair (k, k + d/2) turned by 90°."""
    first, second = x.chunk(2, dim=-1)
    return torch.cat((-second, first), dim=-1)


@dataclass(frozen=True)
class Rotation:
    """The cosines and sines (T, d_head) of the angles of T positions: all that turning a query or key needs.

    The angles depend on the positions alone, not on the layer, so a model computes them once per forward and
    every layer's queries and keys reuse them (as Hugging Face's Llama does).
    """

    cos: Tensor
    sin: Tensor

    @classmethod
    def at(cls, positions: Tensor, head_width: int, theta: float, dtype: torch.dtype = torch.float32) -> Rotation:
        angles = rotation_angles(positions, head_width, theta)  # (T, d_head)
        return cls(angles.cos().to(dtype), angles.sin().to(dtype))

    def apply(self, x: Tensor) -> Tensor:
        """Queries or keys (B, H, T, d_head) turned by the angles of their positions.

        x·cos + rotate_half(x)·sin is the 2-D rotation of every pair, written without building any matrix; the
        same operations in the same order as Hugging Face's Llama, so the numbers agree bit for bit.
        """
        return x * self.cos + rotate_half(x) * self.sin


def rotate(x: Tensor, positions: Tensor, theta: float) -> Tensor:
    """Queries or keys (B, H, T, d_head) turned by the angles of their positions (T,)."""
    return Rotation.at(positions, x.size(-1), theta, x.dtype).apply(x)

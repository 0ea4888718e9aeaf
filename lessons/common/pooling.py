"""Attention maps too large to draw cell by cell, shrunk by average pooling: each cell of the pooled map is the
mean of a block of neighbouring queries × keys, so that a long text's whole map fits on a screen while any one
block can still be opened at full resolution."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

# Maps of long inputs are shrunk to at most this many rows and columns before they are drawn.
MAX_MAP_SIZE = 64


@dataclass(frozen=True)
class PooledMap:
    """Attention maps averaged over blocks of neighbouring tokens, so that a long text fits on screen."""

    values: Tensor  # (..., T', S') each cell the mean of a block of the full map
    row_bins: tuple[tuple[int, int], ...]  # (start, stop) of the query tokens behind each row
    column_bins: tuple[tuple[int, int], ...]

    @property
    def row_block(self) -> int:
        """Tokens behind each row but perhaps the last, which may hold fewer."""
        start, stop = self.row_bins[0]
        return stop - start

    @property
    def pooled(self) -> bool:
        """True when blocks hold more than one token (the map is not the full map)."""
        return len(self.row_bins) < self.row_bins[-1][1] or len(self.column_bins) < self.column_bins[-1][1]


def average_pool(weights: Tensor, max_size: int = MAX_MAP_SIZE) -> PooledMap:
    """(..., T, S) -> at most (..., max_size, max_size): the mean of each block of
    ⌈T / max_size⌉ × ⌈S / max_size⌉ cells; the last block of a side may hold fewer tokens.

    Short inputs come back unchanged (blocks of one token).
    """
    queries, keys = weights.shape[-2:]
    row_block, column_block = math.ceil(queries / max_size), math.ceil(keys / max_size)
    row_bins, column_bins = _bins(queries, row_block), _bins(keys, column_block)
    # Pad with zeros to whole blocks, sum each block, then divide by how many real cells it held.
    padded = F.pad(weights, (0, len(column_bins) * column_block - keys, 0, len(row_bins) * row_block - queries))
    sums = padded.unflatten(-1, (len(column_bins), column_block)).sum(dim=-1)  # (..., T_pad, S')
    sums = sums.unflatten(-2, (len(row_bins), row_block)).sum(dim=-2)  # (..., T', S')
    row_counts = torch.tensor([stop - start for start, stop in row_bins], dtype=weights.dtype)
    column_counts = torch.tensor([stop - start for start, stop in column_bins], dtype=weights.dtype)
    counts = (row_counts.unsqueeze(1) * column_counts.unsqueeze(0)).to(weights.device)  # (T', S')
    return PooledMap(sums / counts, row_bins, column_bins)


def _bins(length: int, block: int) -> tuple[tuple[int, int], ...]:
    return tuple((start, min(start + block, length)) for start in range(0, length, block))


def bin_labels(bins: Sequence[tuple[int, int]]) -> list[str]:
    """Labels of pooled blocks of tokens: "0–7" for tokens 0 to 7."""
    return [f"{start}" if stop - start == 1 else f"{start}–{stop - 1}" for start, stop in bins]

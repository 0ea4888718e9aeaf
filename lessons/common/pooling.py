"""Attention maps too large to draw cell by cell, shrunk by average pooling: each cell of the pooled map is the
mean of a block of neighbouring queries × keys, so that a long text's whole map fits on a screen while any one
block can still be opened at full resolution.

Two ways to cut the tokens into blocks, one way to average them. Equal blocks (`equal_bins`: ⌈T / n⌉ tokens
each, the last perhaps fewer) keep block edges on round positions, for a map whose ticks name positions
(multi-head comparison, a long text in lesson 9). Balanced blocks (`balanced_bins`: sizes differ by at most
one) share the tokens out as evenly as possible, for the encoder's overview of every layer and head.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
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

    def on_cpu(self) -> PooledMap:
        """The same map with its values on the CPU, for a figure (pooling runs where the full map was made)."""
        return PooledMap(self.values.cpu(), self.row_bins, self.column_bins)

    @property
    def pooled(self) -> bool:
        """True when blocks hold more than one token (the map is not the full map)."""
        return len(self.row_bins) < self.row_bins[-1][1] or len(self.column_bins) < self.column_bins[-1][1]


def average_pool(weights: Tensor, max_size: int = MAX_MAP_SIZE, *, balanced: bool = False) -> PooledMap:
    """(..., T, S) -> at most (..., max_size, max_size): the mean of each block of queries × keys, the blocks
    cut by `equal_bins`, or by `balanced_bins` when `balanced`.

    Short inputs come back unchanged (blocks of one token).
    """
    queries, keys = weights.shape[-2:]
    cut = balanced_bins if balanced else equal_bins
    row_bins, column_bins = cut(queries, max_size), cut(keys, max_size)
    rows = pooling_matrix(row_bins, queries).to(weights.device, weights.dtype)  # (T', T)
    columns = pooling_matrix(column_bins, keys).to(weights.device, weights.dtype)  # (S', S)
    return PooledMap(rows @ weights @ columns.T, row_bins, column_bins)  # rows: mean over queries; columns: keys


def equal_bins(length: int, max_bins: int) -> tuple[tuple[int, int], ...]:
    """Positions 0..length-1 cut into runs [start, stop) of ⌈length / max_bins⌉ tokens; the last may hold fewer."""
    block = math.ceil(length / max_bins)
    return tuple((start, min(start + block, length)) for start in range(0, length, block))


def balanced_bins(length: int, max_bins: int) -> tuple[tuple[int, int], ...]:
    """Positions 0..length-1 cut into at most `max_bins` runs [start, stop) whose lengths differ by at most one
    (one token each when the text is short enough)."""
    count = min(length, max_bins)
    edges = [index * length // count for index in range(count + 1)]
    return tuple(zip(edges[:-1], edges[1:]))


def pooling_matrix(bins: Sequence[tuple[int, int]], length: int) -> Tensor:
    """(n, length) row i holds 1 / |bin i| on the tokens of bin i: multiplying by it averages each bin."""
    matrix = torch.zeros(len(bins), length)
    for row, (start, stop) in enumerate(bins):
        matrix[row, start:stop] = 1 / (stop - start)
    return matrix


def bin_labels(bins: Sequence[tuple[int, int]]) -> list[str]:
    """Labels of pooled blocks of tokens: "0–7" for tokens 0 to 7."""
    return [f"{start}" if stop - start == 1 else f"{start}–{stop - 1}" for start, stop in bins]

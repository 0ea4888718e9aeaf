"""Which tokens a matrix shows of a long text: a window of consecutive positions, and the matrix cut to it.

A 48 × 48 grid of attention weights is still readable; a 512 × 512 one is not. Every lesson that draws a token
matrix shows a long text through a window that the learner slides along it.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

FOCUS_WINDOW = 48  # tokens shown at once


def focus_window(length: int, start: int, size: int = FOCUS_WINDOW) -> range:
    """The positions shown of a `length`-token text: `size` consecutive tokens from `start`, kept inside the text
    (a start too far right slides back so that the window stays full; a short text is shown whole)."""
    start = min(max(start, 0), max(length - size, 0))
    return range(start, min(start + size, length))


def centred_window(length: int, centre: int, size: int = FOCUS_WINDOW) -> range:
    """The same window, centred on the position `centre` where the text allows."""
    return focus_window(length, centre - size // 2, size)


def crop(matrix: Tensor, rows: Sequence[int], columns: Sequence[int]) -> Tensor:
    """The sub-matrix at the given row and column positions (keeps −∞ and exact zeros as they are)."""
    row_index = torch.as_tensor(list(rows), dtype=torch.long, device=matrix.device)
    column_index = torch.as_tensor(list(columns), dtype=torch.long, device=matrix.device)
    return matrix.index_select(0, row_index).index_select(1, column_index)

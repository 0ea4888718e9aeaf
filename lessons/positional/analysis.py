"""Measuring a table of position vectors, sinusoidal or learned.

"Attention Is All You Need" asks three things of a positional encoding: its values stay bounded (so they
never drown the token embeddings they are added to), every position gets its own vector (so the model can
tell them apart), and the same position always gets the same vector. This module computes each of those
on an actual (T, D) table instead of taking them on trust, and measures how alike two positions are,
which for the sinusoidal table depends on their distance |p − q| alone.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor

Similarity = Literal["cosine", "dot"]

# The settings the positional page accepts: d = 1 would leave a single sine, and past 1024 the
# table stops being something a browser can draw.
MIN_WIDTH, MAX_WIDTH = 2, 1024
# Distances this close (relatively) count as equal: storing a table in float32 alone moves equal
# distances about 1e-7 apart.
TIE_TOLERANCE = 1e-6


def learned_position_table(model) -> Tensor | None:
    """(max_positions, D) the position vectors a model learned in training (BERT, GPT-2), on the CPU, or
    None for a model that learned no table (sinusoidal or rotary positions). On a CPU model it shares the
    weight's memory: read it, never write to it."""
    position = getattr(model.embeddings, "position", None)
    return None if position is None else position.weight.detach().cpu()


def width_is_usable(width: int) -> bool:
    """Whole sine/cosine pairs only, as in the paper: at an odd width the last sine has no cosine, so rows
    differ in length and their similarity no longer depends on the distance alone."""
    return MIN_WIDTH <= width <= MAX_WIDTH and width % 2 == 0


def base_is_usable(base: float) -> bool:
    # ω_k = base^(−k/d): base = 1 gives every pair the same frequency, and base < 1 turns the order
    # around, so the last pairs spin faster than a radian per position and alias at whole positions.
    return math.isfinite(base) and base > 1


def encoding_settings_problem(width: int, base: float) -> str | None:
    """Why (width, base) cannot make a sinusoidal encoding worth studying, or None when they can."""
    if not width_is_usable(width):
        return (
            f"The width d must be an even whole number from {MIN_WIDTH} to {MAX_WIDTH}, one sine and one cosine "
            f"for each frequency (got {width})."
        )
    if not base_is_usable(base):
        return f"The base must be a finite number greater than 1 (got {base:g})."
    return None


def default_curve_dimensions(width: int) -> list[int]:
    """The first sine/cosine pair, then the sines at about d/8, d/4 and d/2: fast, middling and slow waves."""
    picks = {0, 1} | {2 * (width // (2 * share)) for share in (8, 4, 2)}
    return sorted(index for index in picks if index < width)


def slowest_period(width: int, base: float) -> float:
    """Positions per full turn of the last sine/cosine pair, 2π / ω_k with k the last even index below d:
    2π·base^((d−2)/d) for an even d, under 2π·base and closer to it the wider the table (three quarters of it at
    d = 64 and base 10000), the span over which the slowest "clock hand" goes round once."""
    last_pair_start = 2 * ((width - 1) // 2)
    return 2 * math.pi * base ** (last_pair_start / width)


def similarity_matrix(encoding: Tensor, measure: Similarity = "cosine") -> Tensor:
    """(T, T) how alike every pair of positions is: plain dot products, or cosines of the angle between rows."""
    rows = encoding.double()
    if measure == "cosine":
        rows = torch.nn.functional.normalize(rows, dim=1)
    elif measure != "dot":
        raise ValueError(f"unknown similarity measure {measure!r}; use 'cosine' or 'dot'")
    return rows @ rows.T  # (T, T)


@dataclass(frozen=True)
class OffsetProfile:
    """Similarity of all pairs (t, t + offset), summarised per offset = 0, 1, ..., T − 1."""

    mean: Tensor  # (T,)
    lowest: Tensor  # (T,)
    highest: Tensor  # (T,)

    @property
    def largest_spread(self) -> float:
        """How far apart two pairs at the same distance can be: 0 when similarity depends on |p − q| only."""
        return float((self.highest - self.lowest).max())


def offset_profile(similarities: Tensor) -> OffsetProfile:
    """Group a symmetric (T, T) similarity matrix by distance: its diagonal number k holds every pair
    (t, t + k), so a matrix that depends only on |p − q| is constant along each diagonal."""
    diagonals = [similarities.diagonal(offset) for offset in range(similarities.size(0))]
    return OffsetProfile(
        mean=torch.stack([diagonal.mean() for diagonal in diagonals]),
        lowest=torch.stack([diagonal.min() for diagonal in diagonals]),
        highest=torch.stack([diagonal.max() for diagonal in diagonals]),
    )


@dataclass(frozen=True)
class EncodingProperties:
    """The paper's wishes, measured on one (T, D) table."""

    num_positions: int
    width: int
    largest_magnitude: float  # max |value|: bounded in [−1, 1] means at most 1
    closest_distance: float  # smallest distance between two rows: above 0, all rows unique
    closest_pair: tuple[int, int] | None  # earliest pair that close (within TIE_TOLERANCE); None if T < 2

    @property
    def bounded_by_one(self) -> bool:
        return self.largest_magnitude <= 1.0

    @property
    def rows_unique(self) -> bool:
        return self.closest_distance > 0


def describe_encoding(encoding: Tensor) -> EncodingProperties:
    """The paper's two wishes, measured on a (T, D) position table: how large its values get, and how close
    its two nearest rows come (two equal rows would give two positions the same vector)."""
    rows = encoding.double()  # float64: a near miss of 0.001 between two rows is not lost to rounding
    num_positions, width = rows.shape
    if num_positions < 2:
        return EncodingProperties(num_positions, width, _largest_magnitude(rows), math.inf, closest_pair=None)
    # |row p − row q| for every pair, from the differences themselves (torch's faster route through
    # |a|² + |b|² − 2 a·b can round two equal rows to a small positive distance).
    distances = torch.cdist(rows, rows, compute_mode="donot_use_mm_for_euclid_dist")  # (T, T)
    distances[torch.ones_like(distances, dtype=torch.bool).tril()] = math.inf  # each pair once, p < q
    closest = float(distances.min())
    # Ties go to the earliest pair: in a sinusoidal table every pair of neighbours is equally close, and
    # (0, 1) says so better than whichever pair rounding happened to favour.
    first, second = (distances <= closest * (1 + TIE_TOLERANCE)).nonzero()[0].tolist()
    return EncodingProperties(num_positions, width, _largest_magnitude(rows), closest, closest_pair=(first, second))


def _largest_magnitude(rows: Tensor) -> float:
    return float(rows.abs().max()) if rows.numel() else 0.0


def rebuilds_identically(build: Callable[[], Tensor]) -> bool:
    """Whether building the table twice gives the same numbers, bit for bit (no randomness, no state)."""
    return torch.equal(build(), build())


@dataclass(frozen=True)
class TableStudy:
    """Everything the positional page shows about one position table."""

    table: Tensor  # (T, D) the position vectors
    similarities: Tensor  # (T, T) similarity of every pair of positions
    by_offset: OffsetProfile  # those similarities grouped by distance
    properties: EncodingProperties  # bounded? unique?


def study_table(table: Tensor, measure: Similarity = "cosine") -> TableStudy:
    similarities = similarity_matrix(table, measure)
    return TableStudy(table, similarities, offset_profile(similarities), describe_encoding(table))


def similarities_with(position: int, studies: dict[str, TableStudy]) -> dict[str, Tensor]:
    """(T,) row `position` of each table's similarity matrix, by table name (a learned table shorter than
    that has none)."""
    return {name: study.similarities[position] for name, study in studies.items() if position < len(study.table)}
